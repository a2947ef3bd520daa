package aggregate_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// The servers here are connected over in-memory transports, as a remote
// server is over HTTP: with no raw round trip, every request a server
// sends the gateway reaches the SDK client NewClient made, and its
// middleware and handlers, not ServeRequest.

// nestedSchema is an elicitation form schema the SDK client refuses
// before its handler runs (a property with properties of its own); the
// agent's client is the one to judge a schema, so the gateway relays it.
var nestedSchema = map[string]any{"type": "object", "properties": map[string]any{
	"address": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
}}

// askingServer is a server whose tools ask the client things: roots
// ("roots"), sampling ("sample") and an elicitation with nestedSchema
// ("elicit_nested"), each answering with what it got.
func askingServer(name string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	mcp.AddTool(s, &mcp.Tool{Name: "roots"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return text("roots/list failed: " + err.Error()), nil, nil
		}
		var uris []string
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		return text(strings.Join(uris, " ")), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "sample"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
		if err != nil {
			return text("sampling failed: " + err.Error()), nil, nil
		}
		if tc, ok := res.Content.(*mcp.TextContent); ok {
			return text("model " + res.Model + " said " + tc.Text), nil, nil
		}
		return text("model " + res.Model + " said no text"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "elicit_nested"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "where?", RequestedSchema: nestedSchema})
		if err != nil {
			return text("elicitation failed: " + err.Error()), nil, nil
		}
		return text("elicitation: " + res.Action), nil, nil
	})
	return s
}

// memGatewayOf serves, over HTTP, a gateway of servers connected in
// memory, by name, and returns its URL, the gateway and its log.
func memGatewayOf(t *testing.T, servers map[string]*mcp.Server) (string, *aggregate.Gateway, *logs) {
	t.Helper()
	return memGatewayOpts(t, servers, aggregate.Options{})
}

// memGatewayOpts is memGatewayOf with the gateway's options; its logger
// is set here, with the trace ids hook the command's logger has.
func memGatewayOpts(t *testing.T, servers map[string]*mcp.Server, opts aggregate.Options) (string, *aggregate.Gateway, *logs) {
	t.Helper()
	log := &logs{}
	opts.Logger = zerolog.New(log).Hook(telemetry.LogHook{})
	g := aggregate.New(opts)
	for name, srv := range servers {
		u := &memUpstream{name: name}
		g.Add(u)
		ct, st := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(context.Background(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		// A 2025-era session, as the supervisor pins: a 2026-era server
		// asks its client nothing during a request.
		cs, err := g.NewClient(name).Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cs.Close()
			ss.Close()
		})
		u.cs = cs
		if err := g.Sync(context.Background(), name, cs, nil); err != nil {
			t.Fatal(err)
		}
	}
	return serveGateway(t, g), g, log
}

