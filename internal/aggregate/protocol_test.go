package aggregate_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/supervisor"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

func TestMain(m *testing.M) {
	fixture.RunIfRequested()
	os.Exit(m.Run())
}

// logs collects the gateway's log, where servers' stderr lands.
type logs = fixture.Log

// waitFor polls cond until it holds or the test's deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startGateway runs real fixture servers under supervisors behind an
// aggregate gateway served over streamable HTTP on 127.0.0.1, the way the
// command wires them, and returns its URL.
func startGateway(t *testing.T, servers map[string]fixture.Options) (url string, log *logs) {
	t.Helper()
	url, log, _ = startGatewayG(t, servers)
	return url, log
}

// startGatewayG is startGateway that also returns the gateway.
func startGatewayG(t *testing.T, servers map[string]fixture.Options) (url string, log *logs, g *aggregate.Gateway) {
	t.Helper()
	return startGatewayOpts(t, servers, aggregate.Options{})
}

// startGatewayOpts is startGatewayG with the gateway's options (its logger
// is set here, with the trace ids hook the command's logger has).
func startGatewayOpts(t *testing.T, servers map[string]fixture.Options, opts aggregate.Options) (url string, log *logs, g *aggregate.Gateway) {
	t.Helper()
	log = &logs{}
	logger := zerolog.New(log).Hook(telemetry.LogHook{})
	opts.Logger = logger
	g = aggregate.New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var sups []*supervisor.Server
	for name, fx := range servers {
		argv, env := fixture.Command(fx)
		envs := map[string]string{}
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			envs[k] = v
		}
		s := supervisor.New(catalog.ServerSpec{Name: name, Kind: catalog.KindLocal, Command: argv, Env: envs}, supervisor.Options{
			Logger:       logger,
			NewClient:    g.NewClient,
			Intercept:    g.Intercept,
			ServeRequest: g.ServeRequest,
			OnReady: func(ctx context.Context, s *supervisor.Server, cs *mcp.ClientSession, raw supervisor.RoundTrip) error {
				return g.Sync(ctx, s.Name(), cs, raw)
			},
		})
		g.Add(s)
		sups = append(sups, s)
		wg.Go(func() { s.Run(ctx) })
	}
	for _, s := range sups {
		if err := s.WaitStarted(ctx); err != nil {
			t.Fatalf("start %s: %v", s.Name(), err)
		}
	}
	g.Open()
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.Server() }, nil))
	t.Cleanup(func() {
		for ss := range g.Server().Sessions() {
			ss.Close()
		}
		srv.Close()
		cancel()
		wg.Wait()
	})
	return srv.URL, log, g
}

