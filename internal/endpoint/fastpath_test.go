package endpoint

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// fastPathGateway runs an in-process gateway with two fixtures that both
// have the tool "who", answering "<server>:who": a's keeps the plain name,
// b's is exported as b_who.
func fastPathGateway(t *testing.T) (url, token string, g *Endpoint, logs *syncBuffer) {
	t.Helper()
	logs = &syncBuffer{}
	url, token, g = inProcessGatewayOf(t, testSettings(t, 16), logs,
		fixtureSpec("a", fixture.Options{Name: "a", Tools: []string{"echo", "sleep", "crash", "roots", "progress", "log"}, ExtraTools: []string{"who"}}),
		fixtureSpec("b", fixture.Options{Name: "b", Tools: []string{"echo"}, ExtraTools: []string{"who"}}))
	return url, token, g, logs
}

// callBody is a tools/call request; meta, if set, is its params' _meta.
func callBody(id int, tool, args, meta string) string {
	p := `{"name":"` + tool + `","arguments":` + args
	if meta != "" {
		p += `,"_meta":` + meta
	}
	b, _ := json.Marshal(id)
	return `{"jsonrpc":"2.0","id":` + string(b) + `,"method":"tools/call","params":` + p + `}}`
}

func replyText(t *testing.T, r rpcReply) string {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("error reply: %d %s", r.Error.Code, r.Error.Message)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(r.Result, &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("result %s: %v", r.Result, err)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// TestFastPathToolsCall: a tools/call from a client that needs nothing more
// than the answer is answered with plain JSON, routed like any call
// (renamed tools reach their own server under their own name), with the same
// result the SDK path gives and an audit line; a server that dies mid-call
// fails it with its name and exit status.
func TestFastPathToolsCall(t *testing.T) {
	url, token, _, logs := fastPathGateway(t)
	s := newRawSession(t, url, token)

	for tool, want := range map[string]string{"who": "a:who", "b_who": "b:who"} {
		status, h, replies := s.post(callBody(1, tool, `{}`, ""))
		if status != http.StatusOK || len(replies) != 1 {
			t.Fatalf("%s: status %d, %d replies", tool, status, len(replies))
		}
		if ct := h.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q, want application/json (the fast path)", tool, ct)
		}
		if got := replyText(t, replies[0]); got != want {
			t.Errorf("%s answered %q, want %q", tool, got, want)
		}
	}

	// A call with a progress token stays on the fast path too: a server
	// that sends no progress gets it answered as plain JSON (progress that
	// comes is TestFastPathStreamsProgress's). The result is the same.
	_, fastH, fast := s.post(callBody(2, "echo", `{"text":"same"}`, ""))
	_, slowH, slow := s.post(callBody(3, "echo", `{"text":"same"}`, `{"progressToken":"p"}`))
	if ct := slowH.Get("Content-Type"); ct != "application/json" {
		t.Errorf("call with a progress token and no progress: Content-Type %q, want application/json", ct)
	}
	if fastH.Get("Content-Type") != "application/json" || len(fast) != 1 || len(slow) != 1 {
		t.Fatalf("fast %v %+v, slow %+v", fastH, fast, slow)
	}
	var fr, sr any
	if json.Unmarshal(fast[0].Result, &fr) != nil || json.Unmarshal(slow[0].Result, &sr) != nil || !reflect.DeepEqual(fr, sr) {
		t.Errorf("fast path result %s differs from the SDK path's %s", fast[0].Result, slow[0].Result)
	}

	var audit struct {
		Event, Tool, Server, Outcome, Session string
		BytesIn                               int `json:"bytes_in"`
		BytesOut                              int `json:"bytes_out"`
	}
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `"tool":"b_who"`) {
			if err := json.Unmarshal([]byte(l), &audit); err != nil {
				t.Fatal(err)
			}
		}
	}
	if audit.Event != "call" || audit.Server != "b" || audit.Outcome != "ok" || audit.Session != s.id || audit.BytesIn != 2 || audit.BytesOut <= 0 {
		t.Errorf("audit line of the fast b_who call: %+v", audit)
	}

	_, _, replies := s.post(callBody(4, "crash", `{"code":3}`, ""))
	if len(replies) != 1 || replies[0].Error == nil || !strings.Contains(replies[0].Error.Message, `"a"`) ||
		!strings.Contains(replies[0].Error.Message, "exit status 3") {
		t.Fatalf("call to a server that exits mid-call: %+v", replies)
	}
	_, _, replies = s.post(callBody(5, "who", `{}`, ""))
	if len(replies) != 1 || replyText(t, replies[0]) != "a:who" {
		t.Fatalf("call after the restart: %+v", replies)
	}
}

