package aggregate_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// heldServer is a server whose tool "hold" sends its progress token on
// tokens, then runs each step it is given, in its handler, until steps
// closes: a call kept in flight for as long as a test needs.
func heldServer(tokens chan<- any, steps <-chan func(context.Context, *mcp.CallToolRequest)) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mem", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "hold"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		tokens <- req.Params.GetProgressToken()
		for step := range steps {
			step(ctx, req)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "released"}}}, nil, nil
	})
	return s
}

// asyncCall is streamCall for a call whose stream may stay silent for a
// while: the SDK sends the response's header with its first event, so the
// POST is made on a goroutine of its own.
func asyncCall(t *testing.T, url, sid, params string) <-chan string {
	t.Helper()
	events := make(chan string, 16)
	req, err := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":50,"method":"tools/call","params":`+params+`}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", sid)
	go func() {
		defer close(events)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- data
			}
		}
	}()
	return events
}

// notificationParams reads an SSE event's data as a notification of
// method and returns its params as sent.
func notificationParams(t *testing.T, event, method string) string {
	t.Helper()
	var m struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal([]byte(event), &m); err != nil || m.Method != method {
		t.Fatalf("event %s, want %s", event, method)
	}
	return string(m.Params)
}

// TestNotificationsOfACallAsSent: during a call, a server's progress and
// log messages reach the calling agent on the call's stream as the server
// sent them (members the SDK's types do not know, and the order, kept),
// the progress with the agent's own token, the log message with the
// server's name as logger, before data; and progress the server sends
// through the SDK client (a server connected in memory, as a remote is:
// no raw bytes to keep) reaches it too.
func TestNotificationsOfACallAsSent(t *testing.T) {
	tokens := make(chan any, 1)
	steps := make(chan func(context.Context, *mcp.CallToolRequest))
	url, g, _ := memGatewayOf(t, map[string]*mcp.Server{"mem": heldServer(tokens, steps)})
	sid := initializeWith(t, url, `{}`)
	rawPost(t, url, sid, `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}`).Body.Close()
	events := asyncCall(t, url, sid, `{"name":"hold","arguments":{},"_meta":{"progressToken":"agent-tok"}}`)
	defer func() {
		for range events {
		}
	}()
	defer close(steps)
	tok, err := json.Marshal(<-tokens) // the gateway's token for the call, as the server got it
	if err != nil {
		t.Fatal(err)
	}

	// As a stdio server's transport hands them over (Intercept), with
	// bytes the SDK's types would not keep.
	g.Intercept("mem", &jsonrpc.Request{Method: "notifications/progress",
		Params: json.RawMessage(`{"progressToken":` + string(tok) + `,"x-extra":{"kept":true},"progress":1,"total":3,"message":"one"}`)})
	want := `{"progressToken":"agent-tok","x-extra":{"kept":true},"progress":1,"total":3,"message":"one"}`
	if got := notificationParams(t, nextEvent(t, events), "notifications/progress"); got != want {
		t.Errorf("progress as relayed:\n%s\nwant:\n%s", got, want)
	}
	g.Intercept("mem", &jsonrpc.Request{Method: "notifications/message",
		Params: json.RawMessage(`{"level":"error","x-extra":1,"data":{"b":1,"a":2}}`)})
	want = `{"level":"error","x-extra":1,"logger":"mem","data":{"b":1,"a":2}}`
	if got := notificationParams(t, nextEvent(t, events), "notifications/message"); got != want {
		t.Errorf("log message as relayed:\n%s\nwant:\n%s", got, want)
	}

	// Through the SDK client.
	steps <- func(ctx context.Context, req *mcp.CallToolRequest) {
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 2, Total: 3})
	}
	want = `{"progressToken":"agent-tok","progress":2,"total":3}`
	if got := notificationParams(t, nextEvent(t, events), "notifications/progress"); got != want {
		t.Errorf("progress through the SDK client:\n%s\nwant:\n%s", got, want)
	}
}

// TestLogOfARawCallGoesToItsStream: a call sent on the raw path by a
// caller that streams (Route and Send with notify, as the endpoint sends
// a call whose response is an event stream) gets the call's log messages
// through notify, as the server sent them but tagged with its name, before
// its result; the session's level filters them.
func TestLogOfARawCallGoesToItsStream(t *testing.T) {
	url, _, g := startGatewayG(t, map[string]fixture.Options{"a": {}})
	sid := rawInitialize(t, url)
	rawPost(t, url, sid, `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}`).Body.Close()
	ss := sessionOf(t, g, sid)
	if !g.RawEligible(ss, false, true) {
		t.Fatal("a session's call with a stream is not raw-eligible")
	}
	f, ok := g.Route("tools/call", json.RawMessage(`{"name":"log","arguments":{"level":"info","message":"m","count":2}}`), true)
	if !ok {
		t.Fatal("Route declined the call")
	}
	var got []string
	notify := func(method string, params json.RawMessage) error {
		got = append(got, method+" "+string(params)) // Send calls notify before it returns
		return nil
	}
	if res, err := g.Send(ctxT(t), ss, &f, notify, nil); err != nil || !strings.Contains(string(res), "logged 2") {
		t.Fatalf("log: %s %v", res, err)
	}
	want := []string{
		`notifications/message {"data":"m 1","level":"info","logger":"a/fixture"}`,
		`notifications/message {"data":"m 2","level":"info","logger":"a/fixture"}`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("notify got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	got = nil
	f, _ = g.Route("tools/call", json.RawMessage(`{"name":"log","arguments":{"level":"debug","message":"m"}}`), true)
	if res, err := g.Send(ctxT(t), ss, &f, notify, nil); err != nil || !strings.Contains(string(res), "logged 1") {
		t.Fatalf("log at debug: %s %v", res, err)
	}
	if len(got) != 0 {
		t.Errorf("a session at level info got %s", got)
	}
}
