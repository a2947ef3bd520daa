package aggregate_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/supervisor"
)

// TestInstructionsReachTheAgent: a server's instructions tell the model how
// to use its tools. With one server that has them, the agent gets them as
// the server wrote them; with several, each under its server's name.
func TestInstructionsReachTheAgent(t *testing.T) {
	const text = "Call echo first.\nThen anything else."
	url, _ := startGateway(t, map[string]fixture.Options{"a": {Instructions: text}, "b": {}})
	if got := connect(t, url, nil).InitializeResult().Instructions; got != text {
		t.Fatalf("instructions = %q, want the server's verbatim %q", got, text)
	}
	url, _ = startGateway(t, map[string]fixture.Options{"a": {Instructions: "Use A."}, "b": {Instructions: "Use B."}})
	got := connect(t, url, nil).InitializeResult().Instructions
	want := "## Server \"a\"\n\nUse A.\n\n## Server \"b\"\n\nUse B."
	if got != want {
		t.Fatalf("instructions = %q, want %q", got, want)
	}
}

// rawRequest sends one request on a session with plain HTTP and returns
// the raw JSON of its result, as the agent's client receives it.
func rawRequest(t *testing.T, url, sid, method, params string) json.RawMessage {
	t.Helper()
	resp := rawPost(t, url, sid, `{"jsonrpc":"2.0","id":7,"method":"`+method+`","params":`+params+`}`)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var msg struct {
			ID     any             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal([]byte(data), &msg) == nil && msg.ID != nil {
			if msg.Error != nil {
				t.Fatalf("%s: error %s", method, msg.Error)
			}
			return msg.Result
		}
	}
	t.Fatalf("%s: no response in %q", method, body)
	return nil
}

// rawItem returns the item of a list result whose key member is value, as
// its bytes.
func rawItem(t *testing.T, res json.RawMessage, member, key, value string) string {
	t.Helper()
	var page map[string]json.RawMessage
	var items []json.RawMessage
	if err := json.Unmarshal(res, &page); err != nil {
		t.Fatalf("list result %s: %v", res, err)
	}
	if err := json.Unmarshal(page[member], &items); err != nil {
		t.Fatalf("list result %s: %v", res, err)
	}
	for _, it := range items {
		var m map[string]any
		if json.Unmarshal(it, &m) == nil && m[key] == value {
			return string(it)
		}
	}
	t.Fatalf("no %s with %s %q in %s", member, key, value, res)
	return ""
}

// TestListsAreServedAsListed: tools and prompts reach the agent as the
// server listed them, byte for byte (members the SDK's types do not know,
// such as a tool's execution, stay; no false hints are added; a prompt
// argument keeps "required":false); only a renamed item's name changes.
func TestListsAreServedAsListed(t *testing.T) {
	url, _ := startGateway(t, map[string]fixture.Options{"a": {Verbatim: true}, "b": {Verbatim: true}})
	sid := rawInitialize(t, url)
	tools := rawRequest(t, url, sid, "tools/list", `{}`)
	if got := rawItem(t, tools, "tools", "name", "verbatim"); got != fixture.VerbatimToolJSON {
		t.Errorf("tool as served:\n%s\nas listed:\n%s", got, fixture.VerbatimToolJSON)
	}
	renamed := strings.Replace(fixture.VerbatimToolJSON, `"name":"verbatim"`, `"name":"b_verbatim"`, 1)
	if got := rawItem(t, tools, "tools", "name", "b_verbatim"); got != renamed {
		t.Errorf("renamed tool as served:\n%s\nwant:\n%s", got, renamed)
	}
	prompts := rawRequest(t, url, sid, "prompts/list", `{}`)
	if got := rawItem(t, prompts, "prompts", "name", "verbatim"); got != fixture.VerbatimPromptJSON {
		t.Errorf("prompt as served:\n%s\nas listed:\n%s", got, fixture.VerbatimPromptJSON)
	}
}

