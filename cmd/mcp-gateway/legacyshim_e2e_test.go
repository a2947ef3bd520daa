package main

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// legacyAgent is a 2025-era agent's client for the legacy shim's tests: it answers sampling, elicitation and roots
// requests on its session and counts them, and has the Go SDK's own multi-round-trip handling off, so that an
// InputRequiredResult reaching it is not answered behind the test's back (a 2025 client has no such thing).
type legacyAgent struct {
	mu    sync.Mutex
	asked map[string]int
}

func (a *legacyAgent) count(method string) {
	a.mu.Lock()
	a.asked[method]++
	a.mu.Unlock()
}

func (a *legacyAgent) asks(method string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.asked[method]
}

// connect opens a 2025-11-25 session through the gateway, declaring caps.
func (a *legacyAgent) connect(t *testing.T, ctx context.Context, sb *testbox, caps *mcp.ClientCapabilities) *mcp.ClientSession {
	t.Helper()
	a.asked = map[string]int{}
	client := mcp.NewClient(&mcp.Implementation{Name: "legacy-agent", Version: "1"}, &mcp.ClientOptions{
		Capabilities:   caps,
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			a.count("sampling")
			return &mcp.CreateMessageResult{Model: "agent-model", Role: "assistant", Content: &mcp.TextContent{Text: "hello from the agent"}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if req.Params.Mode == "url" {
				a.count("url")
				return &mcp.ElicitResult{Action: "accept"}, nil
			}
			a.count("form")
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
	})
	client.AddRoots(&mcp.Root{URI: "file:///agent/root"})
	tr := &mcp.StreamableClientTransport{
		Endpoint:   sb.url() + "/mcp",
		HTTPClient: &http.Client{Transport: fixture.Bearer(sb.token, http.DefaultTransport)},
	}
	cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect to gateway: %v\nlog:\n%s", err, sb.log())
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestLegacyShim: a 2026-only server (the TypeScript SDK v2 with legacy: 'reject', over stdio and as a url) asks for
// input with InputRequiredResults; a 2025-era Go SDK client behind the gateway answers them as the sampling,
// elicitation and roots requests it knows, and gets the call's final result. The server checks its requestState on
// each retry.
func TestLegacyShim(t *testing.T) {
	ts := tsHarness(t)
	t.Run("stdio", func(t *testing.T) {
		testLegacyShim(t, map[string]any{"runCmd": "node '" + filepath.Join(ts, "v2server.mjs") + "' --legacy=reject"})
	})
	t.Run("url", func(t *testing.T) {
		testLegacyShim(t, map[string]any{"url": startV2HTTPServer(t, ts, "--legacy=reject")})
	})
}

func testLegacyShim(t *testing.T, v2 map[string]any) {
	sb := newTestbox(t)
	sb.mustLaunch(mcpConfig(t, map[string]any{"v2": v2}))
	all := &mcp.ClientCapabilities{
		RootsV2:     &mcp.RootCapabilities{ListChanged: true},
		Sampling:    &mcp.SamplingCapabilities{},
		Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
	}

	t.Run("four kinds in one round", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var a legacyAgent
		cs := a.connect(t, ctx, sb, all)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"kinds": []string{"form", "url", "sampling", "roots"}}})
		if err != nil || res.IsError {
			t.Fatalf("ask: %+v %v\nlog:\n%s", res, err, sb.log())
		}
		var got struct {
			Form struct {
				Action  string         `json:"action"`
				Content map[string]any `json:"content"`
			} `json:"form"`
			URL struct {
				Action string `json:"action"`
			} `json:"url"`
			Sampling struct {
				Text  string `json:"text"`
				Model string `json:"model"`
			} `json:"sampling"`
			Roots struct {
				Roots []string `json:"roots"`
			} `json:"roots"`
		}
		if err := json.Unmarshal([]byte(text(t, res)), &got); err != nil {
			t.Fatalf("ask's result %q: %v", text(t, res), err)
		}
		if got.Form.Action != "accept" || got.Form.Content["name"] != "Ada" || got.URL.Action != "accept" ||
			got.Sampling.Text != "hello from the agent" || got.Sampling.Model != "agent-model" ||
			len(got.Roots.Roots) != 1 || got.Roots.Roots[0] != "file:///agent/root" {
			t.Errorf("the server got %+v", got)
		}
		for _, m := range []string{"form", "url", "sampling"} {
			if n := a.asks(m); n != 1 {
				t.Errorf("the agent was asked %d %s requests, want 1", n, m)
			}
		}
	})

	t.Run("eight rounds", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var a legacyAgent
		cs := a.connect(t, ctx, sb, all)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "askmore", Arguments: map[string]any{"rounds": 8}})
		if err != nil || res.IsError || text(t, res) != "answered 8" {
			t.Fatalf("askmore 8: %+v %v\nlog:\n%s", res, err, sb.log())
		}
		if n := a.asks("form"); n != 8 {
			t.Errorf("the agent was asked %d times, want 8", n)
		}
	})

	t.Run("a ninth round is refused", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var a legacyAgent
		cs := a.connect(t, ctx, sb, all)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "askmore", Arguments: map[string]any{"rounds": 9}})
		if err != nil || !res.IsError || !strings.Contains(text(t, res), "more than 8") {
			t.Fatalf("askmore 9: want an isError result on the 9th round, got %+v %v", res, err)
		}
		if n := a.asks("form"); n != 8 {
			t.Errorf("the agent was asked %d times, want 8", n)
		}
	})

	t.Run("a capability the agent lacks", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var a legacyAgent
		formOnly := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}
		cs := a.connect(t, ctx, sb, formOnly)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"kinds": []string{"form", "url"}}})
		// The server sees the agent's own capabilities and refuses (-32021) before it asks; the gateway tells
		// the agent so in 2025 terms. (A server that does not check meets the gateway's own check, which names
		// "URL elicitation" likewise.)
		if err != nil || !res.IsError || !strings.Contains(strings.ToLower(text(t, res)), "url") {
			t.Fatalf("ask form+url without URL elicitation: want an isError result naming it, got %+v %v", res, err)
		}
		if n := a.asks("form") + a.asks("url"); n != 0 {
			t.Errorf("the agent was asked %d requests of a round it cannot answer whole", n)
		}
	})
}

