package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/intercept"
)

// Tests of what the gateway makes of several servers behind one endpoint,
// through the whole gateway (HTTP, the aggregate, real server processes):
// whatever package the merging lives in, they hold.

// connectTo connects a Go SDK client to g's endpoint; it is closed at the
// test's end.
func connectTo(t *testing.T, ctx context.Context, g *Gateway, token string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "merge-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   "http://" + g.Addr().String() + "/mcp",
		HTTPClient: &http.Client{Transport: fixture.Bearer(token, http.DefaultTransport)},
	}, legacySession())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// waitLog waits until the log holds want.
func waitLog(t *testing.T, logs *fixture.Log, what, want string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s (%q) in the log:\n%s", what, want, logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestInterceptorScopeAfterCollision: an interceptor scoped to a tool by
// its name at the server ("tools": ["echo"]) applies to that tool when a
// collision exports it under another name (b_echo), on calls and on the
// tools listing, and not to the other server's tool that kept the name.
func TestInterceptorScopeAfterCollision(t *testing.T) {
	cfg := testConfig(t)
	icpt, err := intercept.Parse([]byte(`{"interceptors":[
		{"name":"small","type":"sizeGuard","servers":["b"],"tools":["echo"],"maxArgumentBytes":40},
		{"name":"no-env","type":"toolFilter","servers":["b"],"tools":["env"],"deny":["env"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Interceptors = icpt
	g := startInProcess(t, cfg, io.Discard,
		fixtureSpec("a", fixture.Options{Name: "a", Tools: []string{"echo", "env"}}),
		fixtureSpec("b", fixture.Options{Name: "b", Tools: []string{"echo", "env"}}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := connectTo(t, ctx, g, "churn-token")

	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if got := strings.Join(names, ","); got != "b_echo,echo,env" {
		t.Errorf("tools %s; want b's env hidden by the filter scoped to env, the rest offered", got)
	}

	long := strings.Repeat("x", 60)
	got, err := fixture.CallText(ctx, cs, "b_echo", map[string]any{"text": long})
	if err == nil || !strings.Contains(got, `denied by interceptor "small"`) {
		t.Errorf("b_echo with %d bytes of arguments: %q, %v; want it denied by the size guard scoped to echo", len(long), got, err)
	}
	if got, err := fixture.CallText(ctx, cs, "b_echo", map[string]any{"text": "short"}); err != nil || got != "short" {
		t.Errorf("b_echo with short arguments: %q, %v", got, err)
	}
	if got, err := fixture.CallText(ctx, cs, "echo", map[string]any{"text": long}); err != nil || got != long {
		t.Errorf("a's echo (out of the guard's scope): %q, %v", got, err)
	}
}

// TestHungSubscribeHoldsOnlyItsURI: a subscribe that a server never
// answers holds up that URI only, not a subscribe to another URI of the
// same server.
func TestHungSubscribeHoldsOnlyItsURI(t *testing.T) {
	logs := &fixture.Log{}
	g := startInProcess(t, testConfig(t), logs, fixtureSpec("a", fixture.Options{Name: "a", HangSubscribe: true}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := connectTo(t, ctx, g, "churn-token")
	hung := fixture.ResourceURI("a")
	hungCtx, stop := context.WithCancel(ctx)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- cs.Subscribe(hungCtx, &mcp.SubscribeParams{URI: hung}) }()
	waitLog(t, logs, "hung subscribe", "subscribe hanging "+hung)

	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: fixture.SharedResourceURI}); err != nil {
		t.Fatalf("subscribe to %s while %s hangs: %v", fixture.SharedResourceURI, hung, err)
	}
	waitLog(t, logs, "the other subscribe at the server", "subscribed "+fixture.SharedResourceURI)

	stop()
	if err := <-errc; err == nil {
		t.Error("the hung subscribe succeeded")
	}
	// The cancellation reaches the server before the session ends (the
	// session's close waits for the gateway's handler, which waits for a).
	waitLog(t, logs, "the hung subscribe cancelled", "subscribe cancelled "+hung)
}

// TestTasksCapabilitiesUnion: two servers offering different tasks
// capabilities are offered to the agent as their union, member by member
// and nested.
func TestTasksCapabilitiesUnion(t *testing.T) {
	cfg := testConfig(t)
	g := startInProcess(t, cfg, io.Discard,
		fixtureSpec("a", fixture.Options{Name: "a", Tasks: true, TasksCapability: `{"list":{},"requests":{"tools":{"call":{}}}}`}),
		fixtureSpec("b", fixture.Options{Name: "b", Tasks: true, TasksCapability: `{"cancel":{},"requests":{"tools":{"call":{"x-b":true}}}}`}))
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"merge-test","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, "http://"+g.Addr().String()+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer churn-token")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		t.Cleanup(func() { endSession(g, sid) })
	}
	if i := bytes.Index(b, []byte("data: ")); i >= 0 { // an SSE stream of one event
		b = bytes.TrimSpace(bytes.SplitN(b[i+len("data: "):], []byte("\n"), 2)[0])
	}
	var r struct {
		Result struct {
			Capabilities struct {
				Tasks any `json:"tasks"`
			} `json:"capabilities"`
		} `json:"result"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("initialize: %d %q: %v", resp.StatusCode, b, err)
	}
	var want any
	_ = json.Unmarshal([]byte(`{"list":{},"cancel":{},"requests":{"tools":{"call":{"x-b":true}}}}`), &want)
	if !reflect.DeepEqual(r.Result.Capabilities.Tasks, want) {
		got, _ := json.Marshal(r.Result.Capabilities.Tasks)
		t.Errorf("tasks capability %s, want the union of both servers' %s", got, must(json.Marshal(want)))
	}
}

// endSession ends an agent session of g's endpoint (DELETE).
func endSession(g *Gateway, sid string) {
	req, _ := http.NewRequest(http.MethodDelete, "http://"+g.Addr().String()+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer churn-token")
	req.Header.Set("Mcp-Session-Id", sid)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
}

func must(b []byte, _ error) string { return string(b) }

// legacySession pins a Go SDK client to the 2025 era (initialize, a
// session): the SDK's default client negotiates 2026-07-28 with the gateway,
// which serves it without a session, and the tests that use this are about
// what a 2025-era session gets. The 2026 era has tests of its own (era_test.go).
func legacySession() *mcp.ClientSessionOptions {
	return &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
}