// TestFastPathCancel: notifications/cancelled for a call on the fast path
// ends it at once, without an answer, and the server sees the cancellation.
func TestFastPathCancel(t *testing.T) {
	url, token, _, logs := fastPathGateway(t)
	s := newRawSession(t, url, token)
	type answer struct {
		h       http.Header
		replies []rpcReply
	}
	done := make(chan answer, 1)
	go func() {
		_, h, r := s.post(callBody(7, "sleep", `{"ms":600000}`, ""))
		done <- answer{h, r}
	}()
	waitFor(t, 30*time.Second, "the sleep to start", func() bool { return strings.Contains(logs.String(), "sleep started") })
	if status, _, _ := s.post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"test"}}`); status != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: status %d", status)
	}
	select {
	case a := <-done:
		if len(a.replies) != 0 { // no answer (TestCancelledCallsGetNoAnswer)
			t.Errorf("cancelled call answered %v %+v", a.h, a.replies)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call did not end")
	}
	waitFor(t, 10*time.Second, "the server to see the cancellation", func() bool { return strings.Contains(logs.String(), "sleep cancelled") })
	s.echo("still serving")

	// Ending the session ends its fast calls, as on the SDK path.
	go func() {
		_, h, r := s.post(callBody(8, "sleep", `{"ms":600000}`, ""))
		done <- answer{h, r}
	}()
	waitFor(t, 30*time.Second, "the second sleep to start", func() bool { return strings.Count(logs.String(), "sleep started") == 2 })
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", s.id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case a := <-done:
		// Its request is still open: it hears why the call ended, which
		// is not the agent's doing (no cancellation of its own).
		if len(a.replies) != 1 || a.replies[0].Error == nil || a.replies[0].Error.Code != -32603 || a.replies[0].Error.Message != "request cancelled" {
			got, _ := json.Marshal(a.replies)
			t.Errorf("the call of the deleted session answered %s, want -32603 request cancelled", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a fast call outlived its session")
	}
	waitFor(t, 10*time.Second, "the server to see the second cancellation", func() bool { return strings.Count(logs.String(), "sleep cancelled") == 2 })
}

// TestFastPathTakesEveryClient: calls of every client take the fast path,
// also of clients the server may ask something during a call (sampling,
// elicitation, roots without a standalone stream) and of sessions that set
// a log level: what the server sends during the call goes on the call's own
// response, which stays plain JSON when nothing came.
func TestFastPathTakesEveryClient(t *testing.T) {
	url, token, _, _ := fastPathGateway(t)
	for name, caps := range map[string]string{
		"sampling":         `{"sampling":{}}`,
		"elicitation":      `{"elicitation":{}}`,
		"roots and no GET": `{"roots":{"listChanged":true}}`,
		"logging/setLevel": `{}`,
		"none":             `{}`,
	} {
		s := newRawSessionWith(t, url, token, caps)
		if name == "logging/setLevel" {
			if status, _, r := s.post(`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}`); status != http.StatusOK || len(r) != 1 || r[0].Error != nil {
				t.Fatalf("setLevel: %d %+v", status, r)
			}
		}
		_, h, replies := s.post(callBody(2, "who", `{}`, ""))
		if len(replies) != 1 || replyText(t, replies[0]) != "a:who" {
			t.Fatalf("%s: %+v", name, replies)
		}
		if ct := h.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q, want the fast path's plain JSON", name, ct)
		}
	}
}

// TestFastPathServerRequestOnTheCallsStream: a server's request during a
// fast-path call (here sampling) reaches the agent on the call's own SSE
// response, with an id of the gateway's; the agent's answer, a POST of a
// JSON-RPC response, is taken (202) and goes back to the server as written;
// the call's result ends the stream.
func TestFastPathServerRequestOnTheCallsStream(t *testing.T) {
	url, token, _ := inProcessGatewayOf(t, testSettings(t, 16), io.Discard, fixtureSpec("fx", fixture.Options{Tools: []string{"sample"}}))
	s := newRawSessionWith(t, url, token, `{"sampling":{}}`)
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(callBody(3, "sample", `{"prompt":"hello"}`, "")))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json",
		"Accept": "application/json, text/event-stream", "Mcp-Session-Id": s.id, "Mcp-Protocol-Version": "2025-11-25"} {
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("sample: %s %q, want 200 and an SSE stream", resp.Status, ct)
	}
	br := bufio.NewReader(resp.Body)
	next := func() string {
		t.Helper()
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("read the call's stream: %v", err)
			}
			if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
				return data
			}
		}
	}
	var ask struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal([]byte(next()), &ask); err != nil || ask.Method != "sampling/createMessage" || !strings.HasPrefix(string(ask.ID), `"mcp-gateway-`) ||
		!strings.Contains(string(ask.Params), `"hello"`) {
		t.Fatalf("first event: %+v %v, want the server's sampling request", ask, err)
	}
	status, _, _ := s.post(`{"jsonrpc":"2.0","id":` + string(ask.ID) + `,"result":{"role":"assistant","content":{"type":"text","text":"hi there"},"model":"m"}}`)
	if status != http.StatusAccepted {
		t.Fatalf("the agent's answer: %d, want 202", status)
	}
	var res rpcReply
	if err := json.Unmarshal([]byte(next()), &res); err != nil || res.Error != nil || replyText(t, res) != "model said: hi there" {
		t.Fatalf("the call's result: %+v %v", res, err)
	}

	// A client without sampling: the server gets the error at once, and
	// the call is answered with plain JSON.
	plain := newRawSession(t, url, token)
	_, h, replies := plain.post(callBody(4, "sample", `{"prompt":"hello"}`, ""))
	if len(replies) != 1 || !strings.Contains(replyText(t, replies[0]), "does not support sampling") || h.Get("Content-Type") != "application/json" {
		t.Errorf("sample from a client without sampling: %q %+v", h.Get("Content-Type"), replies)
	}
}

