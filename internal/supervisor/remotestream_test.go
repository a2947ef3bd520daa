package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
)

// sdkRemote serves a Go SDK server over streamable HTTP on 127.0.0.1 and
// returns its URL, the server, and its sessions as clients initialize.
func sdkRemote(t *testing.T, build func(*mcp.Server)) (string, *mcp.Server, <-chan *mcp.ServerSession) {
	t.Helper()
	sessions := make(chan *mcp.ServerSession, 4)
	server := mcp.NewServer(&mcp.Implementation{Name: "sdk-remote", Version: "1"}, &mcp.ServerOptions{
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) { sessions <- req.Session },
		Capabilities:       &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}, Logging: &mcp.LoggingCapabilities{}},
	})
	if build != nil {
		build(server)
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(srv.Close)
	return srv.URL, server, sessions
}

type seen struct {
	method string
	params json.RawMessage
}

// TestRemoteStandaloneStreamRelayedRaw: what a remote sends outside any
// request (on the standalone GET stream) reaches the gateway's intercept
// and request handlers first, raw and in order, as a stdio child's stdout
// does; only what they leave (list_changed) reaches the SDK's client.
func TestRemoteStandaloneStreamRelayedRaw(t *testing.T) {
	url, server, sessions := sdkRemote(t, nil)
	intercepted := make(chan seen, 100)
	sdkLogs := make(chan struct{}, 100)
	listChanged := make(chan struct{}, 1)
	var rootsAsked = make(chan json.RawMessage, 1)
	r, _ := runRemote(t, catalog.ServerSpec{URL: url}, RemoteOptions{
		NewClient: func(string) *mcp.Client {
			return mcp.NewClient(&mcp.Implementation{Name: "gw", Version: "1"}, &mcp.ClientOptions{
				LoggingMessageHandler:  func(context.Context, *mcp.LoggingMessageRequest) { sdkLogs <- struct{}{} },
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { listChanged <- struct{}{} },
				Capabilities:           &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}},
			})
		},
		Intercept: func(server string, n *jsonrpc.Request) bool {
			if n.Method != "notifications/message" {
				return false
			}
			intercepted <- seen{n.Method, n.Params}
			return true
		},
		ServeRequest: func(server, method string) RequestHandler {
			if method != "roots/list" {
				return nil
			}
			return func(_ context.Context, params json.RawMessage) (json.RawMessage, error) {
				rootsAsked <- params
				return json.RawMessage(`{"roots":[{"uri":"file:///from/the/gateway","name":"gw"}]}`), nil
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
	ss := <-sessions
	// The Go SDK's server sends log messages only to a client that set a
	// level.
	if err := r.Do(ctx, func(cs *mcp.ClientSession) error {
		return cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"})
	}); err != nil {
		t.Fatal(err)
	}
	// The client opens its standalone stream right after initialize; a
	// message sent before the stream is there is dropped by the server:
	// send until one arrives (an error: the stream has not reached the
	// server yet; ready does not wait for it).
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		_ = ss.Log(context.Background(), &mcp.LoggingMessageParams{Level: "info", Data: "hello"})
		select {
		case <-intercepted:
			break wait
		case <-tick.C:
		case <-ctx.Done():
			t.Fatal("no log message from the standalone stream reached the intercept")
		}
	}
	const n = 20
	for i := range n {
		if err := ss.Log(context.Background(), &mcp.LoggingMessageParams{Level: "info", Logger: "seq", Data: i}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; {
		select {
		case got := <-intercepted:
			if strings.Contains(string(got.params), `"hello"`) {
				continue // a probe still on its way
			}
			i++
			if want := fmt.Sprintf(`"data":%d`, i-1); !strings.Contains(string(got.params), want) {
				t.Fatalf("message %d: %s, want %s (in order)", i-1, got.params, want)
			}
		case <-ctx.Done():
			t.Fatalf("message %d never intercepted", i)
		}
	}
	if len(sdkLogs) != 0 {
		t.Errorf("%d log messages reached the SDK's handler; the intercept takes them all", len(sdkLogs))
	}
	// A request outside any call goes to the gateway's handler, and its raw
	// answer back to the remote.
	roots, err := ss.ListRoots(ctx, nil)
	if err != nil {
		t.Fatalf("roots/list from the remote: %v", err)
	}
	if len(roots.Roots) != 1 || roots.Roots[0].URI != "file:///from/the/gateway" {
		t.Errorf("the remote got roots %+v", roots.Roots)
	}
	select {
	case <-rootsAsked:
	default:
		t.Error("roots/list did not reach ServeRequest's handler")
	}
	// What the gateway does not take still reaches the SDK's client.
	server.AddTool(&mcp.Tool{Name: "late", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	select {
	case <-listChanged:
	case <-ctx.Done():
		t.Fatal("tools/list_changed never reached the SDK's client")
	}
}

// TestRemoteCancelledCallFollowed: when the caller cancels a raw request,
// the remote is told, the call returns at once with a CancelledError, and
// the progress the remote goes on sending for it still reaches the
// intercept (a remote connected directly would still deliver it) until the
// remote is done with it, when Settled closes.
func TestRemoteCancelledCallFollowed(t *testing.T) {
	told := make(chan struct{})
	finish := make(chan struct{})
	url, _, _ := sdkRemote(t, func(s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "linger", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tok := req.Params.GetProgressToken()
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 3})
			<-ctx.Done() // the cancellation
			close(told)
			<-finish
			// A server that goes on after a cancellation, as the spec allows.
			goOn := context.WithoutCancel(ctx)
			for i := 2; i <= 3; i++ {
				_ = req.Session.NotifyProgress(goOn, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 3})
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late"}}}, nil
		})
	})
	progress := make(chan json.RawMessage, 10)
	r, _ := runRemote(t, catalog.ServerSpec{URL: url}, RemoteOptions{
		Intercept: func(server string, n *jsonrpc.Request) bool {
			if n.Method != "notifications/progress" {
				return false
			}
			progress <- n.Params
			return true
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
	callCtx, cancelCall := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := r.CallRaw(callCtx, "tools/call", json.RawMessage(`{"name":"linger","arguments":{},"_meta":{"progressToken":"tok"}}`))
		errc <- err
	}()
	<-progress
	cancelCall()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		t.Fatal("the cancelled call did not return")
	}
	var ce *CancelledError
	if !errors.As(err, &ce) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v, want a CancelledError", err)
	}
	select {
	case <-told:
	case <-ctx.Done():
		t.Fatal("the remote never saw the cancellation")
	}
	select {
	case <-ce.Settled():
		t.Fatal("settled while the remote is still working on the request")
	default:
	}
	close(finish)
	for i := 2; i <= 3; i++ {
		select {
		case p := <-progress:
			if want := fmt.Sprintf(`"progress":%d`, i); !strings.Contains(string(p), want) {
				t.Fatalf("progress after the cancellation: %s, want %s", p, want)
			}
		case <-ctx.Done():
			t.Fatalf("progress %d, sent after the cancellation, never relayed", i)
		}
	}
	select {
	case <-ce.Settled():
	case <-ctx.Done():
		t.Fatal("never settled after the remote finished the request")
	}
}

// TestRemoteWritesBounded: a remote that takes a request and never
// answers holds neither a notification's POST nor a cancelled call
// forever.
func TestRemoteWritesBounded(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(stop)
	raw := &remoteRaw{url: srv.URL, client: srv.Client(), sendTimeout: 100 * time.Millisecond, grace: 100 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := raw.sendWith(ctx, &jsonrpc.Request{Method: "notifications/initialized"}, "sid", "")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("send to a remote that never answers: %v, want a deadline error", err)
	}
	// roundTrip needs the session for its headers.
	sess, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, inMemoryServer(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	raw.cs = sess
	callCtx, cancelCall := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelCall()
	_, err = raw.roundTrip(callCtx, "tools/call", json.RawMessage(`{"name":"x"}`))
	var ce *CancelledError
	if !errors.As(err, &ce) {
		t.Fatalf("call to a remote that never answers: %v, want a CancelledError", err)
	}
	select {
	case <-ce.Settled():
	case <-ctx.Done():
		t.Fatal("a cancelled call to a remote that never answers never settled")
	}
}

// TestRemoteSDKWritesBounded: a notification or an answer the SDK sends
// with no deadline (its notifications/cancelled, its answer to a ping) to a
// remote that never answers gives up; a request is not cut short.
func TestRemoteSDKWritesBounded(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), `"id"`) { // a request: answered, slowly
			time.Sleep(300 * time.Millisecond)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
			return
		}
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(stop)
	client := &http.Client{Transport: &remoteTransport{base: srv.Client().Transport, gone: func(int) {}, sendTimeout: 100 * time.Millisecond}}
	post := func(body string) error {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL, strings.NewReader(body))
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		return err
	}
	done := make(chan error, 1)
	go func() { done <- post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("notification to a remote that never answers: %v, want a deadline error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a notification to a remote that never answers never gave up")
	}
	if err := post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`); err != nil {
		t.Errorf("a request answered after the notifications' bound: %v", err)
	}
}

// inMemoryServer is a connected server's transport, for a client session
// whose ID and protocol version remoteRaw reads.
func inMemoryServer(t *testing.T) mcp.Transport {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil).Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	return ct
}

// TestSSEFilter: the events a consumer takes leave only their other fields
// (the id the SDK resumes from); the rest pass as they came.
func TestSSEFilter(t *testing.T) {
	in := strings.Join([]string{
		": a comment\n",
		"id: 1\ndata: {\"take\":1}\n\n",
		"id: 2\ndata: {\"keep\":1}\n\n",
		"event: other\ndata: {\"take\":2}\n\n",
		"id: 3\r\ndata: {\"take\":\r\ndata: 3}\r\n\r\n",
		"retry: 10\ndata: " + strings.Repeat("x", 300) + "\n\n",
		"data: {\"take\":4}\n\n",
		"data: {\"take\":5}", // cut: no end
	}, "")
	var taken []string
	f := newSSEFilter(io.NopCloser(strings.NewReader(in)), 200, func(data []byte) bool {
		if strings.Contains(string(data), "take") {
			taken = append(taken, string(data))
			return true
		}
		return false
	})
	out, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		": a comment\nid: 1\n\n",
		"id: 2\ndata: {\"keep\":1}\n\n",
		"event: other\ndata: {\"take\":2}\n\n", // a named event is not a message
		"id: 3\r\n\n",
		"retry: 10\ndata: " + strings.Repeat("x", 300) + "\n\n", // too large to look at
		"\n",
		"data: {\"take\":5}",
	}, "")
	if string(out) != want {
		t.Errorf("filtered:\n%q\nwant\n%q", out, want)
	}
	if got := strings.Join(taken, " "); got != "{\"take\":1} {\"take\":\n3} {\"take\":4}" {
		t.Errorf("taken: %s", got)
	}
}

// TestRemoteSDKCallProgressBeforeResult: a call the SDK's client session
// makes itself (Do: an interceptor's call, a listing) has its progress
// intercepted on the stream's reader, so all of it is relayed before
// CallTool returns the result; through the SDK's notification goroutine the
// last could come after it.
func TestRemoteSDKCallProgressBeforeResult(t *testing.T) {
	url, _, _ := sdkRemote(t, func(s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "steps", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for i := 1; i <= 3; i++ {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: 3}); err != nil {
					return nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	})
	var mu sync.Mutex
	seenByToken := map[string]int{}
	r, _ := runRemote(t, catalog.ServerSpec{URL: url}, RemoteOptions{
		Intercept: func(server string, n *jsonrpc.Request) bool {
			if n.Method != "notifications/progress" {
				return false
			}
			var p struct {
				Token string `json:"progressToken"`
			}
			_ = json.Unmarshal(n.Params, &p)
			mu.Lock()
			seenByToken[p.Token]++
			mu.Unlock()
			return true
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		tok := fmt.Sprintf("t%d", i)
		err := r.Do(ctx, func(cs *mcp.ClientSession) error {
			params := &mcp.CallToolParams{Name: "steps", Arguments: map[string]any{}}
			params.SetProgressToken(tok)
			_, err := cs.CallTool(ctx, params)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		got := seenByToken[tok]
		mu.Unlock()
		if got != 3 {
			t.Fatalf("call %d: %d of 3 progress notifications relayed when the result came", i, got)
		}
	}
}

// BenchmarkRemoteCallRaw: one raw tools/call to a remote (a Go SDK server
// over HTTP on 127.0.0.1), the path every agent call to a remote takes.
func BenchmarkRemoteCallRaw(b *testing.B) {
	server := mcp.NewServer(&mcp.Implementation{Name: "bench-remote", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer srv.Close()
	r := NewRemote(catalog.ServerSpec{Name: "bench", Kind: catalog.KindRemote, URL: srv.URL}, RemoteOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	if err := r.WaitStarted(ctx); err != nil {
		b.Fatal(err)
	}
	params := json.RawMessage(`{"name":"echo","arguments":{}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.CallRaw(ctx, "tools/call", params); err != nil {
			b.Fatal(err)
		}
	}
}
