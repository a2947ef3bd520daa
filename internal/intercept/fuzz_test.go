package intercept

import (
	"errors"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/interceptor/contract"
)

// FuzzInterceptorInput feeds arbitrary bytes to what reads outside input:
// the config file (Parse) and an interceptor's answer (decode and the
// checks after it). Neither may panic; a config is either valid or an
// ErrInvalidConfig, and an accepted answer passes the hook's checks.
func FuzzInterceptorInput(f *testing.F) {
	for _, s := range []string{
		`{"interceptors":[{"name":"s","type":"sizeGuard","maxResultBytes":5}]}`,
		`{"interceptors":[{"name":"x","type":"exec","command":"true","hooks":["before","tools"],"timeout":"1s"}]}`,
		`{"action":"rewrite","arguments":{"a":1}}`,
		`{"content":[{"type":"text","text":"x"}]}`,
		`{"hide":["a"]}`,
		``, `null`, `[]`, `{"action":"respond","result":{"content":null}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := Parse(b); err != nil && !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("Parse error outside ErrInvalidConfig: %v", err)
		}
		for _, hook := range []contract.Hook{contract.HookBefore, contract.HookAfter, contract.HookTools} {
			d, err := decode(b, hook)
			if err != nil {
				continue
			}
			switch hook {
			case contract.HookBefore:
				if checkBefore(&d) == nil && d.Action == contract.ActionRewrite && compact(d.Arguments)[0] != '{' {
					t.Fatalf("rewrite accepted non-object arguments %q", d.Arguments)
				}
			case contract.HookAfter:
				_ = checkAfter(&d)
			}
		}
	})
}