// contentTypes records the Content-Type of the responses to tools/call.
type contentTypes struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen []string
}

func (c *contentTypes) RoundTrip(r *http.Request) (*http.Response, error) {
	call := false
	if r.Method == http.MethodPost && r.GetBody != nil {
		if b, err := r.GetBody(); err == nil {
			var msg struct{ Method string }
			_ = json.NewDecoder(b).Decode(&msg)
			call = msg.Method == "tools/call"
		}
	}
	resp, err := c.next.RoundTrip(r)
	if err == nil && call {
		c.mu.Lock()
		c.seen = append(c.seen, resp.Header.Get("Content-Type"))
		c.mu.Unlock()
	}
	return resp, err
}

// TestFastPathRootsOnTheCallsStream: a Go SDK client offers roots; its
// calls take the fast path, and a server asking for roots during one gets
// them over the call's own stream (an SSE response).
func TestFastPathRootsOnTheCallsStream(t *testing.T) {
	url, token, g, _ := fastPathGateway(t)
	ct := &contentTypes{next: fixture.Bearer(token, http.DefaultTransport)}
	client := mcp.NewClient(&mcp.Implementation{Name: "roots", Version: "1"}, nil)
	client.AddRoots(&mcp.Root{URI: "file:///work/project"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: ct}}, legacySession())
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	waitFor(t, 30*time.Second, "the client's standalone stream", func() bool { return g.sessions.hasStream(cs.ID()) })
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "roots"})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; res.IsError || got != "file:///work/project" {
		t.Errorf("roots seen by the server: %q (isError %v)", got, res.IsError)
	}
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if len(ct.seen) != 1 || ct.seen[0] != "text/event-stream" {
		t.Errorf("tools/call responses: %q, want one SSE stream (the roots request on it)", ct.seen)
	}
}

