package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// openSession initializes a session with raw HTTP (no GET stream, so that a
// benchmark can hold a thousand of them cheaply) and returns its id.
func openSession(tb testing.TB, url, token string) string {
	tb.Helper()
	post := func(id, body string) *http.Response {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			tb.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if id != "" {
			req.Header.Set("Mcp-Session-Id", id)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			tb.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	id := resp.Header.Get(sessionIDHeader)
	if resp.StatusCode != http.StatusOK || id == "" {
		tb.Fatalf("initialize: HTTP %d, session %q", resp.StatusCode, id)
	}
	if resp := post(id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		tb.Fatalf("notifications/initialized: HTTP %d", resp.StatusCode)
	}
	return id
}

// BenchmarkSessionLookup measures finding the SDK session of a fast-path
// request among many live sessions (the gateway allows 1,024 by default).
func BenchmarkSessionLookup(b *testing.B) {
	for _, n := range []int{1, 32, 1024} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			url, token, g, _ := startInProcess(b, testSettings(b, 2*n), io.Discard, fixtureSpec("fx", fixture.Options{Tools: []string{"echo"}}))
			var last string
			for range n {
				last = openSession(b, url, token)
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

// toolCallStatus posts a tools/call for echo on session id and returns the
// HTTP status.
func toolCallStatus(t *testing.T, url, token, id string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestSessionIndexFollowsSessions: the fast path's session index learns a
// session on its first call and forgets it when it ends, so that a call on a
// closed session gets the SDK's 404 and the index does not grow with
// sessions that come and go.
func TestSessionIndexFollowsSessions(t *testing.T) {
	url, token, g := inProcessGateway(t, testSettings(t, defaultMaxSessions), io.Discard)
	hc := &http.Client{Transport: bearer{token, http.DefaultTransport}}
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
		if got, err := callText(ctx, cs, "echo", map[string]any{"text": fmt.Sprint(i)}); err != nil || got != fmt.Sprint(i) {
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
	waitFor(t, 10*time.Second, "the closed session to leave the index", func() bool { return index.len() == 2 })
	if ss := index.lookup(gone); ss != nil {
		t.Errorf("lookup of the closed session = %v, want nil", ss)
	}
	if code := toolCallStatus(t, url, token, gone); code != http.StatusNotFound {
		t.Errorf("tools/call on the closed session: HTTP %d, want 404", code)
	}
	if got, err := callText(ctx, sessions[1], "echo", map[string]any{"text": "still"}); err != nil || got != "still" {
		t.Errorf("another session after the close: echo = %q, %v", got, err)
	}
}
