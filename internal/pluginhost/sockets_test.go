package pluginhost

import (
	"os"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/pluginwire"
)

// TestCrashedPluginLeavesNoSocket: a plugin that dies without closing its
// listener leaves no unix socket in TMPDIR (go-plugin's /tmp/pluginNNN).
func TestCrashedPluginLeavesNoSocket(t *testing.T) {
	bin := testPlugin(t) // built before TMPDIR changes
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	h := startHost(t, bin)
	h.send(pluginwire.Call{ID: 1, Doc: before("crash")})
	if m := h.next(); m.Exited == "" {
		t.Fatalf("message %+v, want the plugin's exit", m)
	}
	<-h.done
	h.done <- nil // for the cleanup
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range left {
		t.Errorf("left in TMPDIR after the plugin crashed: %s", f.Name())
	}
}
