package aggregate

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// memUpstream is an in-process server that takes raw requests and answers
// each at once with a fixed result: what is left of a forwarded request's
// cost is the gateway's own (reading, routing, rewriting), with no process
// or pipe in between.
type memUpstream struct {
	name string
	cs   *mcp.ClientSession
	res  json.RawMessage
}

func (u *memUpstream) Name() string { return u.name }

func (u *memUpstream) Do(_ context.Context, fn func(*mcp.ClientSession) error) error {
	return fn(u.cs)
}

func (u *memUpstream) CallRaw(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return u.res, nil
}

// memGateway is a gateway over one in-process server ("fx": the tool echo,
// the prompt greet, the resource fx://doc), opened, and an initialized agent
// session of it over in-memory transports.
func memGateway(tb testing.TB) (*Gateway, *mcp.ServerSession) {
	tb.Helper()
	return memGatewayWith(tb, Options{})
}

// memGatewayWith is memGateway with the gateway's options.
func memGatewayWith(tb testing.TB, opts Options) (*Gateway, *mcp.ServerSession) {
	tb.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "fx"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	srv.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	srv.AddResource(&mcp.Resource{Name: "doc", URI: "fx://doc"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	g, ss, _ := memGatewayOf(tb, opts, srv, json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`), nil)
	return g, ss
}

// memGatewayOf is a gateway over srv, named "fx", whose raw requests are
// all answered with res, opened, and an agent connected to it with copts
// over in-memory transports: the gateway's session and the agent's.
func memGatewayOf(tb testing.TB, opts Options, srv *mcp.Server, res json.RawMessage, copts *mcp.ClientOptions) (*Gateway, *mcp.ServerSession, *mcp.ClientSession) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	st, ct := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, st, nil); err != nil {
		tb.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "gateway"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cs.Close() })
	up := &memUpstream{name: "fx", cs: cs, res: res}

	g := New(opts)
	g.Add(up)
	if err := g.Sync(ctx, "fx", cs, nil); err != nil {
		tb.Fatal(err)
	}
	g.Open()
	if err := g.waitExtras(ctx); err != nil {
		tb.Fatal(err)
	}

	st, ct = mcp.NewInMemoryTransports()
	ss, err := g.Server().Connect(ctx, st, nil)
	if err != nil {
		tb.Fatal(err)
	}
	agent, err := mcp.NewClient(&mcp.Implementation{Name: "agent"}, copts).Connect(ctx, ct, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = agent.Close() })
	return g, ss, agent
}

// connectAgent connects a Go SDK client to g's merged server over
// in-memory transports, closed when the test ends.
func connectAgent(t *testing.T, ctx context.Context, g *Gateway) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	if _, err := g.Server().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	agent, err := mcp.NewClient(&mcp.Implementation{Name: "agent"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = agent.Close() })
	return agent
}

// benchForward forwards one request of method with params per iteration,
// as the fast path does for a client that can take a stream.
func benchForward(b *testing.B, method, params string) {
	g, ss := memGateway(b)
	ctx := context.Background()
	p := json.RawMessage(params)
	notify := func(string, json.RawMessage) error { return nil }
	ask := func(context.Context, string, json.RawMessage) (json.RawMessage, error) { return nil, nil }
	b.ReportAllocs()
	for b.Loop() {
		var needed bool
		if _, err := g.RequestStream(ctx, ss, method, p, true, notify, ask, &needed); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkForwardToolsCall(b *testing.B) {
	benchForward(b, "tools/call", `{"name":"echo","arguments":{"text":"hello"}}`)
}

func BenchmarkForwardToolsCallProgress(b *testing.B) {
	benchForward(b, "tools/call", `{"_meta":{"progressToken":7},"name":"echo","arguments":{"text":"hello"}}`)
}

func BenchmarkForwardPromptsGet(b *testing.B) {
	benchForward(b, "prompts/get", `{"name":"greet","arguments":{"who":"you"}}`)
}

func BenchmarkForwardResourcesRead(b *testing.B) {
	benchForward(b, "resources/read", `{"uri":"fx://doc"}`)
}

// benchStateless routes and sends one 2026-era tools/call per iteration,
// as the endpoint's fast path does, its _meta declaring caps: the
// gateway's own cost next to BenchmarkForwardToolsCall's (a 2025 session's
// call).
func benchStateless(b *testing.B, caps string) {
	g, _ := memGateway(b)
	ctx := context.Background()
	p := json.RawMessage(`{"name":"echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":` + caps + `,"io.modelcontextprotocol/clientInfo":{"name":"agent","version":"1"}}}`)
	notify := func(string, json.RawMessage) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		s, ok := g.RouteStateless(p, statelessRevision, "echo", true)
		if !ok {
			b.Fatal("RouteStateless declined")
		}
		if _, err := g.SendStateless(ctx, &s, notify); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkForwardStateless: an agent that declares roots (the Go SDK
// client's default: its call is a pending call) and one that declares
// nothing (its call is sent directly).
func BenchmarkForwardStateless(b *testing.B) {
	b.Run("roots", func(b *testing.B) { benchStateless(b, `{"roots":{"listChanged":true}}`) })
	b.Run("none", func(b *testing.B) { benchStateless(b, `{}`) })
}
