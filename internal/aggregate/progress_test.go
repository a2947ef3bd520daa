package aggregate

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProgressTokensDistinct: the tokens the gateway sends upstream in
// place of the agents' are distinct however the calls that mint them
// interleave, on the SDK path (forward) and the raw path (forwardRaw), so
// that two calls in flight never share one (the second would take the
// first's progress, and the first's release would drop the second's
// route).
func TestProgressTokensDistinct(t *testing.T) {
	p := newProgressMap()
	seen := map[string]int{}
	mint := func(i int, raw bool) {
		var mine string
		if raw {
			mine = p.forwardRaw(json.RawMessage(`1`), nil)
		} else {
			m, _ := p.forward(mcp.Meta{progressKey: 1}, nil)[progressKey].(string)
			mine = m
		}
		if j, ok := seen[mine]; ok {
			t.Errorf("call %d got token %q, as call %d did", i, mine, j)
		}
		seen[mine] = i
	}
	for i, raw := range []bool{false, true, false, true, true, false, false} {
		mint(i, raw)
	}
	if len(p.m) != len(seen) {
		t.Errorf("%d routes kept for %d calls in flight", len(p.m), len(seen))
	}
}