// TestServerRequestsThroughTheSDKClient: a server's roots/list,
// sampling/createMessage and elicitation/create reach the calling agent
// through the gateway's SDK client, each as that request: the agent's
// roots, the agent's model's answer, and an elicitation whose schema the
// SDK client would refuse before its handler runs (the agent, a client
// that takes it, declines it; the server hears the decline).
func TestServerRequestsThroughTheSDKClient(t *testing.T) {
	url, _, _ := memGatewayOf(t, map[string]*mcp.Server{"mem": askingServer("mem")})
	c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m1", Role: "assistant", Content: &mcp.TextContent{Text: "hello"}}, nil
		},
	})
	c.AddRoots(&mcp.Root{URI: "file:///agent/root"})
	agent, err := c.Connect(ctxT(t), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	call := func(tool string) string {
		t.Helper()
		res, err := agent.CallTool(ctxT(t), &mcp.CallToolParams{Name: tool})
		if err != nil || res.IsError {
			t.Fatalf("%s: %+v %v", tool, res, err)
		}
		return textOf(t, res)
	}
	if got := call("roots"); got != "file:///agent/root" {
		t.Errorf("roots the server got: %q, want the agent's", got)
	}
	if got := call("sample"); got != "model m1 said hello" {
		t.Errorf("sampling: %q", got)
	}

	// The Go SDK's client refuses the schema too: the agent here is plain
	// HTTP.
	sid := initializeWith(t, url, `{"elicitation":{"form":{}}}`)
	events := streamCall(t, url, sid, `{"name":"elicit_nested","arguments":{}}`)
	var req serverRequest
	if err := json.Unmarshal([]byte(nextEvent(t, events)), &req); err != nil || req.Method != "elicitation/create" {
		t.Fatalf("first event is not the elicitation: %+v %v", req, err)
	}
	rawPost(t, url, sid, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"action":"decline"}}`).Body.Close()
	if res := nextEvent(t, events); !strings.Contains(res, "elicitation: decline") {
		t.Errorf("elicitation with a nested schema: %s, want the agent's decline", res)
	}
}

// TestRelistFailureLogged: a server that announces a tools/list_changed
// and then fails to list its tools leaves a warning naming it and the
// kind of list; the gateway keeps the tools it had.
func TestRelistFailureLogged(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "flaky", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "first"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	var failing atomic.Bool
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" && failing.Load() {
				return nil, errors.New("listing is broken")
			}
			return next(ctx, method, req)
		}
	})
	url, _, log := memGatewayOf(t, map[string]*mcp.Server{"flaky": srv})
	failing.Store(true)
	mcp.AddTool(srv, &mcp.Tool{Name: "second"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	}) // tools/list_changed
	waitFor(t, "the failed re-list to be logged", func() bool {
		return strings.Contains(log.String(), `"message":"re-list after list_changed"`)
	})
	line := ""
	for l := range strings.Lines(log.String()) {
		if strings.Contains(l, "re-list after list_changed") {
			line = l
		}
	}
	for _, want := range []string{`"level":"warn"`, `"server":"flaky"`, `"kind":"tools"`, "listing is broken"} {
		if !strings.Contains(line, want) {
			t.Errorf("the re-list warning lacks %s: %s", want, line)
		}
	}
	if got := toolNames(t, connect(t, url, nil)); len(got) != 1 || got[0] != "first" {
		t.Errorf("tools after the failed re-list: %v, want [first]", got)
	}
}

// TestRootsOutsideACallOnlyIfDeclared: outside any call, a server asking
// for roots gets none from the only agent session when that session did
// not declare the roots capability, though its client holds a root the
// server must not see; once the agent that declared roots is the only
// one, the server gets its roots.
func TestRootsOutsideACallOnlyIfDeclared(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
	url, _, _ := memGatewayOf(t, map[string]*mcp.Server{"asker": srv})
	var upstream *mcp.ServerSession
	for ss := range srv.Sessions() {
		upstream = ss
	}
	roots := func() string {
		t.Helper()
		res, err := upstream.ListRoots(ctxT(t), nil)
		if err != nil {
			t.Fatalf("roots/list outside a call: %v", err)
		}
		var uris []string
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		return strings.Join(uris, " ")
	}
	agent := func(uri string, caps *mcp.ClientCapabilities) *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{Capabilities: caps})
		c.AddRoots(&mcp.Root{URI: uri})
		cs, err := c.Connect(ctxT(t), &mcp.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// A round trip after notifications/initialized: the session is
		// the gateway's, initialized, when the server asks.
		if err := cs.Ping(ctxT(t), nil); err != nil {
			t.Fatal(err)
		}
		return cs
	}
	rootless := agent("file:///undeclared", &mcp.ClientCapabilities{})
	if got := roots(); got != "" {
		t.Errorf("roots of the only session, which declared no roots: %q, want none", got)
	}
	rootless.Close()
	declared := agent("file:///declared", &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{ListChanged: true}})
	defer declared.Close()
	waitFor(t, "the rootless session to be gone", func() bool { return roots() == "file:///declared" })
}
