package pluginhost

import (
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/pluginwire"
)

// BenchmarkHostCall is one hook relayed by the host (in this process) to
// the test plugin and back, one call at a time.
func BenchmarkHostCall(b *testing.B) {
	h := startHost(b, testPlugin(b))
	doc := before("hello")
	b.ResetTimer()
	for i := range b.N {
		h.send(pluginwire.Call{ID: uint64(i + 1), TimeoutMs: 5000, Doc: doc})
		if m := h.next(); m.ID != uint64(i+1) {
			b.Fatalf("reply %+v", m)
		}
	}
}