// TestResultsAreRelayedAsSent: results reach the agent as the server sent
// them: resources/read gains no ttlMs or cacheScope, completion/complete
// keeps "hasMore":false.
func TestResultsAreRelayedAsSent(t *testing.T) {
	url, _ := startGateway(t, map[string]fixture.Options{"a": {Verbatim: true}})
	sid := rawInitialize(t, url)
	if got := rawRequest(t, url, sid, "resources/read", `{"uri":"`+fixture.VerbatimResource+`"}`); string(got) != fixture.VerbatimReadJSON {
		t.Errorf("resources/read result:\n%s\nas sent:\n%s", got, fixture.VerbatimReadJSON)
	}
	got := rawRequest(t, url, sid, "completion/complete", `{"ref":{"type":"ref/prompt","name":"verbatim"},"argument":{"name":"topic","value":"a"}}`)
	if string(got) != fixture.VerbatimCompletionJSON {
		t.Errorf("completion/complete result:\n%s\nas sent:\n%s", got, fixture.VerbatimCompletionJSON)
	}
}

// initializeWith opens a session with plain HTTP whose client declares caps
// (a JSON object) and returns its id.
func initializeWith(t *testing.T, url, caps string) string {
	t.Helper()
	resp := rawPost(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"clientInfo":{"name":"raw","version":"1"}}}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatal("no session id")
	}
	rawPost(t, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()
	return sid
}

