package endpoint

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// wireConn is one TCP connection to the gateway on which a test writes
// requests byte for byte and reads the responses in order.
type wireConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialWire(t *testing.T, url string) *wireConn {
	t.Helper()
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &wireConn{t: t, c: c, br: bufio.NewReader(c)}
}

func (w *wireConn) send(raw string) {
	w.t.Helper()
	if _, err := io.WriteString(w.c, raw); err != nil {
		w.t.Fatal(err)
	}
}

// response reads the next final response (1xx skipped) and its body.
func (w *wireConn) response() (*http.Response, []byte) {
	w.t.Helper()
	_ = w.c.SetReadDeadline(time.Now().Add(30 * time.Second))
	defer w.c.SetReadDeadline(time.Time{})
	for {
		resp, err := http.ReadResponse(w.br, nil)
		if err != nil {
			w.t.Fatalf("read response: %v", err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			w.t.Fatalf("read body: %v", err)
		}
		if resp.StatusCode >= 200 {
			return resp, body
		}
	}
}

// call sends a tools/call of tool and returns the text it answered.
func (w *wireConn) call(token, sid string, id int, tool string) string {
	w.t.Helper()
	w.send(mcpPost(token, sid, callBody(id, tool, `{}`, "")))
	resp, body := w.response()
	if resp.StatusCode != http.StatusOK {
		w.t.Fatalf("call %s: %s: %s", tool, resp.Status, body)
	}
	return replyText(w.t, parseReplies(w.t, resp.Header.Get("Content-Type"), body)[0])
}

// mcpPost is a POST /mcp as clients send it; extra header lines go after
// the usual ones.
func mcpPost(token, sid, body string, extra ...string) string {
	var b strings.Builder
	b.WriteString("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
	fmt.Fprintf(&b, "Authorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n", token)
	fmt.Fprintf(&b, "Mcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-11-25\r\n", sid)
	for _, h := range extra {
		b.WriteString(h + "\r\n")
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	return b.String()
}

// TestLaneServesKeepAliveCalls: after net/http answers a call through the
// fast path, the lane serves the connection's next calls, pipelined ones
// in order; what it does not serve (another path, a call that needs the
// SDK's SSE answer) goes back to net/http on the same connection, and the
// lane takes the connection again at its next fast call. Refusals made by
// the handlers look the same from both.
func TestLaneServesKeepAliveCalls(t *testing.T) {
	url, token, g, _ := fastPathGateway(t)
	sid := newRawSession(t, url, token).id
	w := dialWire(t, url)

	if got := w.call(token, sid, 1, "who"); got != "a:who" {
		t.Fatalf("first call answered %q", got)
	}
	if g.lane.adopted.Load() != 1 || g.lane.served.Load() != 0 {
		t.Fatalf("after one call: adopted %d, served %d; want the connection taken over", g.lane.adopted.Load(), g.lane.served.Load())
	}
	if got := w.call(token, sid, 2, "b_who"); got != "b:who" {
		t.Fatalf("second call answered %q", got)
	}
	if g.lane.served.Load() != 1 {
		t.Fatalf("the lane served %d calls, want 1", g.lane.served.Load())
	}

	// Pipelined: both requests in one write, answered in order.
	w.send(mcpPost(token, sid, callBody(3, "who", `{}`, "")) + mcpPost(token, sid, callBody(4, "b_who", `{}`, "")))
	for _, want := range []struct{ id, text string }{{"3", "a:who"}, {"4", "b:who"}} {
		resp, body := w.response()
		r := parseReplies(t, resp.Header.Get("Content-Type"), body)[0]
		if string(r.ID) != want.id || replyText(t, r) != want.text {
			t.Fatalf("pipelined answer %s %q, want id %s %q", r.ID, replyText(t, r), want.id, want.text)
		}
	}

	// Not the lane's: /health, then a call with a progress token (SSE).
	w.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	resp, body := w.response()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"status"`)) {
		t.Fatalf("/health on a lane connection: %s %s", resp.Status, body)
	}
	if g.lane.handedBack.Load() != 1 {
		t.Fatalf("handed back %d times, want 1", g.lane.handedBack.Load())
	}
	if got := w.call(token, sid, 5, "who"); got != "a:who" || g.lane.adopted.Load() != 2 {
		t.Fatalf("call after the hand-back: %q, adopted %d (want the connection taken again)", got, g.lane.adopted.Load())
	}
	w.send(mcpPost(token, sid, callBody(6, "progress", `{"steps":1}`, `{"progressToken":"p"}`)))
	resp, body = w.response()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("call with a progress token on a lane connection: %s %q %s", resp.Status, ct, body)
	}
	if r := parseReplies(t, "text/event-stream", body); len(r) != 2 || replyText(t, r[1]) != "done 1" {
		t.Fatalf("SSE answer %s", body)
	}
	served := g.lane.served.Load()
	if got := w.call(token, sid, 7, "who"); got != "a:who" {
		t.Fatalf("call after the SSE answer: %q", got)
	}
	w.call(token, sid, 8, "who")
	if g.lane.served.Load() != served+1 {
		t.Fatalf("served %d, want %d: the lane did not take the connection back", g.lane.served.Load(), served+1)
	}

	// A wrong token on the lane and on a fresh connection: the same 401,
	// before the body is read, and the connection closed.
	fresh := dialWire(t, url)
	var got [2]string
	for i, c := range []*wireConn{w, fresh} {
		c.send(mcpPost("wrong", sid, callBody(9, "who", `{}`, "")))
		resp, body := c.response()
		got[i] = fmt.Sprintf("%s|%s|%s|%s|close=%v", resp.Status, resp.Header.Get("Content-Type"), resp.Header.Get("WWW-Authenticate"), body, resp.Close)
	}
	if got[0] != got[1] || !strings.HasPrefix(got[0], "401") || !strings.HasSuffix(got[0], "close=true") {
		t.Fatalf("401 from the lane %q, from net/http %q", got[0], got[1])
	}
}

// TestLaneServesNullProgressToken: a call whose progress token is null
// has no progress to stream, so the lane serves it like any plain call: the
// connection is taken over after one, and the next is served on the lane.
func TestLaneServesNullProgressToken(t *testing.T) {
	url, token, g, _ := fastPathGateway(t)
	sid := newRawSession(t, url, token).id
	w := dialWire(t, url)
	for id := 1; id <= 2; id++ {
		w.send(mcpPost(token, sid, callBody(id, "b_who", `{}`, `{"progressToken":null}`)))
		resp, body := w.response()
		r := parseReplies(t, resp.Header.Get("Content-Type"), body)
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" || len(r) != 1 || replyText(t, r[0]) != "b:who" {
			t.Fatalf("call %d with a null progress token: %s %q %s", id, resp.Status, ct, body)
		}
	}
	if a, s, b := g.lane.adopted.Load(), g.lane.served.Load(), g.lane.handedBack.Load(); a != 1 || s != 1 || b != 0 {
		t.Fatalf("adopted %d, served %d, handed back %d; want the connection taken over after the first call and the second served on the lane", a, s, b)
	}
}

// TestLaneHandsBackWhatItDoesNotServe: requests the lane cannot serve as
// net/http would, or must not, reach net/http with every byte, and get
// net/http's answer; a connection left open serves calls again.
func TestLaneHandsBackWhatItDoesNotServe(t *testing.T) {
	set := testSettings(t, 16)
	set.Limits.MaxBodyBytes = 4096
	logs := &syncBuffer{}
	url, token, g := inProcessGatewayOf(t, set, logs, fixtureSpec("a", fixture.Options{Name: "a", Tools: []string{"echo"}, ExtraTools: []string{"who"}}))
	sid := newRawSession(t, url, token).id
	call := callBody(1, "who", `{}`, "")
	chunked := strings.Replace(mcpPost(token, sid, ""), "Content-Length: 0\r\n\r\n", "Transfer-Encoding: chunked\r\n\r\n", 1) +
		fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(call), call)
	for _, c := range []struct {
		name   string
		raw    string
		status int
		closes bool // net/http closes the connection after answering
	}{
		{"chunked body", chunked, 200, true}, // answered, then closed: see closeWriter
		{"Expect: 100-continue", mcpPost(token, sid, call, "Expect: 100-continue"), 200, false},
		{"query string", strings.Replace(mcpPost(token, sid, call), "POST /mcp ", "POST /mcp?x=1 ", 1), 200, false},
		{"Connection: close", mcpPost(token, sid, call, "Connection: close"), 200, true},
		{"body over the limit", mcpPost(token, sid, callBody(1, "echo", `{"text":"`+strings.Repeat("x", 5000)+`"}`, "")), 413, false},
		{"header line without a colon", mcpPost(token, sid, call, "Bogus"), 400, true},
		{"folded header line", mcpPost(token, sid, call, "X-A: 1", " 2"), 200, false},
		{"foreign Host on loopback (DNS rebinding)", strings.Replace(mcpPost(token, sid, call), "Host: 127.0.0.1", "Host: evil.example", 1), 403, false},
		{"two lengths", mcpPost(token, sid, call, "Content-Length: 1"), 400, true},
		{"length -0", strings.Replace(mcpPost(token, sid, ""), "Content-Length: 0", "Content-Length: -0", 1), 400, true},
		{"length +2", strings.Replace(mcpPost(token, sid, "{}"), "Content-Length: 2", "Content-Length: +2", 1), 400, true},
		{"no Host", strings.Replace(mcpPost(token, sid, call), "Host: 127.0.0.1\r\n", "", 1), 400, true},
		{"HTTP/1.0", strings.Replace(mcpPost(token, sid, call), "HTTP/1.1", "HTTP/1.0", 1), 200, true},
		{"oversized head", mcpPost(token, sid, call, "X-Big: "+strings.Repeat("b", maxHeaderBytes+4096)), 431, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := dialWire(t, url)
			w.call(token, sid, 100, "who") // net/http, then the lane
			w.call(token, sid, 101, "who") // the lane
			back := g.lane.handedBack.Load()
			w.send(c.raw)
			resp, body := w.response()
			if resp.StatusCode != c.status {
				t.Fatalf("%s: %s %s, want %d", c.name, resp.Status, body, c.status)
			}
			if g.lane.handedBack.Load() != back+1 {
				t.Fatalf("%s: not handed back to net/http", c.name)
			}
			if c.closes {
				_ = w.c.SetReadDeadline(time.Now().Add(10 * time.Second))
				if _, err := w.br.ReadByte(); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
					t.Fatalf("%s: read after net/http's answer: %v, want the connection closed", c.name, err)
				}
				return
			}
			if got := w.call(token, sid, 102, "who"); got != "a:who" {
				t.Fatalf("%s: next call answered %q", c.name, got)
			}
		})
	}
}

// TestLaneEndsCallOfClientGone: a client that closes its connection during
// a call on the lane ends the call, and the server is told, as on net/http.
func TestLaneEndsCallOfClientGone(t *testing.T) {
	url, token, g, logs := fastPathGateway(t)
	sid := newRawSession(t, url, token).id
	w := dialWire(t, url)
	w.call(token, sid, 1, "who")
	w.send(mcpPost(token, sid, callBody(2, "sleep", `{"ms":600000}`, "")))
	waitFor(t, 30*time.Second, "the sleep to start", func() bool { return strings.Contains(logs.String(), "sleep started") })
	if g.lane.adopted.Load() != 1 || g.lane.handedBack.Load() != 0 {
		t.Fatalf("the sleep is not on the lane: adopted %d, handed back %d", g.lane.adopted.Load(), g.lane.handedBack.Load())
	}
	w.c.Close()
	waitFor(t, 10*time.Second, "the server to see the cancellation", func() bool { return strings.Contains(logs.String(), "sleep cancelled") })
}

// TestLaneReleasesClosedConnection: an idle lane connection the client
// closes leaves the lane at once, so a closed client holds nothing.
// (FuzzLaneWire's settling wait once seemed to say otherwise: the
// connection that stayed was its http.Client's, idle in the client's pool
// and still open.)
func TestLaneReleasesClosedConnection(t *testing.T) {
	url, token, g, _ := startGateway(t, testSettings(t, 16), &syncBuffer{})
	sid := newRawSession(t, url, token).id
	conns := func() int {
		g.lane.mu.Lock()
		defer g.lane.mu.Unlock()
		return len(g.lane.conns)
	}
	for i := range 3 {
		w := dialWire(t, url)
		w.call(token, sid, 2*i+1, "who")
		w.call(token, sid, 2*i+2, "who")
		if conns() != 1 {
			t.Fatalf("lane connections %d, want 1", conns())
		}
		w.c.Close()
		waitFor(t, 10*time.Second, "the lane to release the closed connection", func() bool { return conns() == 0 })
	}
	if g.lane.served.Load() != 3 {
		t.Fatalf("served %d, want 3", g.lane.served.Load())
	}
}

// startGateway runs an in-process gateway with one fixture server "a"
// (echo, sleep, who).
func startGateway(t *testing.T, set *testSetup, logs io.Writer) (url, token string, g *Endpoint, stop func() error) {
	t.Helper()
	return startInProcess(t, set, logs, fixtureSpec("a", fixture.Options{Name: "a", Tools: []string{"echo", "sleep"}, ExtraTools: []string{"who"}}))
}

// TestLaneIdleTimeout: an idle lane connection is closed after the idle
// timeout, as net/http closes its own.
func TestLaneIdleTimeout(t *testing.T) {
	set := testSettings(t, 16)
	set.Limits.IdleTimeout = 300 * time.Millisecond
	url, token, g, _ := startGateway(t, set, &syncBuffer{})
	sid := newRawSession(t, url, token).id
	w := dialWire(t, url)
	w.call(token, sid, 1, "who")
	w.call(token, sid, 2, "who")
	if g.lane.served.Load() != 1 {
		t.Fatalf("served %d, want 1", g.lane.served.Load())
	}
	_ = w.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := w.br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("idle lane connection: read %v, want EOF after the idle timeout", err)
	}
}

// TestLaneShutdown: at shutdown an idle lane connection is closed at once,
// and a call in flight still gets its answer before its connection closes.
func TestLaneShutdown(t *testing.T) {
	t.Parallel() // it waits out timers; the rest of the package need not wait
	set := testSettings(t, 16)
	set.ShutdownGrace = 10 * time.Second
	logs := &syncBuffer{}
	url, token, _, stop := startGateway(t, set, logs)
	sid := newRawSession(t, url, token).id
	quiet, busy := dialWire(t, url), dialWire(t, url)
	quiet.call(token, sid, 1, "who")
	busy.call(token, sid, 2, "who")
	busy.send(mcpPost(token, sid, callBody(3, "sleep", `{"ms":1500}`, "")))
	waitFor(t, 30*time.Second, "the sleep to start", func() bool { return strings.Contains(logs.String(), "sleep started") })
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	_ = quiet.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := quiet.br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("idle lane connection at shutdown: read %v, want EOF", err)
	}
	resp, body := busy.response()
	if resp.StatusCode != http.StatusOK || !resp.Close {
		t.Fatalf("call in flight at shutdown: %s (Connection: close %v) %s", resp.Status, resp.Close, body)
	}
	if r := parseReplies(t, resp.Header.Get("Content-Type"), body); len(r) != 1 || r[0].Error != nil {
		t.Fatalf("call in flight at shutdown: %s", body)
	}
	if _, err := busy.br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("busy lane connection after its answer at shutdown: read %v, want EOF", err)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

// TestLaneBodyTimeout: a body that does not arrive in time gets rpcGuard's
// 408 on the lane as on net/http, and the connection closes.
func TestLaneBodyTimeout(t *testing.T) {
	set := testSettings(t, 16)
	set.Limits.BodyTimeout = 300 * time.Millisecond
	url, token, g, _ := startGateway(t, set, &syncBuffer{})
	sid := newRawSession(t, url, token).id
	partial := strings.Replace(mcpPost(token, sid, ""), "Content-Length: 0", "Content-Length: 100", 1) + `{"jsonrpc":`
	lane, fresh := dialWire(t, url), dialWire(t, url)
	lane.call(token, sid, 1, "who")
	lane.call(token, sid, 2, "who")
	served := g.lane.served.Load()
	var got [2]string
	for i, w := range []*wireConn{lane, fresh} {
		w.send(partial)
		resp, body := w.response()
		got[i] = fmt.Sprintf("%s|close=%v|%s", resp.Status, resp.Close, body)
	}
	if got[0] != got[1] || !strings.HasPrefix(got[0], "408") || !strings.Contains(got[0], "close=true") {
		t.Fatalf("slow body: lane %q, net/http %q", got[0], got[1])
	}
	if g.lane.served.Load() != served || g.lane.handedBack.Load() != 0 {
		t.Fatalf("the lane did not answer the slow body itself")
	}
}
