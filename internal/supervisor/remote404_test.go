package supervisor

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
)

// TestRemote404FailsFastAndRecoversAtOnce: a remote that starts answering
// 404 to everything (its session and every reconnection) fails the call at
// once with the 404 in words, and is failed; once it answers again, the
// first call has it reconnected and succeeds, rather than failing until
// the slow retry (the gateway's default policy: 100 ms doubling to 30 s).
func TestRemote404FailsFastAndRecoversAtOnce(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "gone", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct{ Text string }) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	var gone atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if gone.Load() {
			http.Error(w, "404 page not found", http.StatusNotFound)
			return
		}
		sdk.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	// RetryFailed 1ns: the call after recovery may try at once however
	// soon it follows the failed ones (1 s by default). The backoff is
	// ten minutes: only the call's own try can bring the remote back
	// within the test.
	r, _ := runRemote(t, catalog.ServerSpec{URL: srv.URL}, RemoteOptions{ProbeInterval: -1, RetryFailed: time.Nanosecond,
		RestartPolicy: RestartPolicy{MinBackoff: 10 * time.Minute, MaxBackoff: 30 * time.Minute}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := r.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
	gone.Store(true)
	began := time.Now()
	if _, err := callRemote(ctx, r, "echo", map[string]any{"Text": "x"}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("a call to a remote answering 404 ended with %v; want an error saying 404", err)
	}
	t.Logf("the call to the 404 remote failed after %s", time.Since(began))
	waitState(t, ctx, r, StateFailed)

	gone.Store(false)
	began = time.Now()
	res, err := callRemote(ctx, r, "echo", map[string]any{"Text": "back"})
	if err != nil {
		t.Fatalf("the first call once the remote answers again: %v", err)
	}
	t.Logf("the first call after recovery took %s", time.Since(began))
	if got := res.Content[0].(*mcp.TextContent).Text; got != "back" {
		t.Errorf("echo = %q", got)
	}
	if st := r.Status(); st.State != StateReady {
		t.Errorf("after the first call: %+v, want ready", st)
	}
}
