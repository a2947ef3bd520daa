package aggregate

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// echoOnly is an in-process server with the tool echo and nothing else (no
// prompts, no resources).
func echoOnly() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "fx"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	return srv
}

// TestRawCallResultNotAnObject: a server that answers a tools/call with
// something else than an object (here an array) gives the agent an error
// naming it, not those bytes as a result.
func TestRawCallResultNotAnObject(t *testing.T) {
	g, ss, _ := memGatewayOf(t, Options{}, echoOnly(), json.RawMessage(`[1,2]`), nil)
	f, ok := g.Route("tools/call", json.RawMessage(`{"name":"echo","arguments":{}}`), false)
	if !ok {
		t.Fatal("Route declined a plain call")
	}
	res, err := g.Send(context.Background(), ss, &f, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "not an object") || res != nil {
		t.Fatalf("a result [1,2]: got %s, %v; want an error saying it is not an object", res, err)
	}
}

// TestSubscribeWithoutResources: with no server that has resources, a
// resources/subscribe has nowhere to go; the raw path leaves it to the SDK
// path, which answers the error.
func TestSubscribeWithoutResources(t *testing.T) {
	g, _, _ := memGatewayOf(t, Options{}, echoOnly(), json.RawMessage(`{}`), nil)
	for _, m := range []string{"resources/subscribe", "resources/unsubscribe"} {
		if _, ok := g.Route(m, json.RawMessage(`{"uri":"fx://doc"}`), false); ok {
			t.Errorf("%s routed with no server that has resources", m)
		}
	}
}

// TestRequestStreamMayStream: RequestStream serves a session whose client
// may be asked something (here: it declared sampling) when the caller can
// stream (notify and ask set), and says through needed whether the request
// may send the agent anything on its stream: a call with a progress token
// may, one without may not (a session that set no log level and cannot be
// asked). MayStream says the same of a routed request.
func TestRequestStreamMayStream(t *testing.T) {
	ctx := context.Background()
	notify := func(string, json.RawMessage) error { return nil }
	ask := func(context.Context, string, json.RawMessage) (json.RawMessage, error) { return nil, nil }
	ok := json.RawMessage(`{"content":[]}`)
	plain := `{"name":"echo","arguments":{}}`
	progress := `{"_meta":{"progressToken":1},"name":"echo","arguments":{}}`

	g, ss, _ := memGatewayOf(t, Options{}, echoOnly(), ok, nil)
	for _, c := range []struct {
		params string
		want   bool
	}{{plain, false}, {progress, true}} {
		needed := !c.want
		if _, err := g.RequestStream(ctx, ss, "tools/call", json.RawMessage(c.params), true, notify, ask, &needed); err != nil {
			t.Fatalf("RequestStream %s: %v", c.params, err)
		}
		if needed != c.want {
			t.Errorf("RequestStream %s: needed = %v, want %v", c.params, needed, c.want)
		}
		f, routed := g.Route("tools/call", json.RawMessage(c.params), true)
		if !routed {
			t.Fatalf("Route %s declined", c.params)
		}
		if got := g.MayStream(ss, &f, true); got != c.want {
			t.Errorf("MayStream %s = %v, want %v", c.params, got, c.want)
		}
	}
	if _, err := g.RequestStream(ctx, ss, "tools/call", json.RawMessage(plain), true, notify, ask, nil); err != nil {
		t.Errorf("RequestStream without needed: %v", err)
	}

	sampling := &mcp.ClientOptions{CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		return nil, errors.New("no model here")
	}}
	g, ss, _ = memGatewayOf(t, Options{}, echoOnly(), ok, sampling)
	if _, err := g.RequestStream(ctx, ss, "tools/call", json.RawMessage(plain), true, notify, ask, nil); err != nil {
		t.Errorf("RequestStream for a client that may be asked, with notify and ask: %v", err)
	}
	if _, err := g.RequestStream(ctx, ss, "tools/call", json.RawMessage(plain), true, nil, nil, nil); !errors.Is(err, ErrNeedsSession) {
		t.Errorf("RequestStream for a client that may be asked, without a stream: %v, want ErrNeedsSession", err)
	}
}

// TestRawSendMeasured: a request forwarded on the raw path is measured
// (Send goes through the telemetry when it is on).
func TestRawSendMeasured(t *testing.T) {
	tel, err := telemetry.New(context.Background(), telemetry.Options{Metrics: true, Env: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	g, ss := memGatewayWith(t, Options{Telemetry: tel})
	f, ok := g.Route("tools/call", json.RawMessage(`{"name":"echo","arguments":{}}`), false)
	if !ok {
		t.Fatal("Route declined a plain call")
	}
	if _, err := g.Send(context.Background(), ss, &f, nil, nil); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	tel.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if want := `mcp_server_operation_duration_seconds_count{gen_ai_tool_name="echo",mcp_method_name="tools/call"} 1`; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("the call forwarded on the raw path is not measured as served: no %s in\n%s", want, rec.Body.String())
	}
}

// TestServerInfoVersion: the gateway names itself to agents with the
// version it was given, "dev" when none.
func TestServerInfoVersion(t *testing.T) {
	for _, c := range []struct{ version, want string }{{"1.2.3", "1.2.3"}, {"", "dev"}} {
		_, _, agent := memGatewayOf(t, Options{Version: c.version}, echoOnly(), json.RawMessage(`{}`), nil)
		if got := agent.InitializeResult().ServerInfo; got.Name != "mcp-gateway" || got.Version != c.want {
			t.Errorf("Version %q: serverInfo %+v, want version %q", c.version, got, c.want)
		}
	}
}

// TestExtrasOpenWithoutAHungServer: a server that never answers its
// prompts/list does not hold every request about prompts and resources:
// extrasWait after Open they are named without it, and the agent's
// prompts/list is answered.
func TestExtrasOpenWithoutAHungServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	release := make(chan struct{})
	srv := echoOnly()
	srv.AddPrompt(&mcp.Prompt{Name: "never"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "prompts/list" {
				<-release
				return nil, errors.New("released")
			}
			return next(ctx, method, req)
		}
	})
	st, ct := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "gateway"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	defer close(release) // before the session closes: its server waits for the answer
	g := New(Options{})
	g.extrasWait = time.Millisecond
	g.Add(&memUpstream{name: "fx", cs: cs})
	if err := g.Sync(ctx, "fx", cs, nil); err != nil {
		t.Fatal(err)
	}
	g.Open()
	agent := connectAgent(t, ctx, g)
	if res, err := agent.ListPrompts(ctx, nil); err != nil || len(res.Prompts) != 0 {
		t.Fatalf("prompts/list while the only server never lists its prompts: %+v, %v; want none, answered", res, err)
	}
}
