package catalog

import (
	"strings"
	"testing"
)

// x-protocol pins a server of any kind to the 2025 era, is not warned about
// as an unknown field, and takes that one value only.
func TestProtocolKey(t *testing.T) {
	cat := embeddedCatalog(t)
	r := resolveOK(t, cat, ResolveOptions{LookPath: allFound}, `{
		"local": {"runCmd": "srv", "x-protocol": "2025-11-25"},
		"time": {"x-protocol": "2025-11-25"},
		"remote": {"url": "https://example.com/mcp", "x-protocol": "2025-11-25"},
		"plain": {"runCmd": "srv"}
	}`)
	want := map[string]string{"local": Protocol2025, "time": Protocol2025, "remote": Protocol2025, "plain": ""}
	for _, s := range r.Servers {
		if s.Protocol != want[s.Name] {
			t.Errorf("%s: protocol %q, want %q", s.Name, s.Protocol, want[s.Name])
		}
	}
	for _, w := range r.Warnings {
		if strings.Contains(w, ProtocolKey) {
			t.Errorf("x-protocol warned about as unknown: %s", w)
		}
	}
	for _, config := range []string{
		`{"x": {"runCmd": "s", "x-protocol": "2026-07-28"}}`,
		`{"x": {"runCmd": "s", "x-protocol": "2025"}}`,
		`{"x": {"runCmd": "s", "x-protocol": ["2025-11-25"]}}`,
		`{"x": {"runCmd": "s", "x-protocol": null}}`,
	} {
		_, err := Resolve([]byte(config), cat, ResolveOptions{LookPath: allFound})
		if err == nil || !strings.Contains(err.Error(), `server "x": x-protocol: must be "2025-11-25"`) {
			t.Errorf("%s: error %v, want x-protocol refused", config, err)
		}
	}
}
