package endpoint

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// BenchmarkSessionLookup measures finding the SDK session of a fast-path
// request among many live sessions (the gateway allows 1,024 by default).
func BenchmarkSessionLookup(b *testing.B) {
	for _, n := range []int{1, 32, 1024} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			url, token, g, _ := startInProcess(b, testSettings(b, 2*n), io.Discard, fixtureSpec("fx", fixture.Options{Tools: []string{"echo"}}))
			var last string
			for range n {
				last = newRawSession(b, url, token).id
			}
			index := newSessionIndex(g.agg.Server())
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if index.lookup(last) == nil {
					b.Fatal("session not found")
				}
			}
		})
	}
}

// TestSessionIndexFollowsSessions: the fast path's session index learns a
// session on its first call and forgets it when it ends, so that a call on a
// closed session gets the SDK's 404 and the index does not grow with
// sessions that come and go.
func TestSessionIndexFollowsSessions(t *testing.T) {
	url, token, g := inProcessGateway(t, testSettings(t, DefaultMaxSessions), io.Discard)
	hc := &http.Client{Transport: fixture.Bearer(token, http.DefaultTransport)}
	client := mcp.NewClient(&mcp.Implementation{Name: "index", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var sessions []*mcp.ClientSession
	for i := range 3 {
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if got, err := fixture.CallText(ctx, cs, "echo", map[string]any{"text": fmt.Sprint(i)}); err != nil || got != fmt.Sprint(i) {
			t.Fatalf("session %d: echo = %q, %v", i, got, err)
		}
		sessions = append(sessions, cs)
	}
	index := g.fast.sessions
	if n := index.len(); n != 3 {
		t.Fatalf("index holds %d sessions after calls on 3, want 3", n)
	}
	for i, cs := range sessions {
		if ss := index.lookup(cs.ID()); ss == nil || ss.ID() != cs.ID() {
			t.Errorf("session %d: lookup(%q) = %v", i, cs.ID(), ss)
		}
	}
	if ss := index.lookup("no-such-session"); ss != nil || index.len() != 3 {
		t.Errorf("lookup of an unknown id = %v, index holds %d", ss, index.len())
	}

	gone := sessions[0].ID()
	if err := sessions[0].Close(); err != nil { // DELETE
		t.Fatal(err)
	}
	// At once, before the index may have forgotten it: the SDK's 404.
	closed := &rawSession{t: t, url: url, token: token, id: gone, client: http.DefaultClient}
	if code, _, _ := closed.post(`{"jsonrpc":"2.0","id":6,"method":"tools/list"}`); code != http.StatusNotFound {
		t.Errorf("tools/list on the closed session: HTTP %d, want 404", code)
	}
	waitFor(t, 10*time.Second, "the closed session to leave the index", func() bool { return index.len() == 2 })
	if ss := index.lookup(gone); ss != nil {
		t.Errorf("lookup of the closed session = %v, want nil", ss)
	}
	if code, _, _ := closed.post(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`); code != http.StatusNotFound {
		t.Errorf("tools/call on the closed session: HTTP %d, want 404", code)
	}
	if got, err := fixture.CallText(ctx, sessions[1], "echo", map[string]any{"text": "still"}); err != nil || got != "still" {
		t.Errorf("another session after the close: echo = %q, %v", got, err)
	}
}