// TestFastPathParamsStayOnOneLine: params go upstream as they came, but on
// one line. A pretty-printed call works; line breaks in a hostile client's
// params cannot smuggle a message of its own to the server (here, a forged
// answer to another session's call).
func TestFastPathParamsStayOnOneLine(t *testing.T) {
	url, token, _, logs := fastPathGateway(t)
	s := newRawSession(t, url, token)
	_, h, replies := s.post("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\n  \"name\": \"echo\",\r\n  \"arguments\": {\"text\": \"pretty\"}\n}\n}")
	if h.Get("Content-Type") != "application/json" || len(replies) != 1 || replyText(t, replies[0]) != "pretty" {
		t.Fatalf("pretty-printed call: %v %+v", h, replies)
	}

	victim, attacker := newRawSession(t, url, token), newRawSession(t, url, token)
	got := make(chan []rpcReply, 1)
	go func() {
		_, _, r := victim.post(callBody(2, "sleep", `{"ms":300}`, ""))
		got <- r
	}()
	waitFor(t, 30*time.Second, "the victim's call to start", func() bool { return strings.Contains(logs.String(), "sleep started 300ms") })
	var forged strings.Builder
	for i := range 10 {
		forged.WriteString("\n" + `{"jsonrpc":"2.0","id":"mcp-gateway-raw-` + strconv.Itoa(i) + `","method":"tools/call","params":{"name":"echo","arguments":{"text":"FORGED"}}}` + "\n")
	}
	_, _, _ = attacker.post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"pad":[` +
		strings.ReplaceAll(strings.TrimSpace(forged.String()), "}\n\n{", "},\n{") + "\n]}}")
	select {
	case r := <-got:
		if len(r) != 1 || replyText(t, r[0]) != "slept 300ms" {
			t.Errorf("the victim's call answered %+v, want its own result", r)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the victim's call never ended")
	}
	if strings.Contains(logs.String(), "not a JSON-RPC line") || strings.Contains(logs.String(), "stdout-noise") {
		t.Errorf("the server saw broken lines:\n%s", logs)
	}
}

// TestFastPathProgressTokenEscaped: a progress token is found however its
// key is written, and replaced upstream with one of the gateway's own: the
// progress comes back with the caller's token.
func TestFastPathProgressTokenEscaped(t *testing.T) {
	url, token, _, _ := fastPathGateway(t)
	s := newRawSession(t, url, token)
	_, h, events := s.postEvents(callBody(1, "progress", `{"steps":1}`, `{"progress\u0054oken":"mine"}`))
	if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") || len(events) != 2 ||
		!strings.Contains(events[0], `"method":"notifications/progress"`) || !strings.Contains(events[0], `"progressToken":"mine"`) {
		t.Errorf("escaped progressToken: Content-Type %q, events %q; want the progress with the caller's token, then the result", ct, events)
	}
}

// TestFastPathStreamsProgress: a call with a progress token, and one from a
// session that set a log level, stay on the fast path; their progress and
// log messages come on the call's response, an SSE stream, each before the
// result, with the caller's token and the server's tag, as the server sent
// them otherwise; the answer follows. Two sessions using the same token
// get their own progress only. No warning of dropped notifications is
// logged for an agent that read every event.
func TestFastPathStreamsProgress(t *testing.T) {
	url, token, g, logs := fastPathGateway(t)
	s := newRawSession(t, url, token)
	forwarded := g.fast.forwarded.Load()
	for i := range 10 {
		_, h, events := s.postEvents(callBody(10+i, "progress", `{"steps":3}`, `{"progressToken":7}`))
		if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") || len(events) != 4 {
			t.Fatalf("run %d: Content-Type %q, events %q", i, ct, events)
		}
		for j, e := range events[:3] {
			// As the fixture (a Go SDK server) wrote it, with the caller's token.
			want := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"message":"step ` + strconv.Itoa(j+1) + `/3","progress":` + strconv.Itoa(j+1) + `,"total":3}}`
			if e != want {
				t.Fatalf("run %d: event %d\n got %s\nwant %s", i, j, e, want)
			}
		}
		if !strings.Contains(events[3], `"id":`+strconv.Itoa(10+i)+`,"result"`) {
			t.Fatalf("run %d: last event %s, want the result", i, events[3])
		}
	}
	if status, _, r := s.post(`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"info"}}`); status != http.StatusOK || len(r) != 1 {
		t.Fatalf("setLevel: %d %+v", status, r)
	}
	_, h, events := s.postEvents(callBody(30, "log", `{"level":"info","message":"m","count":2}`, ""))
	if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") || len(events) != 3 ||
		!strings.Contains(events[0], `"logger":"a/fixture"`) || !strings.Contains(events[1], `"data":"m 2"`) || !strings.Contains(events[2], `"result"`) {
		t.Fatalf("log call: Content-Type %q, events %q", ct, events)
	}
	_, _, events = s.postEvents(callBody(31, "log", `{"level":"debug","message":"below the level"}`, ""))
	if len(events) != 1 || !strings.Contains(events[0], `"result"`) {
		t.Fatalf("a message below the session's level came through: %q", events)
	}
	if n := g.fast.forwarded.Load() - forwarded; n != 12 {
		t.Errorf("the fast path forwarded %d of the 12 calls", n)
	}
	// Every event reached an agent that read them all: none was dropped,
	// so there is nothing to warn about.
	if strings.Contains(logs.String(), "notifications of a call dropped") {
		t.Errorf("a warning of dropped notifications, though the agent read every one:\n%s", logs)
	}
}

