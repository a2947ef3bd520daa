package intercept

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestCallPasses: Call names, each once and in the order they first saw
// the call, the interceptors that ran a hook at it and changed nothing:
// not one that denied, replaced the result or failed open, not one the
// walk never reached (after a deny), not one out of the call's scope; and
// a call that the server fails still names those that let it through.
func TestCallPasses(t *testing.T) {
	e := engine(t, `{"interceptors":[
		{"name":"roomy","type":"sizeGuard","maxArgumentBytes":100000,"maxResultBytes":100000},
		{"name":"shy","type":"exec","command":"exit 3","hooks":["before"],"failOpen":true,"tools":["flaky"]},
		{"name":"strict","type":"sizeGuard","maxArgumentBytes":40},
		{"name":"after-only","type":"exec","command":"true","hooks":["after"]},
		{"name":"trim","type":"sizeGuard","maxResultBytes":30,"tools":["big"]},
		{"name":"elsewhere","type":"sizeGuard","maxArgumentBytes":1,"servers":["other"]}]}`, nil)
	failing := func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, errors.New("server down") }
	flaky := call("x")
	flaky.Tool = "flaky"
	big := call("x")
	big.Tool = "big"
	for _, c := range []struct {
		name         string
		call         *Call
		next         Next
		trace, wants string
	}{
		{"short", call("hi"), (&upstream{}).next, "", "roomy,strict,after-only"},
		{"long", call(strings.Repeat("x", 50)), (&upstream{}).next, "strict:deny", "roomy"},
		{"server fails", call("hi"), failing, "", "roomy,strict"},
		{"failed open", flaky, (&upstream{}).next, "shy:failed-open", "roomy,strict,after-only"},
		{"replaced", big, (&upstream{}).next, "trim:replace", "roomy,strict,after-only"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, trace, passed, _ := e.Call(context.Background(), c.call, c.next)
			if got := strings.Join(trace, ","); got != c.trace {
				t.Errorf("trace %q, want %q", got, c.trace)
			}
			if got := strings.Join(passed, ","); got != c.wants {
				t.Errorf("passed %q, want %q", got, c.wants)
			}
		})
	}
}
