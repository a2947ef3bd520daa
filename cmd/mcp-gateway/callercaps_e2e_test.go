package main

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestCallerCapabilitiesTo2026Server: a 2026-only server (the TypeScript SDK v2 with legacy: 'reject', as a url)
// sees each agent's own client capabilities, not the gateway's: its ask tool with a URL elicitation is refused
// (-32021) for an agent that did not declare URL elicitation and completes for one that did, for agents of both
// eras side by side on one gateway. The 2025 agent's refusal is the server's (the gateway passes its capabilities
// from its initialize), told in 2025 terms: an isError tool result.
func TestCallerCapabilitiesTo2026Server(t *testing.T) {
	ts := tsHarness(t)
	sb := newTestbox(t)
	sb.mustLaunch(mcpConfig(t, map[string]any{"v2": map[string]any{"url": startV2HTTPServer(t, ts, "--legacy=reject")}}))
	formOnly := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}
	withURL := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}}
	// A new params value per call: the Go SDK's client writes its _meta (the caller's capabilities) into it.
	askURL := func() *mcp.CallToolParams {
		return &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"kinds": []string{"url"}}}
	}

	t.Run("2026 agents", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var askedA, askedB atomic.Int32
		a := statelessAgent(t, ctx, sb, formOnly, &askedA)
		b := statelessAgent(t, ctx, sb, withURL, &askedB)
		res, err := a.CallTool(ctx, askURL())
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != mcp.CodeMissingRequiredClientCapabilities {
			t.Fatalf("agent A (no URL elicitation) ask url: want -32021, got %+v %v\nlog:\n%s", res, err, sb.log())
		}
		if n := askedA.Load(); n != 0 {
			t.Errorf("agent A was asked %d URL elicitations", n)
		}
		res, err = b.CallTool(ctx, askURL())
		if err != nil || res.IsError || !strings.Contains(text(t, res), "accept") {
			t.Fatalf("agent B (URL elicitation) ask url: %+v %v\nlog:\n%s", res, err, sb.log())
		}
		if n := askedB.Load(); n != 1 {
			t.Errorf("agent B was asked %d URL elicitations, want 1", n)
		}
	})

	t.Run("2025 agents", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var a, b legacyAgent
		csA := a.connect(t, ctx, sb, formOnly)
		csB := b.connect(t, ctx, sb, withURL)
		res, err := csA.CallTool(ctx, askURL())
		if err != nil || !res.IsError || !strings.Contains(text(t, res), "the server needs a capability this client did not declare") {
			t.Fatalf("agent A (no URL elicitation) ask url: want the server's refusal as an isError result, got %+v %v\nlog:\n%s", res, err, sb.log())
		}
		if n := a.asks("url"); n != 0 {
			t.Errorf("agent A was asked %d URL elicitations", n)
		}
		res, err = csB.CallTool(ctx, askURL())
		if err != nil || res.IsError || !strings.Contains(text(t, res), "accept") {
			t.Fatalf("agent B (URL elicitation) ask url: %+v %v\nlog:\n%s", res, err, sb.log())
		}
		if n := b.asks("url"); n != 1 {
			t.Errorf("agent B was asked %d URL elicitations, want 1", n)
		}
	})
}

// statelessAgent connects a Go SDK client in its default mode (2026-07-28 with the gateway: no session, each
// request's _meta declares caps) that answers URL elicitations, counting them in asked.
func statelessAgent(t *testing.T, ctx context.Context, sb *testbox, caps *mcp.ClientCapabilities, asked *atomic.Int32) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "stateless-agent", Version: "1"}, &mcp.ClientOptions{
		Capabilities: caps,
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if req.Params.Mode == "url" {
				asked.Add(1)
			}
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	tr := &mcp.StreamableClientTransport{
		Endpoint:   sb.url() + "/mcp",
		HTTPClient: &http.Client{Transport: fixture.Bearer(sb.token, http.DefaultTransport)},
	}
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect to gateway: %v\nlog:\n%s", err, sb.log())
	}
	t.Cleanup(func() { cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v < "2026-07-28" {
		t.Fatalf("the client negotiated %s, want 2026-07-28", v)
	}
	return cs
}