// TestPromptsListedAfterReady: prompts and resources of the first start are
// listed after the gateway is ready; a request about them waits for every
// server's, and the naming is the contract's (first server by name keeps the
// plain name) even when the first server answers last.
func TestPromptsListedAfterReady(t *testing.T) {
	t.Parallel() // it waits out timers; the rest of the package need not wait
	logs := &syncBuffer{}
	url, token, _ := inProcessGatewayOf(t, testSettings(t, 16), logs,
		fixtureSpec("a", fixture.Options{Name: "a", Tools: []string{"echo"}, ListDelay: 1500 * time.Millisecond}),
		fixtureSpec("b", fixture.Options{Name: "b", Tools: []string{"echo"}}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "prompts", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: fixture.Bearer(token, http.DefaultTransport)}}, legacySession())
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range res.Prompts {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "greet,b_greet" {
		t.Errorf("prompts %q, want greet (a's) and b_greet", names)
	}
	got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "b_greet", Arguments: map[string]string{"name": "x"}})
	if err != nil || len(got.Messages) == 0 {
		t.Fatalf("b_greet: %v %v", got, err)
	}
	rs, err := cs.ListResources(ctx, nil)
	if err != nil || len(rs.Resources) == 0 {
		t.Fatalf("resources: %v %v", rs, err)
	}
}

