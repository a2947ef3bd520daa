package aggregate_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/supervisor"
)

// startV2Gateway serves the merged server of one upstream, the TypeScript SDK v2 test server in its 2026-only
// mode (test/ts/v2server.mjs --legacy=reject), through the SDK's own streamable handler: requests take the
// aggregate's SDK path, not the endpoint's raw one. It skips without node or test/ts's node_modules.
func startV2Gateway(t *testing.T) string {
	t.Helper()
	ts := tsDir(t)
	log := &logs{}
	logger := zerolog.New(log)
	g := aggregate.New(aggregate.Options{Logger: logger})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	spec := catalog.ServerSpec{Name: "v2", Kind: catalog.KindLocal, Command: []string{"node", filepath.Join(ts, "v2server.mjs"), "--legacy=reject"}}
	s := supervisor.New(spec, supervisor.Options{
		Logger:       logger,
		NewClient:    g.NewClient,
		Intercept:    g.Intercept,
		ServeRequest: g.ServeRequest,
		OnReady: func(ctx context.Context, s *supervisor.Server, cs *mcp.ClientSession, raw supervisor.RoundTrip) error {
			return g.Sync(ctx, s.Name(), cs, raw)
		},
	})
	g.Add(s)
	wg.Go(func() { s.Run(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	if err := s.WaitStarted(ctx); err != nil {
		t.Fatalf("start v2server: %v\nlog:\n%s", err, log)
	}
	return serveGateway(t, g)
}

// tsDir is test/ts, where the TypeScript SDK's test servers are; it skips
// the test without node or test/ts's node_modules.
func tsDir(t *testing.T) string {
	t.Helper()
	ts, err := filepath.Abs(filepath.Join("..", "..", "test", "ts"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ts, "node_modules", "@modelcontextprotocol", "server")); err != nil {
		t.Skip("test/ts/node_modules not installed; run 'npm ci' in test/ts")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed")
	}
	return ts
}

// serveGateway opens g and serves it over HTTP through the SDK's own
// streamable handler (the aggregate's SDK path, not the endpoint's raw
// one) until the test ends, when its sessions are closed before the
// server. Cleanups registered before it run after it.
func serveGateway(t *testing.T, g *aggregate.Gateway) string {
	t.Helper()
	g.Open()
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.Server() }, nil))
	t.Cleanup(func() {
		for ss := range g.Server().Sessions() {
			ss.Close()
		}
		srv.Close()
	})
	return srv.URL
}

// TestLegacyShimSDKPath: on the SDK path (the agent's params decoded by the SDK and forwarded typed), a 2026
// server's input requests reach a 2025-era agent as sampling and elicitation requests, and a capability the agent
// lacks ends the call with an isError result naming it, having asked the agent nothing.
func TestLegacyShimSDKPath(t *testing.T) {
	t.Parallel() // it waits out timers; the rest of the package need not wait
	url := startV2Gateway(t)
	var mu sync.Mutex
	asked := 0
	askedSoFar := func() int {
		mu.Lock()
		defer mu.Unlock()
		return asked
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}, // a 2025 agent knows no InputRequiredResult
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			mu.Lock()
			asked++
			mu.Unlock()
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "sampled"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked++
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
	})
	cs, err := c.Connect(ctxT(t), &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	res, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"kinds": []string{"form", "sampling"}}})
	if err != nil || res.IsError {
		t.Fatalf("ask: %+v %v", res, err)
	}
	want := `{"form":{"action":"accept","content":{"name":"Ada"}},"sampling":{"text":"sampled","model":"m"}}`
	if got := textOf(t, res); got != want {
		t.Errorf("ask: %s, want %s", got, want)
	}
	if n := askedSoFar(); n != 2 {
		t.Errorf("the agent was asked %d requests, want 2", n)
	}

	res, err = cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"kinds": []string{"form", "url"}}})
	// The server sees the agent's own capabilities and refuses before it asks (callercaps.go); the refusal
	// names url, as the shim's own would. It is the server's: shown the gateway's capabilities instead, the
	// server would ask, and the shim would refuse in its own words.
	if err != nil || !res.IsError || !strings.Contains(strings.ToLower(textOf(t, res)), "url") {
		t.Fatalf("ask with URL elicitation the agent did not declare: want an isError result naming it, got %+v %v", res, err)
	}
	if txt := textOf(t, res); !strings.Contains(txt, "the server needs a capability this client did not declare") {
		t.Errorf("the refusal is not the server's (it was not shown the agent's capabilities): %s", txt)
	}
	if n := askedSoFar(); n != 2 {
		t.Errorf("the agent was asked %d requests, want still 2", n)
	}
}
