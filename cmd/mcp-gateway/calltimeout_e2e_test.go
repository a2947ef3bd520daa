package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestCallTimeout: with --call-timeout 2s, a remote that hangs a call (it
// sent one progress notification, then nothing) and a stdio server that
// does are each given up on with an error that names the server and the
// wait, and a stdio call that runs longer than the timeout while sending
// progress every 300 ms is answered.
func TestCallTimeout(t *testing.T) {
	rem := fixture.StartRemote(t, fixture.RemoteOptions{Token: "rk", Linger: true})
	sb := newTestbox(t)
	r := sb.launch(mcpConfig(t, map[string]any{
		"a": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "a", Tools: []string{"sleep", "progress"}})},
		"r": map[string]any{"url": rem.URL(), "headers": map[string]string{"Authorization": "Bearer rk"}},
	}), "--call-timeout", "2s")
	if r.code != 0 {
		t.Fatalf("launch exited %d: %s%s", r.code, r.stdout, r.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := sb.connect(ctx, nil)

	timedOut := func(err error, server string) {
		t.Helper()
		var wire *jsonrpc.Error
		if !errors.As(err, &wire) || wire.Code != -32001 || !strings.Contains(wire.Message, `server "`+server+`"`) ||
			!strings.Contains(wire.Message, "2s") {
			t.Errorf("call to %s ended with %v; want -32001 naming it and the 2s wait", server, err)
		}
	}
	linger := &mcp.CallToolParams{Name: "linger", Arguments: map[string]any{}}
	linger.SetProgressToken("l1")
	// linger waits for a cancellation: without the timeout, the call ends
	// only with lingerCtx.
	lingerCtx, stop := context.WithTimeout(ctx, 20*time.Second)
	_, err := cs.CallTool(lingerCtx, linger)
	stop()
	timedOut(err, "r")
	// 25 s: without the timeout the call ends with the sleep's answer.
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 25000}})
	timedOut(err, "a")

	progress := &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{"steps": 10, "delayMs": 300}}
	progress.SetProgressToken("p1")
	res, err := cs.CallTool(ctx, progress)
	if err != nil {
		t.Fatalf("a call sending progress every 300 ms was cut off: %v", err)
	}
	if got := text(t, res); got != "done 10" {
		t.Errorf("progress answered %q", got)
	}
}