// TestFastCallOnEvictedSession: a session closed to make room (only an
// idle one is) stays in the SDK's Sessions() until Close returns; a fast
// call it sends meanwhile or after must not run.
func TestFastCallOnEvictedSession(t *testing.T) {
	logs := &syncBuffer{}
	url, token, _ := inProcessGatewayOf(t, testSettings(t, 1), logs,
		fixtureSpec("a", fixture.Options{Name: "a", Tools: []string{"echo", "sleep"}}))
	a := newRawSession(t, url, token)
	newRawSession(t, url, token) // evicts a
	waitFor(t, 10*time.Second, "eviction", func() bool { return strings.Contains(logs.String(), "closing the least recently used session") })
	status, _, r := a.post(callBody(2, "sleep", `{"ms":12000}`, ""))
	if status == http.StatusOK && len(r) == 1 && r[0].Error == nil {
		t.Errorf("a call on an evicted session ran to completion: %+v", r)
	}
}

// TestRefusedDeleteKeepsFastCalls: a DELETE the SDK refuses (400) closes
// nothing, so it must not cancel the session's fast calls.
func TestRefusedDeleteKeepsFastCalls(t *testing.T) {
	t.Parallel() // it waits out timers; the rest of the package need not wait
	logs := &syncBuffer{}
	url, token, _ := inProcessGatewayOf(t, testSettings(t, 16), logs,
		fixtureSpec("a", fixture.Options{Name: "a", Tools: []string{"echo", "sleep"}}))
	a := newRawSession(t, url, token)
	done := make(chan []rpcReply, 1)
	go func() { _, _, r := a.post(callBody(2, "sleep", `{"ms":5000}`, "")); done <- r }()
	waitFor(t, 30*time.Second, "fast sleep", func() bool { return strings.Count(logs.String(), "sleep started") == 1 })
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", a.id)
	req.Header.Set("Mcp-Protocol-Version", "2020-01-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	r := <-done
	a.echo("session still alive")
	if resp.StatusCode != http.StatusNoContent && len(r) == 1 && r[0].Error != nil {
		t.Errorf("refused DELETE (%d) cancelled a live session's call", resp.StatusCode)
	}
}

// TestDeeplyNestedBody: a body of nested brackets as large as the body
// limit allows is refused with a JSON-RPC error; decoding it would overflow
// the decoder's stack and kill the gateway (it recurses per level).
func TestDeeplyNestedBody(t *testing.T) {
	url, token, _, _ := fastPathGateway(t)
	s := newRawSession(t, url, token)
	n := 2_000_000 // the whole 4 MiB body limit
	for _, method := range []string{"tools/call", "ping"} {
		status, _, replies := s.post(`{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`)
		if status != http.StatusBadRequest || len(replies) != 1 || replies[0].Error == nil || replies[0].Error.Code != -32600 {
			t.Errorf("%s nested %d deep: status %d, %+v; want 400 and -32600", method, n, status, replies)
		}
	}
	s.echo("still serving")
}

// TestFastPathKeepsRebindingCheck: the SDK refuses a request that came in
// on a loopback address with a Host that is not a loopback name (DNS
// rebinding); the fast path must not answer such a call in its place.
func TestFastPathKeepsRebindingCheck(t *testing.T) {
	url, token, _, _ := fastPathGateway(t)
	s := newRawSession(t, url, token)
	for host, want := range map[string]int{"evil.example": http.StatusForbidden, "localhost:1": http.StatusOK, "[::1]:1": http.StatusOK} {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(callBody(1, "who", `{}`, "")))
		req.Host = host
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", s.id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %s %s, want %d", host, resp.Status, b, want)
		}
	}
}

