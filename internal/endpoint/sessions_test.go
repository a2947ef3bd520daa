package endpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
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
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, legacySession())
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

// TestSessionLimitRefusesWhenAllBusy: when every session has a call in
// flight, a new session is refused with 503, Retry-After and a JSON-RPC
// error saying why, and no call is cancelled to make room; once a session
// is idle, the next initialize closes it and succeeds.
func TestSessionLimitRefusesWhenAllBusy(t *testing.T) {
	logs := &syncBuffer{}
	url, token, g := inProcessGateway(t, testSettings(t, 2), logs)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, b := connect(t, ctx, url, token), connect(t, ctx, url, token)
	type outcome struct {
		name string
		err  error
	}
	done := make(chan outcome, 2)
	stops := map[string]context.CancelFunc{}
	for name, cs := range map[string]*mcp.ClientSession{"a": a, "b": b} {
		callCtx, stop := context.WithCancel(ctx)
		stops[name] = stop
		go func() {
			_, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 600000}})
			done <- outcome{name, err}
		}()
	}
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	waitFor(t, 30*time.Second, "both long calls to reach the server", func() bool {
		return strings.Count(logs.String(), "sleep started 600000ms") == 2
	})

	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"third","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(init))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("initialize with every session busy: HTTP %d, Retry-After %q, session %q: %s",
			resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Mcp-Session-Id"), body)
	}
	var reply struct {
		ID    int `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &reply); err != nil || reply.ID != 1 || reply.Error.Code == 0 ||
		!strings.Contains(reply.Error.Message, "--max-sessions 2") || !strings.Contains(reply.Error.Message, "in flight") {
		t.Fatalf("refusal body: %s (%v)", body, err)
	}
	// The Go SDK client is refused the same way.
	client := mcp.NewClient(&mcp.Implementation{Name: "fourth", Version: "1"}, nil)
	hc := &http.Client{Transport: fixture.Bearer(token, http.DefaultTransport)}
	if cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, legacySession()); err == nil {
		cs.Close()
		t.Fatal("a Go SDK client connected with every session busy")
	}
	select {
	case o := <-done:
		t.Fatalf("session %s's call ended while a new session was refused: %v", o.name, o.err)
	default:
	}
	for name, cs := range map[string]*mcp.ClientSession{"a": a, "b": b} {
		if code := pingStatus(t, url, token, cs.ID()); code != http.StatusOK {
			t.Fatalf("session %s: ping %d after the refusal, want 200", name, code)
		}
	}

	// a's call ends (the agent cancels it): a is idle, and makes room.
	stops["a"]()
	if o := <-done; o.name != "a" {
		t.Fatalf("session %s's call ended, want a's: %v", o.name, o.err)
	}
	waitFor(t, 30*time.Second, "a's call to end in the gateway", func() bool {
		return g.sessions.inFlight(a.ID()) == 0 && !g.sessions.busyInSDK(a.ID())
	})
	c := connect(t, ctx, url, token)
	if got, err := fixture.CallText(ctx, c, "echo", map[string]any{"text": "room"}); err != nil || got != "room" {
		t.Fatalf("the new session: echo = %q, %v", got, err)
	}
	waitFor(t, 30*time.Second, "the idle session to be closed", func() bool {
		return pingStatus(t, url, token, a.ID()) == http.StatusNotFound
	})
	select {
	case o := <-done:
		t.Fatalf("session %s's call ended when room was made: %v", o.name, o.err)
	default:
	}
	if code := pingStatus(t, url, token, b.ID()); code != http.StatusOK {
		t.Fatalf("busy session b: ping %d, want 200", code)
	}
}
