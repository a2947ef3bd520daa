package aggregate

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"
)

// TestTaskAugmented: a server's request runs as a task on the agent
// (askTask) when its params carry a task object, not when the member is
// absent or null, or the params are not an object.
func TestTaskAugmented(t *testing.T) {
	for params, want := range map[string]bool{
		`{"messages":[],"task":{"ttl":60000}}`: true,
		`{"task":{}}`:                          true,
		`{"messages":[]}`:                      false,
		`{"task":null}`:                        false,
		`[1]`:                                  false,
	} {
		if got := taskAugmented(json.RawMessage(params)); got != want {
			t.Errorf("taskAugmented(%s) = %v, want %v", params, got, want)
		}
	}
}

// TestTTLOf: a task's ttl in milliseconds becomes the time the gateway
// keeps the task; absent, zero, negative or too large for a duration
// (which would overflow) is none.
func TestTTLOf(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		ms   *float64
		want time.Duration
	}{
		{nil, 0},
		{ms(0), 0},
		{ms(-5), 0},
		{ms(1), time.Millisecond},
		{ms(1500), 1500 * time.Millisecond},
		{ms(60000), time.Minute},
		{ms(1e300), 0},
		{ms(float64(math.MaxInt64)), 0},
	} {
		if got := ttlOf(c.ms); got != c.want {
			v := "nil"
			if c.ms != nil {
				v = fmt.Sprint(*c.ms)
			}
			t.Errorf("ttlOf(%s ms) = %v, want %v", v, got, c.want)
		}
	}
}