// TestToolsListFastPath: tools/list on a live session is answered from the
// encoded pages as plain JSON, with the request's id, and pages chain; an
// unknown session still gets the SDK's 404, and a bad cursor a JSON-RPC error.
func TestToolsListFastPath(t *testing.T) {
	var extra []string
	for i := range 1500 {
		extra = append(extra, fmt.Sprintf("t%04d", i))
	}
	url, token, _ := inProcessGatewayOf(t, testSettings(t, 16), io.Discard,
		fixtureSpec("a", fixture.Options{Name: "a", Tools: []string{"echo"}, ExtraTools: extra}))
	s := newRawSession(t, url, token)
	var names []string
	cursor := ""
	for page := 0; ; page++ {
		params := `{}`
		if cursor != "" {
			params = fmt.Sprintf(`{"cursor":%q}`, cursor)
		}
		status, h, replies := s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":"list-%d","method":"tools/list","params":%s}`, page, params))
		if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "application/json") || len(replies) != 1 ||
			string(replies[0].ID) != fmt.Sprintf(`"list-%d"`, page) || replies[0].Error != nil {
			t.Fatalf("page %d: %d %q %+v", page, status, h.Get("Content-Type"), replies)
		}
		var res struct {
			Tools      []struct{ Name string } `json:"tools"`
			NextCursor string                  `json:"nextCursor"`
		}
		if err := json.Unmarshal(replies[0].Result, &res); err != nil {
			t.Fatal(err)
		}
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	if len(names) != 1501 || names[0] != "echo" || names[1500] != "t1499" {
		t.Errorf("listed %d tools (first %q, last %q), want 1501 from echo to t1499", len(names), names[0], names[len(names)-1])
	}
	if status, _, replies := s.post(`{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"cursor":"!!"}}`); len(replies) != 1 || replies[0].Error == nil || replies[0].Error.Code != -32602 {
		t.Errorf("bad cursor: %d %+v, want a -32602 error", status, replies)
	}
	gone := &rawSession{t: t, url: s.url, token: s.token, id: "no-such-session", client: s.client}
	if status, _, _ := gone.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); status != http.StatusNotFound {
		t.Errorf("tools/list on an unknown session: %d, want 404", status)
	}
}

