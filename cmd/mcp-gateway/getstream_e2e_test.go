package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestTSClientIdleStreamKept: the TypeScript SDK client's standalone GET
// stream, idle for three times its HTTP client's body timeout (Node's 300 s,
// shortened to 2 s here, as the gateway's keep-alive is to 500 ms), is not
// dropped: the client sees no transport error, and the server's
// list_changed still reaches it on that stream.
func TestTSClientIdleStreamKept(t *testing.T) {
	ts := tsHarness(t)
	sb := newTestbox(t)
	r := sb.launch(mcpConfig(t, map[string]any{
		"fx": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "fx", Tools: fixture.ProtocolTools()})},
	}), "--stream-keepalive", "500ms")
	if r.code != 0 {
		t.Fatalf("launch exited %d: %s%s", r.code, r.stdout, r.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(ts, "idlestream.mjs"), sb.url()+"/mcp", sb.token, "6000", "2000")
	cmd.Dir = ts
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("idlestream.mjs: %v: %s", err, ee.Stderr)
	} else if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Errors      []string `json:"errors"`
		ListChanged bool     `json:"listChanged"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("idlestream.mjs printed %q: %v", out, err)
	}
	if len(got.Errors) > 0 || !got.ListChanged {
		t.Errorf("the idle stream: errors %q, list_changed %v; want none and true", got.Errors, got.ListChanged)
	}
}
