package intercept

import (
	"context"
	"os"
	"testing"
)

// TestPluginKilledAtTimeoutLeavesNoSocket: go-plugin's unix sockets (and
// the directory they are made in) are gone once the engine is closed, for
// a plugin killed at its timeout as for one stopped gracefully.
func TestPluginKilledAtTimeoutLeavesNoSocket(t *testing.T) {
	tmp := t.TempDir()
	e := engine(t, pluginConfig(testPluginBin(t), `,"failOpen":true,"timeout":"300ms"`), nil, "TMPDIR="+tmp)
	for _, text := range []string{"hang", "fine"} { // killed at its timeout, then restarted
		if _, _, _, err := e.Call(context.Background(), call(text), (&upstream{}).next); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
	}
	e.Close()
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range left {
		t.Errorf("left in TMPDIR after the engine closed: %s", f.Name())
	}
}
