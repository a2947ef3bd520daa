package supervisor

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
)

// holdingProxy is a reverse proxy in front of upstream that holds the
// response to every GET (the standalone stream) until release is closed,
// as a buffering proxy holds a stream's headers until its first event.
// gets receives a value as each GET arrives.
func holdingProxy(t *testing.T, upstream string) (proxied string, gets <-chan struct{}, release func()) {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	held := make(chan struct{})
	arrived := make(chan struct{}, 16)
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			select {
			case arrived <- struct{}{}:
			default:
			}
			select {
			case <-held:
			case <-r.Context().Done():
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	release = func() { once.Do(func() { close(held) }) }
	t.Cleanup(release)
	return srv.URL, arrived, release
}

// TestRemoteReadyWithoutStandaloneStream: behind a proxy that holds the
// standalone GET stream's headers, the remote is ready (handshake and
// tools listed) before the proxy releases them, and the stream works
// once it does.
func TestRemoteReadyWithoutStandaloneStream(t *testing.T) {
	upstream, _, sessions := sdkRemote(t, func(s *mcp.Server) {
		mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct{ Text string }) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	})
	proxied, gets, release := holdingProxy(t, upstream)
	intercepted := make(chan struct{}, 100)
	r, _ := runRemote(t, catalog.ServerSpec{URL: proxied}, RemoteOptions{
		ConnectTimeout: 10 * time.Second,
		OnReady: func(ctx context.Context, _ *Remote, cs *mcp.ClientSession, _ RoundTrip) error {
			_, err := cs.ListTools(ctx, nil)
			return err
		},
		Intercept: func(_ string, n *jsonrpc.Request) bool {
			if n.Method != "notifications/message" {
				return false
			}
			intercepted <- struct{}{}
			return true
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The proxy holds every GET until release: ready must come first.
	if err := r.WaitStarted(ctx); err != nil {
		t.Fatalf("not ready while the proxy holds the standalone stream: %v", err)
	}
	res, err := callRemote(ctx, r, "echo", map[string]any{"Text": "hi"})
	if err != nil || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "hi" {
		t.Fatalf("call while the stream is held: %v, %+v", err, res)
	}
	select {
	case <-gets:
	case <-ctx.Done():
		t.Fatal("the client never opened its standalone stream")
	}
	if st := r.Status(); st.State != StateReady {
		t.Fatalf("state while the stream is held: %+v", st)
	}
	release()
	ss := <-sessions
	if err := r.Do(ctx, func(cs *mcp.ClientSession) error {
		return cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"})
	}); err != nil {
		t.Fatal(err)
	}
	// The stream, once released, carries what the remote sends outside
	// any request (sent until one arrives: the server drops a message
	// sent before the stream reached it).
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		// An error: the stream has not reached the server yet.
		_ = ss.Log(context.Background(), &mcp.LoggingMessageParams{Level: "info", Data: "hello"})
		select {
		case <-intercepted:
			return
		case <-tick.C:
		case <-ctx.Done():
			t.Fatal("nothing arrived on the standalone stream after the proxy released it")
		}
	}
}