func connect(t *testing.T, url string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func textOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res == nil || len(res.Content) == 0 {
		t.Fatalf("empty result: %+v", res)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestProgressArrivesBeforeResult checks the wire: on the SSE stream of a
// tools/call POST, every progress notification of the call comes before its
// result. The SDK's client side hands results over at once but queues
// notifications, so a plain forwarding proxy loses this race in about a
// quarter of runs (see the notes); clients then show 2 of 3 updates. The
// check reads the stream itself, since a Go SDK client has the same race.
func TestProgressArrivesBeforeResult(t *testing.T) {
	url, _ := startGateway(t, map[string]fixture.Options{"a": {}})
	sid := rawInitialize(t, url)
	for i := range 30 {
		events := rawCall(t, url, sid, i+10, `{"name":"progress","arguments":{"steps":3},"_meta":{"progressToken":"p`+strconv.Itoa(i)+`"}}`)
		var kinds []string
		for _, e := range events {
			switch {
			case strings.Contains(e, `"method":"notifications/progress"`):
				if !strings.Contains(e, `"progressToken":"p`+strconv.Itoa(i)+`"`) {
					t.Fatalf("run %d: progress with a foreign token: %s", i, e)
				}
				kinds = append(kinds, "progress")
			case strings.Contains(e, `"result"`):
				kinds = append(kinds, "result")
			}
		}
		if !slices.Equal(kinds, []string{"progress", "progress", "progress", "result"}) {
			t.Fatalf("run %d: stream order %v, want 3 progress then the result", i, kinds)
		}
	}
	// Log messages of a call travel the same way.
	resp := rawPost(t, url, sid, `{"jsonrpc":"2.0","id":99,"method":"logging/setLevel","params":{"level":"info"}}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	for i := range 10 {
		events := rawCall(t, url, sid, 100+i, `{"name":"log","arguments":{"level":"info","message":"m","count":2}}`)
		var kinds []string
		for _, e := range events {
			switch {
			case strings.Contains(e, `"method":"notifications/message"`):
				kinds = append(kinds, "log")
			case strings.Contains(e, `"result"`):
				kinds = append(kinds, "result")
			}
		}
		if !slices.Equal(kinds, []string{"log", "log", "result"}) {
			t.Fatalf("log run %d: stream order %v, want 2 logs then the result", i, kinds)
		}
	}
}

// rawInitialize opens a session with plain HTTP and returns its id.
func rawInitialize(t *testing.T, url string) string {
	t.Helper()
	resp := rawPost(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatal("no session id")
	}
	resp = rawPost(t, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	return sid
}

func rawPost(t *testing.T, url, sid, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// rawCall posts a tools/call and returns the data of each SSE event of the
// response, in order.
func rawCall(t *testing.T, url, sid string, id int, params string) []string {
	t.Helper()
	resp := rawPost(t, url, sid, `{"jsonrpc":"2.0","id":`+strconv.Itoa(id)+`,"method":"tools/call","params":`+params+`}`)
	defer resp.Body.Close()
	var events []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, data)
		}
	}
	return events
}

// TestProgressOfConcurrentCallsStaysSeparate: two calls on one session, each
// with its own token, get exactly their own notifications.
func TestProgressOfConcurrentCallsStaysSeparate(t *testing.T) {
	url, _ := startGateway(t, map[string]fixture.Options{"a": {}})
	var mu sync.Mutex
	got := map[any][]float64{}
	cs := connect(t, url, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		got[req.Params.ProgressToken] = append(got[req.Params.ProgressToken], req.Params.Progress)
		mu.Unlock()
	}})
	ctx := ctxT(t)
	var wg sync.WaitGroup
	for _, c := range []struct {
		token any
		steps int
	}{{"one", 4}, {2, 6}} {
		wg.Go(func() {
			p := &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{"steps": c.steps, "delayMs": 20}}
			p.SetProgressToken(c.token)
			if _, err := cs.CallTool(ctx, p); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// The Go SDK client hands results over before it has handled the
	// notifications that preceded them (the wire order is checked in
	// TestProgressArrivesBeforeResult); wait for the handler to catch up.
	waitFor(t, "all progress notifications", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got["one"]) >= 4 && len(got[float64(2)])+len(got[int64(2)]) >= 6
	})
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got["one"], []float64{1, 2, 3, 4}) || !slices.Equal(got[float64(2)], []float64{1, 2, 3, 4, 5, 6}) && !slices.Equal(got[int64(2)], []float64{1, 2, 3, 4, 5, 6}) {
		t.Errorf("progress per token = %v", got)
	}
}

// TestCancellationReachesUpstream: an agent's notifications/cancelled ends
// the upstream handler (the fixture logs it on stderr).
func TestCancellationReachesUpstream(t *testing.T) {
	url, log := startGateway(t, map[string]fixture.Options{"a": {}})
	cs := connect(t, url, nil)
	ctx, cancel := context.WithCancel(ctxT(t))
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 60000}})
		errc <- err
	}()
	waitFor(t, "the upstream to start sleeping", func() bool { return strings.Contains(log.String(), "sleep started") })
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("cancelled call succeeded")
	}
	waitFor(t, "the upstream to see the cancellation", func() bool { return strings.Contains(log.String(), "sleep cancelled") })
	// The session still works.
	res, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "after"}})
	if err != nil || textOf(t, res) != "after" {
		t.Fatalf("call after cancel: %v %v", res, err)
	}
}

// TestListChangedAfterUpstreamAddsTool: a server adding a tool makes the
// gateway re-list it and tell the agent; existing names stay.
func TestListChangedAfterUpstreamAddsTool(t *testing.T) {
	url, _ := startGateway(t, map[string]fixture.Options{"a": {ExtraTools: []string{"shared"}}, "b": {ExtraTools: []string{"shared"}}})
	changed := make(chan struct{}, 10)
	cs := connect(t, url, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	ctx := ctxT(t)
	names := func() []string {
		var n []string
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			n = append(n, tool.Name)
		}
		return n
	}
	before := names()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "b_add_tool", Arguments: map[string]any{"name": "fresh"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no tools/list_changed reached the agent")
	}
	var after []string
	waitFor(t, "the new tool in tools/list", func() bool { after = names(); return slices.Contains(after, "fresh") })
	for _, n := range before {
		if !slices.Contains(after, n) {
			t.Errorf("tool %q disappeared or was renamed after list_changed", n)
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fresh"})
	if err != nil || textOf(t, res) != "fixture:fresh" {
		t.Fatalf("call fresh: %v %v", res, err)
	}
}

// TestSamplingRoundTrip: an upstream's sampling request during a call goes
// to the calling agent and its answer comes back; an agent without sampling
// gives the upstream a proper error, not a hang.
func TestSamplingRoundTrip(t *testing.T) {
	url, _ := startGateway(t, map[string]fixture.Options{"a": {}})
	cs := connect(t, url, &mcp.ClientOptions{CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		in := req.Params.Messages[0].Content.(*mcp.TextContent).Text
		return &mcp.CreateMessageResult{Model: "test", Role: "assistant", Content: &mcp.TextContent{Text: "echo of " + in}}, nil
	}})
	ctx := ctxT(t)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sample", Arguments: map[string]any{"prompt": "2+2"}})
	if err != nil || textOf(t, res) != "model said: echo of 2+2" {
		t.Fatalf("sample: %v %v", res, err)
	}
	plain := connect(t, url, nil)
	res, err = plain.CallTool(ctx, &mcp.CallToolParams{Name: "sample", Arguments: map[string]any{"prompt": "x"}})
	if err != nil || !res.IsError || !strings.Contains(textOf(t, res), "not") {
		t.Fatalf("sample without sampling support: %v %q", err, textOf(t, res))
	}
}

func TestElicitationRoundTrip(t *testing.T) {
	url, _ := startGateway(t, map[string]fixture.Options{"a": {}})
	cs := connect(t, url, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "yes to " + req.Params.Message}}, nil
	}})
	res, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "elicit", Arguments: map[string]any{"message": "proceed?"}})
	if err != nil || textOf(t, res) != "accept: yes to proceed?" {
		t.Fatalf("elicit: %v %v", res, err)
	}
}

// TestLoggingTaggedAndOrdered: log messages sent during a call arrive before
// its result, tagged with the server's name, filtered by setLevel.
func TestLoggingTaggedAndOrdered(t *testing.T) {
	url, _ := startGateway(t, map[string]fixture.Options{"a": {}})
	var mu sync.Mutex
	var got []*mcp.LoggingMessageParams
	cs := connect(t, url, &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
		mu.Lock()
		got = append(got, req.Params)
		mu.Unlock()
	}})
	ctx := ctxT(t)
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "log", Arguments: map[string]any{"level": "debug", "message": "hidden"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "log", Arguments: map[string]any{"level": "warning", "message": "seen", "count": 3}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "3 log messages", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= 3 })
	time.Sleep(50 * time.Millisecond) // a stray debug message would show up now
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 {
		t.Fatalf("got %d log messages, want 3 (debug filtered): %+v", len(got), got)
	}
	for i, m := range got {
		if m.Logger != "a/fixture" || m.Data != "seen "+string(rune('1'+i)) {
			t.Errorf("message %d = %+v, want logger a/fixture, data %q", i, m, "seen "+string(rune('1'+i)))
		}
	}
}

// TestLogLevelFollowsLiveSessions: the servers get the most verbose log
// level any live session set: debug while a session at debug is
// connected; once it has closed, another session's logging/setLevel, the
// same level it set before, lowers the servers' level to its own.
func TestLogLevelFollowsLiveSessions(t *testing.T) {
	url, _, g := startGatewayG(t, map[string]fixture.Options{"a": {}})
	ctx := ctxT(t)
	verbose := connect(t, url, nil)
	if err := verbose.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	picky := connect(t, url, nil)
	setError := func() {
		t.Helper()
		if err := picky.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "error"}); err != nil {
			t.Fatal(err)
		}
	}
	setError()
	if lvl := g.UpstreamLogLevel(); lvl != "debug" {
		t.Fatalf("the servers' level with sessions at debug and error: %q, want debug", lvl)
	}
	setError() // the same again: nothing changes
	if lvl := g.UpstreamLogLevel(); lvl != "debug" {
		t.Fatalf("the servers' level after error was set again: %q, want debug", lvl)
	}
	if err := verbose.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the servers' level to follow the live sessions (error)", func() bool {
		setError()
		return g.UpstreamLogLevel() == "error"
	})
}

// TestPromptsAndResourcesMerged: prompts follow the tools' naming rule;
// resources keep their URIs, and a URI two servers publish stays reachable
// for the later one under the rewritten form.
func TestPromptsAndResourcesMerged(t *testing.T) {
	url, _ := startGateway(t, map[string]fixture.Options{"a": {Name: "a"}, "b": {Name: "b"}})
	cs := connect(t, url, nil)
	ctx := ctxT(t)
	init := cs.InitializeResult().Capabilities
	if init.Prompts == nil || init.Resources == nil || !init.Resources.Subscribe || init.Logging == nil || init.Completions != nil {
		t.Errorf("advertised capabilities %+v do not match the upstreams' union", init)
	}
	var prompts []string
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, p.Name)
	}
	if !slices.Equal(prompts, []string{"greet", "b_greet"}) {
		t.Errorf("prompts = %v, want [greet b_greet]", prompts)
	}
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "b_greet", Arguments: map[string]string{"name": "Ada"}})
	if err != nil || pr.Description != "greeting from b" {
		t.Fatalf("get b_greet: %+v %v", pr, err)
	}
	var uris []string
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
	}
	rewritten := aggregate.RewritePrefix + "b/" + fixture.SharedResourceURI
	for _, want := range []string{fixture.ResourceURI("a"), fixture.ResourceURI("b"), fixture.SharedResourceURI, rewritten} {
		if !slices.Contains(uris, want) {
			t.Errorf("resources lack %q: %v", want, uris)
		}
	}
	read := func(uri string) string {
		t.Helper()
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		if res.Contents[0].URI != uri {
			t.Errorf("read %s: contents carry URI %q", uri, res.Contents[0].URI)
		}
		return res.Contents[0].Text
	}
	if got := read(fixture.SharedResourceURI); got != "readme of a" {
		t.Errorf("shared URI read %q, want a's", got)
	}
	if got := read(rewritten); got != "readme of b" {
		t.Errorf("rewritten URI read %q, want b's", got)
	}
	if got := read(fixture.ResourceURI("b")); got != "fixture server b" {
		t.Errorf("b's info read %q", got)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "nope://x"}); err == nil {
		t.Error("reading an unknown URI succeeded")
	}
}

// TestResourceSubscription: resources/updated from a server reaches the
// subscribed session, under the URI it subscribed to.
func TestResourceSubscription(t *testing.T) {
	url, log := startGateway(t, map[string]fixture.Options{"a": {Name: "a"}, "b": {Name: "b"}})
	updated := make(chan string, 10)
	cs := connect(t, url, &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
		updated <- req.Params.URI
	}})
	ctx := ctxT(t)
	rewritten := aggregate.RewritePrefix + "b/" + fixture.SharedResourceURI
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: rewritten}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b to see the subscription", func() bool {
		return strings.Contains(log.String(), `"server":"b"`) && strings.Contains(log.String(), "subscribed "+fixture.SharedResourceURI)
	})
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "b_touch", Arguments: map[string]any{"uri": fixture.SharedResourceURI}}); err != nil {
		t.Fatal(err)
	}
	select {
	case uri := <-updated:
		if uri != rewritten {
			t.Errorf("update for %q, want %q", uri, rewritten)
		}
	case <-ctx.Done():
		t.Fatal("resources/updated never reached the subscribed session")
	}
}

// TestRootsFromSessions: a server asking roots/list gets the agents' roots.
func TestRootsFromSessions(t *testing.T) {
	url, _ := startGateway(t, map[string]fixture.Options{"a": {}})
	c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	c.AddRoots(&mcp.Root{URI: "file:///work/project", Name: "project"})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx := ctxT(t)
	waitFor(t, "the agent's roots to reach the server", func() bool {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "roots"})
		return err == nil && !res.IsError && textOf(t, res) == "file:///work/project"
	})
}

// TestUpstreamDyingOnDiscover: a stdio server that exits when its first
// message is server/discover still connects: the gateway pins the protocol
// version and starts with initialize.
func TestUpstreamDyingOnDiscover(t *testing.T) {
	url, _ := startGateway(t, map[string]fixture.Options{"a": {DieOnDiscover: true}})
	cs := connect(t, url, nil)
	res, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "alive"}})
	if err != nil || textOf(t, res) != "alive" {
		t.Fatalf("echo: %v %v", res, err)
	}
}

// TestSubscriptionCountsSessions: a session subscribing twice to a URI and
// unsubscribing once holds it no more, so a restarted server is not
// subscribed to it again; a session unsubscribing what it never held
// leaves the URI to the session that holds it.
func TestSubscriptionCountsSessions(t *testing.T) {
	url, _, g := startGatewayG(t, map[string]fixture.Options{"b": {Name: "b"}})
	ctx := ctxT(t)
	cs := connect(t, url, nil)
	other := connect(t, url, nil)
	uri := fixture.SharedResourceURI
	subscribe := func(cs *mcp.ClientSession, on bool) {
		t.Helper()
		var err error
		if on {
			err = cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
		} else {
			err = cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	subscribe(cs, true)
	subscribe(cs, true)
	if got := g.Subscribed("b"); !slices.Equal(got, []string{uri}) {
		t.Fatalf("after two subscribes: %q, want [%s]", got, uri)
	}
	subscribe(cs, false)
	if got := g.Subscribed("b"); len(got) != 0 {
		t.Errorf("after the session's one unsubscribe, the gateway would resubscribe %q", got)
	}
	subscribe(cs, true)
	subscribe(other, false)
	if got := g.Subscribed("b"); !slices.Equal(got, []string{uri}) {
		t.Errorf("after another session's unsubscribe: %q, want [%s] (still held)", got, uri)
	}
}

// TestHungSubscribeHoldsOnlyItsServer: subscription changes are ordered per
// URI of a server, so a server that never answers a subscribe holds up
// that URI only, not another server's.
func TestHungSubscribeHoldsOnlyItsServer(t *testing.T) {
	url, log, _ := startGatewayG(t, map[string]fixture.Options{"a": {Name: "a", HangSubscribe: true}, "b": {Name: "b"}})
	ctx := ctxT(t)
	cs := connect(t, url, nil)
	hung, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- cs.Subscribe(hung, &mcp.SubscribeParams{URI: fixture.ResourceURI("a")}) }()
	waitFor(t, "a to hang on the subscribe", func() bool {
		return strings.Contains(log.String(), "subscribe hanging "+fixture.ResourceURI("a"))
	})
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: fixture.ResourceURI("b")}); err != nil {
		t.Fatalf("b's subscribe while a hangs on one: %v", err)
	}
	cancel()
	if err := <-errc; err == nil {
		t.Error("the hung subscribe succeeded")
	}
	// The cancellation reaches a (the session's close waits for the
	// gateway's handler, which waits for a).
	waitFor(t, "a to see the subscribe cancelled", func() bool {
		return strings.Contains(log.String(), "subscribe cancelled "+fixture.ResourceURI("a"))
	})
}
