package endpoint

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// listenStream is a raw 2026-era subscriptions/listen POST: its SSE
// messages, in order, and close, which ends the request as an agent
// closing the stream does.
type listenStream struct {
	messages chan map[string]json.RawMessage
	close    func()
}

// openListen sends subscriptions/listen with id and filter (JSON) and
// reads the stream's messages until it ends.
func openListen(t *testing.T, url, token, id, filter string) *listenStream {
	t.Helper()
	return openListenWith(t, url, token, id, envelope(aggregate.StatelessRevision), filter)
}

// openListenWith is openListen with the request's _meta member (meta).
func openListenWith(t *testing.T, url, token, id, meta, filter string) *listenStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	body := `{"jsonrpc":"2.0","id":` + id + `,"method":"subscriptions/listen","params":{` + meta + `,"notifications":` + filter + `}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", aggregate.StatelessRevision)
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("subscriptions/listen: %v", err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		cancel()
		resp.Body.Close()
		t.Fatalf("subscriptions/listen: %s, Content-Type %q; want an SSE stream", resp.Status, ct)
	}
	s := &listenStream{messages: make(chan map[string]json.RawMessage, 64)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(s.messages)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]json.RawMessage
				if json.Unmarshal([]byte(d), &m) == nil {
					s.messages <- m
				}
			}
		}
	}()
	s.close = func() {
		cancel()
		resp.Body.Close()
		<-done
	}
	t.Cleanup(s.close)
	return s
}

// next returns the stream's next message, failing the test when none
// comes within 30 s (the stream ended, or the gateway sent nothing).
func (s *listenStream) next(t *testing.T, what string) map[string]json.RawMessage {
	t.Helper()
	select {
	case m, ok := <-s.messages:
		if !ok {
			t.Fatalf("the listen stream ended; want %s", what)
		}
		return m
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s on the listen stream within 30 s", what)
	}
	return nil
}

// TestListenMerged: a 2026-era agent's subscriptions/listen through the
// gateway (real HTTP, two stdio fixture servers). The acknowledgement comes
// first and names what the gateway honours (a URI asked for twice is held
// once); a server's tool list change reaches the stream as the merged
// tools/list_changed, and a subscribed resource's update as
// resources/updated under the URI the agent knows (the second server's is
// rewritten), both with the listen request's id as subscriptionId.
// Closing the stream releases the server's subscription held only for it.
// The Go SDK's default client (2026-07-28) gets the same through its own
// listens: its ToolListChangedHandler on connect, Subscribe and Unsubscribe
// as a listen per URI.
func TestListenMerged(t *testing.T) {
	logs := &syncBuffer{}
	url, token, _ := inProcessGatewayOf(t, testSettings(t, 16), logs,
		fixtureSpec("a", fixture.Options{Name: "a", Tools: []string{"echo", "add_tool"}}),
		fixtureSpec("b", fixture.Options{Name: "b", Tools: []string{"touch"}}))
	shared := aggregate.RewritePrefix + "b/" + fixture.SharedResourceURI
	subscribed := "fixture: subscribed " + fixture.SharedResourceURI
	unsubscribed := "fixture: unsubscribed " + fixture.SharedResourceURI
	count := func(s string) func() int { return func() int { return strings.Count(logs.String(), s) } }

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	changed := make(chan struct{}, 16)
	updates := make(chan string, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "listener", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { updates <- req.Params.URI },
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: fixture.Bearer(token, http.DefaultTransport)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != aggregate.StatelessRevision {
		t.Fatalf("the Go SDK's default client negotiated %s, want %s", v, aggregate.StatelessRevision)
	}
	call := func(name string, args map[string]any) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
	}

	l := openListen(t, url, token, `"L1"`, `{"toolsListChanged":true,"resourceSubscriptions":["`+shared+`","`+shared+`"]}`)
	ack := l.next(t, "the acknowledgement")
	var params struct {
		Meta          map[string]json.RawMessage `json:"_meta"`
		Notifications mcp.NotificationSubscriptions
		URI           string
	}
	decode := func(m map[string]json.RawMessage, method string) {
		t.Helper()
		var got string
		_ = json.Unmarshal(m["method"], &got)
		params.Meta, params.URI = nil, ""
		if got != method || json.Unmarshal(m["params"], &params) != nil {
			t.Fatalf("got %s %s; want %s", m["method"], m["params"], method)
		}
		if id := string(params.Meta["io.modelcontextprotocol/subscriptionId"]); id != `"L1"` {
			t.Errorf("%s: subscriptionId %s, want the listen request's id \"L1\"", method, id)
		}
	}
	decode(ack, "notifications/subscriptions/acknowledged")
	if n := params.Notifications; !n.ToolsListChanged || n.PromptsListChanged || n.ResourcesListChanged || !slices.Equal(n.ResourceSubscriptions, []string{shared}) {
		t.Errorf("acknowledged %+v; want toolsListChanged and %s once", n, shared)
	}
	waitFor(t, 30*time.Second, "server b to log "+subscribed, func() bool { return count(subscribed)() == 1 })

	call("add_tool", map[string]any{"name": "added"})
	decode(l.next(t, "tools/list_changed"), "notifications/tools/list_changed")
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("the Go SDK client's own listen got no tools/list_changed")
	}
	call("touch", map[string]any{"uri": fixture.SharedResourceURI})
	decode(l.next(t, "resources/updated"), "notifications/resources/updated")
	if params.URI != shared {
		t.Errorf("resources/updated for %q, want the URI the agent subscribed to, %q", params.URI, shared)
	}

	// Closing the stream releases the server's subscription: nobody else
	// holds it.
	l.close()
	waitFor(t, 30*time.Second, "server b to log "+unsubscribed, func() bool { return count(unsubscribed)() == 1 })

	// The Go SDK client's Subscribe is a listen of its own; its
	// Unsubscribe closes it, which releases the server's subscription.
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: shared}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "server b to log a second "+subscribed, func() bool { return count(subscribed)() == 2 })
	call("touch", map[string]any{"uri": fixture.SharedResourceURI})
	select {
	case uri := <-updates:
		if uri != shared {
			t.Errorf("the Go SDK client got resources/updated for %q, want %q", uri, shared)
		}
	case <-ctx.Done():
		t.Fatal("the Go SDK client got no resources/updated")
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: shared}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "server b to log a second "+unsubscribed, func() bool { return count(unsubscribed)() == 2 })
}

// TestListenEndsAtShutdown: when the gateway stops, an open listen stream
// gets the listen's result (the revision's graceful end, which tells a
// client not to take it for a dropped connection), then ends.
func TestListenEndsAtShutdown(t *testing.T) {
	url, token, e, stop := startInProcess(t, testSettings(t, 16), &syncBuffer{},
		fixtureSpec("a", fixture.Options{Name: "a", Tools: []string{"echo"}}))
	l := openListen(t, url, token, `7`, `{"toolsListChanged":true}`)
	if m := l.next(t, "the acknowledgement"); string(m["method"]) != `"notifications/subscriptions/acknowledged"` {
		t.Fatalf("first message %v, want the acknowledgement", m)
	}
	// Shutdown waits, before it closes the sessions, for the listens the
	// endpoint counts: the open one must be among them, or its result
	// could be dropped unwritten (a race no run of this test would show
	// reliably).
	if n := e.listens.open(); n != 1 {
		t.Fatalf("%d listen requests counted open, want 1", n)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	m := l.next(t, "the listen's result")
	var res struct {
		ResultType string                     `json:"resultType"`
		Meta       map[string]json.RawMessage `json:"_meta"`
	}
	if string(m["id"]) != "7" || json.Unmarshal(m["result"], &res) != nil || res.ResultType != "complete" ||
		string(res.Meta["io.modelcontextprotocol/subscriptionId"]) != "7" {
		t.Errorf("at shutdown the stream got %v; want the result of listen 7 with its subscriptionId", m)
	}
	if _, open := <-l.messages; open {
		t.Error("the stream went on after the listen's result")
	}
	if err := <-stopped; err != nil {
		t.Errorf("stop: %v", err)
	}
	if n := e.listens.open(); n != 0 {
		t.Errorf("%d listen requests counted open after shutdown, want 0", n)
	}
}

// open is how many listen requests o counts in.
func (o *openListens) open() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n
}