// TestLegacyShimTSClient: the TypeScript SDK v2 client in its default legacy mode (the 2025 handshake) calls the
// 2026-only server's ask tool through the gateway, over HTTP and in stdio mode, and answers the four input requests
// as the sampling, elicitation and roots requests of its session.
func TestLegacyShimTSClient(t *testing.T) {
	ts := tsHarness(t)
	cfg := mcpConfig(t, map[string]any{
		"v2": map[string]any{"runCmd": "node '" + filepath.Join(ts, "v2server.mjs") + "' --legacy=reject"},
	})
	steps := `--steps=[{"op":"tools/call","name":"ask","arguments":{"kinds":["form","url","sampling","roots"]}}]`
	check := func(t *testing.T, lines []v2Line) {
		t.Helper()
		if len(lines) != 2 || lines[0].Era != "legacy" || lines[1].Error != nil {
			if len(lines) == 2 && lines[1].Error != nil {
				t.Fatalf("v2client: the call failed: %q %v %s", lines[1].Error.Message, lines[1].Error.Code, lines[1].Error.Data)
			}
			t.Fatalf("v2client: want a legacy connect and a result: %+v", lines)
		}
		var res mcp.CallToolResult
		if err := json.Unmarshal(lines[1].Result, &res); err != nil || res.IsError || len(res.Content) != 1 {
			t.Fatalf("ask: %s (%v)", lines[1].Result, err)
		}
		got := res.Content[0].(*mcp.TextContent).Text
		want := `{"form":{"action":"accept","content":{"name":"v2client"}},"url":{"action":"accept"},` +
			`"sampling":{"text":"sampled by v2client","model":`
		if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, `"roots":{"roots":["file:///tmp/v2client-root"]}}`) {
			t.Errorf("ask's answers: %s\nwant %s...", got, want)
		}
	}
	t.Run("http", func(t *testing.T) {
		sb := newTestbox(t)
		sb.mustLaunch(cfg)
		check(t, runV2Client(t, ts, "--mode=legacy", "--token="+sb.token, steps, sb.url()+"/mcp"))
	})
	t.Run("stdio", func(t *testing.T) {
		args := append([]string{"--mode=legacy", steps, "--"}, gatewayStdioArgs(t.TempDir(), cfg)...)
		check(t, runV2Client(t, ts, args...))
	})
}