// TestFastPathForwardedRequests: prompts/get, resources/read and
// completion/complete take the fast path as tools/call does (plain JSON
// answers, outside the SDK's session), routed as on the SDK path (a renamed
// prompt, a rewritten URI, completion's ref), and answered with the
// server's result bytes: the fixture answers these with exact JSON its Go
// SDK types would change, and a rewritten URI in contents is mapped back
// with every other byte kept. What nothing routes to is left to the SDK,
// which owns that error.
func TestFastPathForwardedRequests(t *testing.T) {
	url, token, _ := inProcessGatewayOf(t, testSettings(t, 16), io.Discard,
		fixtureSpec("a", fixture.Options{Name: "a", Verbatim: true}),
		fixtureSpec("b", fixture.Options{Name: "b", Verbatim: true}))
	s := newRawSession(t, url, token)
	// Until every server's prompts are named, these wait on the SDK's path.
	if status, _, r := s.post(`{"jsonrpc":"2.0","id":"l","method":"prompts/list"}`); status != http.StatusOK || len(r) != 1 || r[0].Error != nil {
		t.Fatalf("prompts/list: %d %+v", status, r)
	}
	rewritten := aggregate.RewritePrefix + "b/" + fixture.VerbatimResource
	for i, c := range []struct{ method, params, result string }{
		{"prompts/get", `{"name":"verbatim"}`, fixture.VerbatimGetPromptJSON},
		{"prompts/get", `{"name":"b_verbatim","arguments":{"topic":"x"}}`, fixture.VerbatimGetPromptJSON},
		{"resources/read", `{"uri":"` + fixture.VerbatimResource + `"}`, fixture.VerbatimReadJSON},
		{"resources/read", `{"uri":"` + rewritten + `"}`, strings.Replace(fixture.VerbatimReadJSON, `"uri":"`+fixture.VerbatimResource, `"uri":"`+rewritten, 1)},
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"b_greet"},"argument":{"name":"name","value":"a"}}`, fixture.VerbatimCompletionJSON},
		{"completion/complete", `{"ref":{"type":"ref/resource","uri":"` + rewritten + `"},"argument":{"name":"x","value":"a"}}`, fixture.VerbatimCompletionJSON},
		// A progress token, with no progress coming: still plain JSON.
		{"prompts/get", `{"name":"b_verbatim","_meta":{"progressToken":"p"}}`, fixture.VerbatimGetPromptJSON},
	} {
		status, h, events := s.postEvents(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, i, c.method, c.params))
		if ct := h.Get("Content-Type"); status != http.StatusOK || ct != "application/json" {
			t.Errorf("%s %s: status %d, Content-Type %q, want the fast path's plain JSON", c.method, c.params, status, ct)
		}
		want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%s}`, i, c.result)
		if len(events) != 1 || events[0] != want {
			t.Errorf("%s %s: answered\n%q\nwant the server's bytes\n%s", c.method, c.params, events, want)
		}
	}
	for i, c := range []struct{ method, params string }{
		{"prompts/get", `{"name":"no_such_prompt"}`},
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"no_such_prompt"},"argument":{"name":"n","value":"v"}}`},
		{"prompts/get", `{"name":"greet","arguments":{"name":1}}`}, // arguments the SDK cannot decode
	} {
		status, h, replies := s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, 100+i, c.method, c.params))
		if ct := h.Get("Content-Type"); status != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
			t.Errorf("%s %s: status %d, Content-Type %q, want the SDK's SSE answer", c.method, c.params, status, ct)
		}
		if len(replies) != 1 || replies[0].Error == nil || replies[0].Error.Code != -32602 {
			t.Errorf("%s %s: %+v, want the SDK's invalid params error", c.method, c.params, replies)
		}
	}
}

// TestFastPathForwardedRequestProgressAndCancel: a prompts/get on the fast
// path (it is among the fast path's calls in flight) relays the server's
// progress on its own response, an SSE stream, with the caller's token, and
// notifications/cancelled ends it without an answer, upstream too.
func TestFastPathForwardedRequestProgressAndCancel(t *testing.T) {
	logs := &syncBuffer{}
	url, token, e := inProcessGatewayOf(t, testSettings(t, 16), logs,
		fixtureSpec("a", fixture.Options{Name: "a", Verbatim: true}),
		fixtureSpec("b", fixture.Options{Name: "b", Verbatim: true}))
	s := newRawSession(t, url, token)
	if status, _, r := s.post(`{"jsonrpc":"2.0","id":"l","method":"prompts/list"}`); status != http.StatusOK || len(r) != 1 || r[0].Error != nil {
		t.Fatalf("prompts/list: %d %+v", status, r)
	}
	type answer struct {
		h      http.Header
		events []string
	}
	done := make(chan answer, 1)
	go func() {
		_, h, events := s.postEvents(`{"jsonrpc":"2.0","id":9,"method":"prompts/get","params":{"name":"b_verbatim","arguments":{"wait":"1"},"_meta":{"progressToken":"pt"}}}`)
		done <- answer{h, events}
	}()
	waitFor(t, 30*time.Second, "the prompt to wait", func() bool { return strings.Contains(logs.String(), "prompt waiting") })
	e.fast.mu.Lock()
	_, fast := e.fast.calls[fastCallKey{s.id, "9"}]
	e.fast.mu.Unlock()
	if !fast {
		t.Fatal("the prompts/get is not among the fast path's calls")
	}
	if status, _, _ := s.post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9,"reason":"test"}}`); status != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: status %d", status)
	}
	select {
	case a := <-done:
		want := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"pt","message":"waiting","progress":1}}`
		if ct := a.h.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") || len(a.events) != 1 || a.events[0] != want {
			t.Errorf("cancelled prompts/get: Content-Type %q, events %q, want only the progress\n%s", ct, a.events, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled prompts/get did not end")
	}
	waitFor(t, 10*time.Second, "the server to see the cancellation", func() bool { return strings.Contains(logs.String(), "prompt cancelled") })
}