// streamCall posts a tools/call and sends each SSE event's data on the
// returned channel as it arrives; the channel closes with the response.
func streamCall(t *testing.T, url, sid, params string) <-chan string {
	t.Helper()
	resp := rawPost(t, url, sid, `{"jsonrpc":"2.0","id":50,"method":"tools/call","params":`+params+`}`)
	events := make(chan string, 16)
	go func() {
		defer close(events)
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

// serverRequest is a request the gateway sent the agent.
type serverRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

func nextEvent(t *testing.T, events <-chan string) string {
	t.Helper()
	select {
	case e, ok := <-events:
		if !ok {
			t.Fatal("the call's stream ended early")
		}
		return e
	case <-time.After(20 * time.Second):
		t.Fatal("timed out waiting for the call's stream")
	}
	return ""
}

// TestElicitationRelayedAsSent: an elicitation reaches the agent as the
// server sent it (a form's fields in the server's order, which is the order
// a UI shows them in), and URL-mode elicitation works: the gateway offers
// it upstream, and a server asking an agent without it gets an error at
// once.
func TestElicitationRelayedAsSent(t *testing.T) {
	url, _ := startGateway(t, map[string]fixture.Options{"a": {Verbatim: true}})

	sid := initializeWith(t, url, `{"elicitation":{"form":{},"url":{}}}`)
	events := streamCall(t, url, sid, `{"name":"elicit_ordered","arguments":{}}`)
	var req serverRequest
	if err := json.Unmarshal([]byte(nextEvent(t, events)), &req); err != nil || req.Method != "elicitation/create" {
		t.Fatalf("first event is not the elicitation: %+v %v", req, err)
	}
	var p struct {
		RequestedSchema json.RawMessage `json:"requestedSchema"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil || string(p.RequestedSchema) != fixture.ElicitOrderSchema {
		t.Errorf("requestedSchema as relayed:\n%s\nas sent:\n%s", p.RequestedSchema, fixture.ElicitOrderSchema)
	}
	rawPost(t, url, sid, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"action":"accept","content":{"zeta":"z","alpha":"a","mid":true}}}`).Body.Close()
	if res := nextEvent(t, events); !strings.Contains(res, `accept {\"alpha\":\"a\",\"mid\":true,\"zeta\":\"z\"}`) {
		t.Errorf("elicit_ordered result: %s", res)
	}

	events = streamCall(t, url, sid, `{"name":"elicit_url","arguments":{}}`)
	if err := json.Unmarshal([]byte(nextEvent(t, events)), &req); err != nil || req.Method != "elicitation/create" || !strings.Contains(string(req.Params), `"url":"https://example.com/login"`) {
		t.Fatalf("first event is not the URL elicitation: %+v %v", req, err)
	}
	rawPost(t, url, sid, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"action":"accept"}}`).Body.Close()
	if res := nextEvent(t, events); !strings.Contains(res, "url elicitation: accept") {
		t.Errorf("elicit_url result: %s", res)
	}

	formOnly := initializeWith(t, url, `{"elicitation":{"form":{}}}`)
	events = streamCall(t, url, formOnly, `{"name":"elicit_url","arguments":{}}`)
	if res := nextEvent(t, events); !strings.Contains(res, "elicitation failed") || !strings.Contains(res, "does not support URL elicitation") {
		t.Errorf("elicit_url from a client without URL mode: %s", res)
	}
}

// TestRootsOutsideACall: a server that asks roots/list outside any call (at
// start, or after roots/list_changed, as server-filesystem does) gets the
// roots of the only agent session connected; an agent with roots arriving
// makes the servers ask again.
func TestRootsOutsideACall(t *testing.T) {
	url, log := startGateway(t, map[string]fixture.Options{"a": {AskRoots: true}})
	c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	c.AddRoots(&mcp.Root{URI: "file:///work/one", Name: "one"})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// The server asked at its start, before any agent; the agent's arrival
	// makes it ask again.
	waitFor(t, "the server to get the roots of the agent that connected", func() bool {
		return strings.Contains(log.String(), "fixture: roots now [file:///work/one]")
	})
	c.AddRoots(&mcp.Root{URI: "file:///work/two", Name: "two"})
	waitFor(t, "the server to get the agent's roots", func() bool {
		return strings.Contains(log.String(), "fixture: roots now [file:///work/one file:///work/two]")
	})
}

// startRemoteGateway serves a gateway whose only upstream is the remote
// fixture rem, wired as the command wires remotes.
func startRemoteGateway(t *testing.T, rem *fixture.Remote, token string) string {
	t.Helper()
	g := aggregate.New(aggregate.Options{Logger: zerolog.New(&logs{})})
	r := supervisor.NewRemote(catalog.ServerSpec{Name: "rm", Kind: catalog.KindRemote, URL: rem.URL(), Headers: map[string]string{"Authorization": "Bearer " + token}},
		supervisor.RemoteOptions{
			NewClient:    g.NewClient,
			Intercept:    g.Intercept,
			ServeRequest: g.ServeRequest,
			OnReady: func(ctx context.Context, r *supervisor.Remote, cs *mcp.ClientSession, raw supervisor.RoundTrip) error {
				return g.Sync(ctx, r.Name(), cs, raw)
			},
		})
	g.Add(r)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	if err := r.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
	g.Open()
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.Server() }, nil))
	t.Cleanup(func() {
		for ss := range g.Server().Sessions() {
			ss.Close()
		}
		srv.Close()
		cancel()
		<-done
	})
	return srv.URL
}

// TestRemoteProgressArrivesBeforeResult: every progress notification of a
// call to a remote server reaches the agent before the call's result, as
// for stdio servers.
func TestRemoteProgressArrivesBeforeResult(t *testing.T) {
	rem := fixture.StartRemote(t, fixture.RemoteOptions{Token: "tok", Progress: true})
	url := startRemoteGateway(t, rem, "tok")
	sid := rawInitialize(t, url)
	for i := range 30 {
		events := rawCall(t, url, sid, i+10, `{"name":"progress","arguments":{"steps":3},"_meta":{"progressToken":"p`+strconv.Itoa(i)+`"}}`)
		var kinds []string
		for _, e := range events {
			switch {
			case strings.Contains(e, `"method":"notifications/progress"`):
				kinds = append(kinds, "progress")
			case strings.Contains(e, `"result"`):
				kinds = append(kinds, "result")
			}
		}
		if !slices.Equal(kinds, []string{"progress", "progress", "progress", "result"}) {
			t.Fatalf("run %d: stream order %v, want 3 progress then the result", i, kinds)
		}
	}
}

// TestCancelledCallProgressStillRelayed: after the agent cancels a call,
// the progress the server goes on sending for it still reaches the agent
// with the agent's own token, as it would from a server connected
// directly (on the session's stream: the call's has ended).
func TestCancelledCallProgressStillRelayed(t *testing.T) {
	rem := fixture.StartRemote(t, fixture.RemoteOptions{Token: "tok", Linger: true})
	url := startRemoteGateway(t, rem, "tok")
	progress := make(chan *mcp.ProgressNotificationParams, 10)
	cs := connect(t, url, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		progress <- req.Params
	}})
	ctx, cancel := context.WithCancel(ctxT(t))
	errc := make(chan error, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "linger", Arguments: map[string]any{}}
		params.SetProgressToken("agent-token")
		_, err := cs.CallTool(ctx, params)
		errc <- err
	}()
	next := func(want float64) {
		t.Helper()
		select {
		case p := <-progress:
			if p.ProgressToken != "agent-token" || p.Progress != want {
				t.Fatalf("progress %+v, want %v with the agent's token", p, want)
			}
		case <-ctxT(t).Done():
			t.Fatalf("progress %v never reached the agent", want)
		}
	}
	next(1)
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the cancelled call succeeded")
	}
	next(2)
	next(3)
}

// sessionOf returns the gateway's session with id sid.
func sessionOf(t *testing.T, g *aggregate.Gateway, sid string) *mcp.ServerSession {
	t.Helper()
	for ss := range g.Server().Sessions() {
		if ss.ID() == sid {
			return ss
		}
	}
	t.Fatalf("no session %s", sid)
	return nil
}

// TestTasksRoutedToTheirServer: task-augmented calls and the tasks/*
// methods reach the server that made the task; the two servers' task ids
// (both "1") do not collide; a session sees and reaches only its own tasks;
// the tasks capability is advertised; status notifications reach the
// session with the exported id.
func TestTasksRoutedToTheirServer(t *testing.T) {
	url, _, g := startGatewayG(t, map[string]fixture.Options{"a": {Name: "a", Tasks: true}, "b": {Name: "b", Tasks: true}})
	resp := rawPost(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"tasks":{`) {
		t.Errorf("initialize does not advertise tasks: %s", body)
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	rawPost(t, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()
	ss := sessionOf(t, g, sid)

	// The session's standalone stream, where status notifications go.
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	get, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer get.Body.Close()
	statuses := make(chan string, 8)
	go func() {
		sc := bufio.NewScanner(get.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(d, "notifications/tasks/status") {
				statuses <- d
			}
		}
	}()

	ctx := ctxT(t)
	taskID := func(res json.RawMessage) string {
		var r struct {
			Task struct {
				TaskID string `json:"taskId"`
				Status string `json:"status"`
			} `json:"task"`
		}
		if err := json.Unmarshal(res, &r); err != nil || r.Task.TaskID == "" || r.Task.Status != "working" {
			t.Fatalf("not a created task: %s %v", res, err)
		}
		return r.Task.TaskID
	}
	for _, m := range []string{"tasks/get", "tasks/list"} {
		if !aggregate.IsTaskRequest(m, nil) {
			t.Errorf("IsTaskRequest(%s) = false", m)
		}
	}
	params := `{"name":"task_echo","arguments":{"x":1},"task":{"ttl":60000}}`
	if !aggregate.IsTaskRequest("tools/call", json.RawMessage(params)) || aggregate.IsTaskRequest("tools/call", json.RawMessage(`{"name":"echo"}`)) {
		t.Error("IsTaskRequest does not tell a task-augmented call")
	}
	resA, err := g.Task(ctx, ss, nil, "tools/call", json.RawMessage(params))
	if err != nil {
		t.Fatal(err)
	}
	resB, err := g.Task(ctx, ss, nil, "tools/call", json.RawMessage(`{"name":"b_task_echo","arguments":{"y":2},"task":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	a, b := taskID(resA), taskID(resB)
	if a == b || a == "1" || b == "1" {
		t.Fatalf("task ids %q and %q: the servers' own ids leak or collide", a, b)
	}
	got, err := g.Task(ctx, ss, nil, "tasks/get", json.RawMessage(`{"taskId":"`+b+`"}`))
	if err != nil || !strings.Contains(string(got), `"taskId":"`+b+`"`) {
		t.Fatalf("tasks/get: %s %v", got, err)
	}
	res, err := g.Task(ctx, ss, nil, "tasks/result", json.RawMessage(`{"taskId":"`+a+`"}`))
	if err != nil || !strings.Contains(string(res), `task result of a: {\"x\":1}`) || !strings.Contains(string(res), `/related-task":{"taskId":"`+a+`"}`) {
		t.Fatalf("tasks/result of a: %s %v", res, err)
	}
	res, err = g.Task(ctx, ss, nil, "tasks/result", json.RawMessage(`{"taskId":"`+b+`"}`))
	if err != nil || !strings.Contains(string(res), `task result of b: {\"y\":2}`) {
		t.Fatalf("tasks/result of b: %s %v", res, err)
	}
	list, err := g.Task(ctx, ss, nil, "tasks/list", nil)
	if err != nil || !strings.Contains(string(list), `"taskId":"`+a+`"`) || !strings.Contains(string(list), `"taskId":"`+b+`"`) {
		t.Fatalf("tasks/list: %s %v", list, err)
	}
	for range 2 {
		select {
		case st := <-statuses:
			if !strings.Contains(st, `"taskId":"`+a+`"`) && !strings.Contains(st, `"taskId":"`+b+`"`) {
				t.Errorf("status notification without an exported id: %s", st)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no notifications/tasks/status on the session's stream")
		}
	}

	other := sessionOf(t, g, rawInitialize(t, url))
	if list, err := g.Task(ctx, other, nil, "tasks/list", nil); err != nil || string(list) != `{"tasks":[]}` {
		t.Errorf("another session's tasks/list: %s %v", list, err)
	}
	if _, err := g.Task(ctx, other, nil, "tasks/get", json.RawMessage(`{"taskId":"`+a+`"}`)); err == nil {
		t.Error("another session reached this session's task")
	}
}

// TestInitializeInServerOrder: the initialize result comes in the schema's
// member order (as the TypeScript and Python SDKs' servers send it, not the
// Go SDK type's), and with one server its capabilities are in that server's
// own order, as it sent them: this fixture puts tasks first. The gateway
// adds only what it must (listChanged on each list).
func TestInitializeInServerOrder(t *testing.T) {
	url, _ := startGateway(t, map[string]fixture.Options{"a": {Tasks: true, Instructions: "Use a."}})
	result := initializeResult(t, url)
	if got, want := keysOf(t, result), []string{"protocolVersion", "capabilities", "serverInfo", "instructions"}; !slices.Equal(got, want) {
		t.Errorf("initialize result members %v, want %v: %s", got, want, result)
	}
	caps := capabilitiesOf(t, result)
	if got, want := keysOf(t, caps), []string{"tasks", "logging", "prompts", "resources", "tools"}; !slices.Equal(got, want) {
		t.Errorf("capabilities %s: members %v, want the server's order %v", caps, got, want)
	}
	if !strings.Contains(string(caps), `"resources":{"listChanged":true,"subscribe":true}`) {
		t.Errorf("capabilities %s: resources not as the server sent them", caps)
	}
	// Two servers: each capability as the first server that has it sent
	// it, in the order the servers list them (b adds completions).
	url, _ = startGateway(t, map[string]fixture.Options{"a": {Tasks: true}, "b": {Verbatim: true}})
	caps = capabilitiesOf(t, initializeResult(t, url))
	if got, want := keysOf(t, caps), []string{"tasks", "logging", "prompts", "resources", "tools", "completions"}; !slices.Equal(got, want) {
		t.Errorf("two servers' capabilities %s: members %v, want %v", caps, got, want)
	}
}

// capabilitiesOf returns an initialize result's capabilities as sent.
func capabilitiesOf(t *testing.T, result json.RawMessage) json.RawMessage {
	t.Helper()
	var r struct {
		Capabilities json.RawMessage `json:"capabilities"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		t.Fatal(err)
	}
	return r.Capabilities
}

// initializeResult initializes a session with plain HTTP and returns the
// result as sent.
func initializeResult(t *testing.T, url string) json.RawMessage {
	t.Helper()
	resp := rawPost(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, data, ok := strings.Cut(string(body), "data: ")
	if !ok {
		t.Fatalf("no event in %q", body)
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(strings.SplitN(data, "\n", 2)[0])), &msg); err != nil {
		t.Fatal(err)
	}
	return msg.Result
}

// keysOf returns the names of obj's members, in order.
func keysOf(t *testing.T, obj json.RawMessage) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(obj)))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", obj)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// TestRootsChangeOnceTheAgentCanBeAsked: servers are told that their roots
// changed when an agent with roots can be asked outside any call (over
// HTTP: once its standalone stream is open; SetReachable says so), not
// before. Told at notifications/initialized, a server that asks at once (as
// this fixture and server-everything do) got an empty list, and reported
// that, before it got the agent's roots.
func TestRootsChangeOnceTheAgentCanBeAsked(t *testing.T) {
	url, log, g := startGatewayG(t, map[string]fixture.Options{"a": {AskRoots: true}})
	var reachable atomic.Bool
	g.SetReachable(func(*mcp.ServerSession) bool { return reachable.Load() })
	c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	c.AddRoots(&mcp.Root{URI: "file:///work/one", Name: "one"})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// A round trip through the server, after notifications/initialized.
	if _, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err != nil {
		t.Fatal(err)
	}
	reachable.Store(true)
	g.AgentReachable(sessionOf(t, g, cs.ID()))
	waitFor(t, "the server to get the agent's roots", func() bool {
		return strings.Contains(log.String(), "fixture: roots now [file:///work/one]")
	})
	if strings.Contains(log.String(), "fixture: roots now []") {
		t.Errorf("the server was told of a change before the agent could be asked, and got no roots:\n%s", log.String())
	}
}

// TestLogOutsideACallWithoutLevel: a log message a server sends outside
// any call reaches a session that set no log level (the server chose to
// send it, as it would to a client connected directly; server-everything
// so reports the roots it got), as the server sent it, tagged with the
// server's name before data. A session that set a level still gets only
// what that level admits.
func TestLogOutsideACallWithoutLevel(t *testing.T) {
	url, _, g := startGatewayG(t, map[string]fixture.Options{"a": {}})
	got := make(chan *mcp.LoggingMessageParams, 4)
	quiet := make(chan *mcp.LoggingMessageParams, 4)
	connect(t, url, &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) { got <- r.Params }})
	picky := connect(t, url, &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) { quiet <- r.Params }})
	if err := picky.SetLoggingLevel(ctxT(t), &mcp.SetLoggingLevelParams{Level: "error"}); err != nil {
		t.Fatal(err)
	}
	g.Intercept("a", &jsonrpc.Request{Method: "notifications/message", Params: json.RawMessage(`{"level":"info","data":"roots updated"}`)})
	select {
	case p := <-got:
		if p.Logger != "a" || p.Data != "roots updated" || p.Level != "info" {
			t.Errorf("the session without a level got %+v", p)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the session that set no level got no log message")
	}
	g.Intercept("a", &jsonrpc.Request{Method: "notifications/message", Params: json.RawMessage(`{"level":"error","data":"bad"}`)})
	select {
	case p := <-quiet:
		if p.Data != "bad" {
			t.Errorf("the session at level error got %+v, want only the error", p)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the session at level error got no error message")
	}
}
