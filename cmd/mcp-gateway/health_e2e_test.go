package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHealthOfASickRemote: through the binary, with --probe-interval
// 300ms, /health says a remote is degraded, with its error, while it
// answers 500 to every request and while it hangs every request, ready
// again once it answers, and no longer ready once it is gone.
func TestHealthOfASickRemote(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "sick", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct{ Text string }) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	const (
		healthy = iota
		fails   // 500 to every POST
		hangs   // every POST waits until its client gives up
	)
	var mode atomic.Int32
	released := make(chan struct{}) // ends the hung requests
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost {
			switch mode.Load() {
			case fails:
				http.Error(w, "internal error", http.StatusInternalServerError)
				return
			case hangs:
				select {
				case <-req.Context().Done():
				case <-released:
				}
				return
			}
		}
		sdk.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close) // after the gateway's stop (cleanups run last first): it holds a stream open
	sb := newTestbox(t)
	r := sb.launch(mcpConfig(t, map[string]any{"r": map[string]any{"url": srv.URL}}), "--probe-interval", "300ms")
	if r.code != 0 {
		t.Fatalf("launch exited %d: %s", r.code, r.stderr)
	}
	await := func(what string, ok func(state, lastError string) bool) {
		t.Helper()
		waitFor(t, 30*time.Second, what, func() bool {
			_, s := sb.serverHealth("r")
			return ok(s.State, s.LastError)
		})
	}
	ready := func(state, _ string) bool { return state == "ready" }
	await("the remote ready", ready)

	mode.Store(fails)
	await("the remote answering 500 degraded, saying 500", func(state, lastError string) bool {
		return state == "degraded" && strings.Contains(lastError, "500")
	})
	mode.Store(healthy)
	await("the remote ready again", ready)

	mode.Store(hangs)
	await("the hanging remote degraded", func(state, lastError string) bool { return state == "degraded" && lastError != "" })
	mode.Store(healthy)
	close(released)
	await("the remote ready after hanging", ready)

	srv.CloseClientConnections()
	srv.Listener.Close() // gone: connections refused
	await("the gone remote no longer ready", func(state, lastError string) bool { return state != "ready" && lastError != "" })
	if status, h := sb.health(); status != http.StatusOK && h.Status == "" {
		t.Errorf("/health answered %d %+v", status, h)
	}
}
