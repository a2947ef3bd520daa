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

// TestRemoteProbeSeesFailure: a remote that, with no calls coming, starts
// answering 500, stops answering, or is gone, is no longer reported ready
// within a few probe intervals, with its last error; one that answers
// again is ready again. The remote offers no standalone stream (405), so
// nothing but the probe talks to it.
func TestRemoteProbeSeesFailure(t *testing.T) {
	t.Parallel() // it waits out timers; the rest of the package need not wait
	for _, tc := range []struct {
		name  string
		fault string
		says  string
		heals bool
	}{
		{"500", "500", "500", true},
		{"hang", "hang", "no answer to a ping", true},
		{"killed", "kill", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := mcp.NewServer(&mcp.Implementation{Name: "sick", Version: "1"}, nil)
			sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
			var fault atomic.Value
			fault.Store("")
			stop := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				if req.Method == http.MethodGet {
					w.WriteHeader(http.StatusMethodNotAllowed)
					return
				}
				switch fault.Load() {
				case "500":
					http.Error(w, "internal error", http.StatusInternalServerError)
					return
				case "hang":
					select {
					case <-req.Context().Done():
					case <-stop:
					}
					return
				}
				sdk.ServeHTTP(w, req)
			}))
			t.Cleanup(srv.Close)
			t.Cleanup(func() { close(stop) }) // before Close, which waits for handlers
			r, _ := runRemote(t, catalog.ServerSpec{URL: srv.URL}, RemoteOptions{ProbeInterval: 100 * time.Millisecond})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if err := r.WaitStarted(ctx); err != nil {
				t.Fatal(err)
			}
			if tc.fault == "kill" {
				srv.CloseClientConnections()
				srv.Close()
			} else {
				fault.Store(tc.fault)
			}
			st := waitNot(t, ctx, r, StateReady, StateStarting)
			if st.LastError == "" || !strings.Contains(st.LastError, tc.says) {
				t.Fatalf("status of a remote that fails: %+v (want its error, saying %q)", st, tc.says)
			}
			if tc.heals {
				fault.Store("")
				waitState(t, ctx, r, StateReady)
			}
		})
	}
}

// waitNot waits until r is in none of states.
func waitNot(t *testing.T, ctx context.Context, r *Remote, states ...State) Status {
	t.Helper()
	for {
		st := r.Status()
		in := false
		for _, s := range states {
			in = in || st.State == s
		}
		if !in {
			return st
		}
		select {
		case <-ctx.Done():
			t.Fatalf("still %s: %+v", st.State, st)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestRemoteCallOutcomeInStatus: with the probe off, a call the remote
// answers 500 leaves it degraded with that error; the next call it answers
// makes it ready again.
func TestRemoteCallOutcomeInStatus(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "sick", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct{ Text string }) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	var failing atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost && failing.Load() {
			http.Error(w, "internal error", http.StatusServiceUnavailable)
			return
		}
		sdk.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r, _ := runRemote(t, catalog.ServerSpec{URL: srv.URL}, RemoteOptions{ProbeInterval: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := r.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
	failing.Store(true)
	if _, err := callRemote(ctx, r, "echo", map[string]any{"Text": "x"}); err == nil {
		t.Fatal("a call the remote answered 503 succeeded")
	}
	if st := r.Status(); st.State != StateDegraded || !strings.Contains(st.LastError, "503") {
		t.Fatalf("after a failed call: %+v (want degraded, saying 503)", st)
	}
	failing.Store(false)
	if _, err := callRemote(ctx, r, "echo", map[string]any{"Text": "x"}); err != nil {
		t.Fatal(err)
	}
	if st := r.Status(); st.State != StateReady || st.LastError != "" {
		t.Fatalf("after a call that succeeded: %+v", st)
	}
}
