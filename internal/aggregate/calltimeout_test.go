package aggregate_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestCallTimeoutEndsAQuietCall: a call whose stdio server never answers
// ends with the gateway's timeout error naming the server, and the server
// is told to stop (it logs the cancellation); a call that runs for several
// timeouts but sends progress well inside each is not cut off.
func TestCallTimeoutEndsAQuietCall(t *testing.T) {
	t.Parallel() // it waits out timers; the rest of the package need not wait
	const timeout = 2 * time.Second
	url, log, _ := startGatewayOpts(t, map[string]fixture.Options{"a": {}}, aggregate.Options{CallTimeout: timeout})
	cs := connect(t, url, nil)
	ctx := ctxT(t)

	// 25 s: without the timeout the call ends with the sleep's answer,
	// inside the test's context.
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 25000}})
	var wire *jsonrpc.Error
	if !errors.As(err, &wire) || wire.Code != aggregate.CodeCallTimeout ||
		!strings.Contains(wire.Message, `server "a"`) || !strings.Contains(wire.Message, timeout.String()) {
		t.Fatalf("a hung call ended with %v; want code %d naming server \"a\" and %s", err, aggregate.CodeCallTimeout, timeout)
	}
	waitFor(t, "the server to see the cancellation", func() bool { return strings.Contains(log.String(), "fixture: sleep cancelled") })

	// 10 steps 300 ms apart: 2.7 s in all, longer than the timeout, with
	// progress every 300 ms.
	params := &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{"steps": 10, "delayMs": 300}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("a call sending progress within the timeout was cut off: %v", err)
	}
	if txt := textOf(t, res); txt != "done 10" {
		t.Errorf("progress call answered %q", txt)
	}
}
