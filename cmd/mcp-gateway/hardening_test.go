package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// These tests hold the real binary to what one client must not be able to
// make it hold: memory through a session (batches, many requests, large
// ids, subscriptions, what initialize sends), or a connection past its
// limits (a header deadline restarted by the lane's hand-back, a request
// with both Content-Length and Transfer-Encoding kept alive). They speak
// HTTP byte for byte over raw sockets.

// hardenedBox launches the real gateway with one fixture server and extra
// flags, and returns it once ready.
func hardenedBox(t *testing.T, extra ...string) *testbox {
	t.Helper()
	sb := newTestbox(t)
	cfg := mcpConfig(t, map[string]any{"fx": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Tools: []string{"echo", "sleep"}})}})
	if r := sb.launch(cfg, extra...); r.code != 0 {
		t.Fatalf("launch exited %d\nstdout: %s\nstderr: %s\nlog:\n%s", r.code, r.stdout, r.stderr, sb.log())
	}
	return sb
}

// rawConn is one TCP connection to the gateway.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, sb *testbox) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(sb.url(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
}

func (rc *rawConn) send(s string) error {
	_, err := io.WriteString(rc.c, s)
	return err
}

// response reads one response and its whole body.
func (rc *rawConn) response() (*http.Response, []byte) {
	rc.t.Helper()
	_ = rc.c.SetReadDeadline(time.Now().Add(60 * time.Second))
	defer rc.c.SetReadDeadline(time.Time{})
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		rc.t.Fatalf("read response: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		rc.t.Fatalf("read body: %v", err)
	}
	return resp, body
}

// closedBy reports whether the gateway closes the connection (EOF or a
// reset, with nothing more to read) before deadline; false when the
// deadline passes or more bytes arrive.
func (rc *rawConn) closedBy(deadline time.Time) bool {
	_ = rc.c.SetReadDeadline(deadline)
	defer rc.c.SetReadDeadline(time.Time{})
	if _, err := rc.br.ReadByte(); err == nil {
		return false
	} else {
		var ne net.Error
		return !(errors.As(err, &ne) && ne.Timeout())
	}
}

// post is a POST /mcp as clients send it, with the session and protocol
// headers when set and extra header lines after them.
func post(sb *testbox, sid, version, body string, extra ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n", sb.token)
	b.WriteString("Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n")
	if sid != "" {
		fmt.Fprintf(&b, "Mcp-Session-Id: %s\r\n", sid)
	}
	if version != "" {
		fmt.Fprintf(&b, "Mcp-Protocol-Version: %s\r\n", version)
	}
	for _, h := range extra {
		b.WriteString(h + "\r\n")
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	return b.String()
}

// reply is one JSON-RPC response.
type reply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// replies decodes a response body: one JSON-RPC response, a batch of them,
// or an SSE stream of them.
func replies(t *testing.T, resp *http.Response, body []byte) []reply {
	t.Helper()
	var out []reply
	decode := func(b []byte) {
		b = []byte(strings.TrimSpace(string(b)))
		if len(b) > 0 && b[0] == '[' {
			var rs []reply
			if err := json.Unmarshal(b, &rs); err != nil {
				t.Fatalf("batch answer is not JSON-RPC: %.200q: %v", b, err)
			}
			out = append(out, rs...)
			return
		}
		var r reply
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("answer is not JSON-RPC: %.200q: %v", b, err)
		}
		out = append(out, r)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(body), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				decode([]byte(data))
			}
		}
		return out
	}
	decode(body)
	return out
}

// roundTrip sends one request on a fresh connection and returns its answer.
func roundTrip(t *testing.T, sb *testbox, req string) (*http.Response, []reply) {
	t.Helper()
	rc := dialRaw(t, sb)
	if err := rc.send(req); err != nil {
		t.Fatal(err)
	}
	resp, body := rc.response()
	if resp.StatusCode == http.StatusAccepted {
		return resp, nil
	}
	return resp, replies(t, resp, body)
}

// initSession initializes a session on the given protocol version and
// returns its id.
func initSession(t *testing.T, sb *testbox, version string) string {
	t.Helper()
	return initSessionWith(t, sb, version, `{"name":"raw","version":"1"}`)
}

// initSessionWith initializes a session whose client calls itself clientInfo.
func initSessionWith(t *testing.T, sb *testbox, version, clientInfo string) string {
	t.Helper()
	return initSessionCaps(t, sb, version, clientInfo, `{}`)
}

// initSessionCaps initializes a session whose client declares caps.
func initSessionCaps(t *testing.T, sb *testbox, version, clientInfo, caps string) string {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":` + caps + `,"clientInfo":` + clientInfo + `}}`
	resp, rs := roundTrip(t, sb, post(sb, "", "", body))
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || len(rs) != 1 || rs[0].Error != nil || sid == "" {
		t.Fatalf("initialize on %s: %s %+v", version, resp.Status, rs)
	}
	if resp, _ := roundTrip(t, sb, post(sb, sid, version, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %s", resp.Status)
	}
	return sid
}

// pings is a batch of n pings, ids 1..n.
func pings(n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i)
	}
	b.WriteByte(']')
	return b.String()
}

// mustPing fails unless a single ping on the session is answered.
func mustPing(t *testing.T, sb *testbox, sid, version string) {
	t.Helper()
	resp, rs := roundTrip(t, sb, post(sb, sid, version, `{"jsonrpc":"2.0","id":"after","method":"ping"}`))
	if resp.StatusCode != http.StatusOK || len(rs) != 1 || rs[0].Error != nil || string(rs[0].ID) != `"after"` {
		t.Fatalf("ping on the session afterwards: %s %+v", resp.Status, rs)
	}
}

// TestBatchRefusedWhereTheProtocolHasNone: a session that negotiated
// 2025-06-18 or later gets a JSON-RPC error for a batch, whatever the
// request's Mcp-Protocol-Version says (absent, or an older one), and keeps
// working. Where the protocol has batches (2025-03-26), they are answered up
// to --max-batch messages and refused beyond.
func TestBatchRefusedWhereTheProtocolHasNone(t *testing.T) {
	sb := hardenedBox(t, "--max-batch", "8")
	for _, version := range []string{"2025-06-18", "2025-11-25"} {
		sid := initSession(t, sb, version)
		for _, header := range []string{"", "2025-03-26", version} {
			resp, rs := roundTrip(t, sb, post(sb, sid, header, pings(3)))
			if resp.StatusCode != http.StatusBadRequest || len(rs) != 1 || rs[0].Error == nil ||
				rs[0].Error.Code != -32600 || !strings.Contains(rs[0].Error.Message, "batch") {
				t.Errorf("%s session, batch with Mcp-Protocol-Version %q: %s %+v; want 400 and a -32600 error", version, header, resp.Status, rs)
			}
			mustPing(t, sb, sid, version)
		}
	}

	old := initSession(t, sb, "2025-03-26")
	resp, rs := roundTrip(t, sb, post(sb, old, "2025-03-26", pings(8)))
	if resp.StatusCode != http.StatusOK || len(rs) != 8 {
		t.Fatalf("batch of 8 on a 2025-03-26 session: %s, %d answers", resp.Status, len(rs))
	}
	for _, r := range rs {
		if r.Error != nil {
			t.Errorf("batch answer %s: %+v", r.ID, r.Error)
		}
	}
	resp, rs = roundTrip(t, sb, post(sb, old, "2025-03-26", pings(9)))
	if resp.StatusCode != http.StatusBadRequest || len(rs) != 1 || rs[0].Error == nil || !strings.Contains(rs[0].Error.Message, "--max-batch") {
		t.Errorf("batch of 9 with --max-batch 8: %s %+v; want 400 naming --max-batch", resp.Status, rs)
	}
	mustPing(t, sb, old, "2025-03-26")

	// Without a session there is nothing to batch: initialize may not be
	// part of a batch, and everything else needs a session.
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	resp, rs = roundTrip(t, sb, post(sb, "", "", "["+init+","+`{"jsonrpc":"2.0","id":1,"method":"ping"}`+"]"))
	if resp.StatusCode != http.StatusBadRequest || len(rs) != 1 || rs[0].Error == nil || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Errorf("batch without a session: %s %+v; want 400 and no session", resp.Status, rs)
	}
}

// laneConn returns a connection the HTTP lane serves: one fast-path call
// answered on it moves it there (logged at debug level).
func laneConnOf(t *testing.T, sb *testbox, sid string) *rawConn {
	t.Helper()
	before := strings.Count(sb.log(), "connection moved to the HTTP lane")
	rc := dialRaw(t, sb)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`
	if err := rc.send(post(sb, sid, "2025-11-25", call)); err != nil {
		t.Fatal(err)
	}
	resp, body := rc.response()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("fast-path call: %s %s %q", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(sb.log(), "connection moved to the HTTP lane") == before {
		if time.Now().After(deadline) {
			t.Fatalf("the connection never moved to the lane:\n%s", sb.log())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return rc
}

// TestHandBackKeepsTheHeaderDeadline: header bytes trickled on a lane
// connection, then a header the lane does not take (Transfer-Encoding), so
// that net/http gets the request: the connection still closes within
// --read-header-timeout of the request's first byte, not that long after
// the hand-back. On a fresh connection, for comparison, net/http's own
// deadline.
func TestHandBackKeepsTheHeaderDeadline(t *testing.T) {
	const limit = 2 * time.Second
	sb := hardenedBox(t, "--read-header-timeout", limit.String(), "--log-level", "debug")
	sid := initSession(t, sb, "2025-11-25")
	for _, onLane := range []bool{false, true} {
		name := map[bool]string{false: "fresh", true: "lane"}[onLane]
		t.Run(name, func(t *testing.T) {
			var rc *rawConn
			if onLane {
				rc = laneConnOf(t, sb, sid)
			} else {
				rc = dialRaw(t, sb)
			}
			start := time.Now()
			done := make(chan struct{})
			var took time.Duration
			go func() {
				rc.closedBy(start.Add(4 * limit))
				took = time.Since(start)
				close(done)
			}()
			trickle := func(s string, until time.Duration) {
				for i := 0; i < len(s) && time.Since(start) < until; i++ {
					if rc.send(s[i:i+1]) != nil {
						return
					}
					select {
					case <-done:
						return
					case <-time.After(50 * time.Millisecond):
					}
				}
			}
			head := "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + strings.Repeat("a", 200)
			// Trickle until just short of the limit, hand the request to
			// net/http, and go on trickling.
			trickle(head, limit*9/10)
			_ = rc.send("\r\nTransfer-Encoding: chunked\r\nX-Slower: ")
			trickle(strings.Repeat("b", 400), 4*limit)
			<-done
			if took > limit+limit/2 {
				t.Errorf("the connection lived %v after its first header byte; --read-header-timeout is %v", took.Round(time.Millisecond), limit)
			}
		})
	}
}

// TestContentLengthWithTransferEncodingCloses: a request with both headers
// is answered and its connection closed (RFC 9112 6.1), on a fresh
// connection and on one the lane serves.
func TestContentLengthWithTransferEncodingCloses(t *testing.T) {
	sb := hardenedBox(t, "--log-level", "debug")
	sid := initSession(t, sb, "2025-11-25")
	ping := `{"jsonrpc":"2.0","id":"clte","method":"ping"}`
	chunked := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(ping), ping)
	req := post(sb, sid, "2025-11-25", "", "Transfer-Encoding: chunked")
	req = strings.Replace(req, "Content-Length: 0\r\n\r\n", "Content-Length: 5\r\n\r\n", 1) + chunked
	// A second request right behind it: a proxy framing by Content-Length
	// would take part of the first body for it.
	req += post(sb, sid, "2025-11-25", `{"jsonrpc":"2.0","id":"second","method":"ping"}`)
	for _, onLane := range []bool{false, true} {
		name := map[bool]string{false: "fresh", true: "lane"}[onLane]
		t.Run(name, func(t *testing.T) {
			var rc *rawConn
			if onLane {
				rc = laneConnOf(t, sb, sid)
			} else {
				rc = dialRaw(t, sb)
			}
			if err := rc.send(req); err != nil {
				t.Fatal(err)
			}
			resp, body := rc.response()
			rs := replies(t, resp, body)
			if resp.StatusCode != http.StatusOK || len(rs) != 1 || string(rs[0].ID) != `"clte"` {
				t.Fatalf("CL+TE ping: %s %q", resp.Status, body)
			}
			if !resp.Close {
				t.Errorf("the answer does not say Connection: close: %v", resp.Header)
			}
			if !rc.closedBy(time.Now().Add(10 * time.Second)) {
				t.Error("the connection stayed open after a request with Content-Length and Transfer-Encoding")
			}
		})
	}
}

// rssKiB reads a process's resident set size.
func rssKiB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// Bounds the memory test relies on, as the README documents them.
const (
	documentedMaxInitializeBytes = 64 << 10
	documentedMaxIDBytes         = 1 << 10
)

// TestSessionMemoryIsBounded sends, on many sessions, the largest message
// of every kind the gateway accepts (and some it refuses): an initialize at
// its bound, a tools/call of the whole body limit each way, a ping with
// the longest id, a log level, batches at --max-batch where the protocol
// has them, and a body-sized batch of pings where it has none. Once they
// are answered the gateway's RSS must come back to within a few MiB of
// where it started, with every session still open: what a session keeps
// does not depend on what it was sent. Measured, with a generous bound.
func TestSessionMemoryIsBounded(t *testing.T) {
	const (
		maxBody  = 1 << 20
		maxBatch = 16
		sessions = 16
		slack    = 12 << 10 // KiB: generous; the answered state of 17 sessions measured 5-7 MiB
	)
	sb := hardenedBox(t, "--max-body-bytes", strconv.Itoa(maxBody), "--max-batch", strconv.Itoa(maxBatch))
	pid := sb.pid()
	initSession(t, sb, "2025-11-25") // warm up what the first session sets up
	base := rssKiB(t, pid)

	pad := func(n int) string { return strings.Repeat("x", max(n, 0)) }
	peak := base
	for i := range sessions {
		version := []string{"2025-11-25", "2025-03-26"}[i%2]
		// initialize at its bound, the padding in the client's name.
		initFrame := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"","version":"1"}}}`
		sid := initSessionWith(t, sb, version, `{"name":"`+pad(documentedMaxInitializeBytes-len(initFrame))+`","version":"1"}`)

		call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":""}}}`
		resp, rs := roundTrip(t, sb, post(sb, sid, version, strings.Replace(call, `"text":""`, `"text":"`+pad(maxBody-len(call))+`"`, 1)))
		if resp.StatusCode != http.StatusOK || len(rs) != 1 || rs[0].Error != nil || len(rs[0].Result) < maxBody-len(call) {
			t.Fatalf("session %d: echo of the body limit: %s, %d answers", i, resp.Status, len(rs))
		}
		longID := `"` + pad(documentedMaxIDBytes-2) + `"`
		resp, rs = roundTrip(t, sb, post(sb, sid, version, `{"jsonrpc":"2.0","id":`+longID+`,"method":"ping"}`))
		if resp.StatusCode != http.StatusOK || len(rs) != 1 || string(rs[0].ID) != longID {
			t.Fatalf("session %d: ping with a %d-byte id: %s %+v", i, len(longID), resp.Status, rs)
		}
		resp, rs = roundTrip(t, sb, post(sb, sid, version, `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"emergency"}}`))
		if resp.StatusCode != http.StatusOK || len(rs) != 1 || rs[0].Error != nil {
			t.Fatalf("session %d: logging/setLevel: %s %+v", i, resp.Status, rs)
		}
		// A batch filling the body limit: answered nowhere (too many
		// messages for --max-batch, or no batching at all).
		huge := pings(maxBody / 40)
		for len(huge) > maxBody {
			huge = pings(strings.Count(huge, "ping") * 9 / 10)
		}
		resp, _ = roundTrip(t, sb, post(sb, sid, version, huge))
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("session %d (%s): a batch of %d pings: %s, want 400", i, version, strings.Count(huge, "ping"), resp.Status)
		}
		if version == "2025-03-26" {
			// The largest batch allowed, each id as long as allowed.
			var b strings.Builder
			b.WriteByte('[')
			for j := range maxBatch {
				if j > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":"%03d%s","method":"ping"}`, j, pad(documentedMaxIDBytes-5))
			}
			b.WriteByte(']')
			resp, rs = roundTrip(t, sb, post(sb, sid, version, b.String()))
			if resp.StatusCode != http.StatusOK || len(rs) != maxBatch {
				t.Fatalf("session %d: batch of %d: %s, %d answers", i, maxBatch, resp.Status, len(rs))
			}
		}
		mustPing(t, sb, sid, version)
		peak = max(peak, rssKiB(t, pid))
	}

	// The gateway gives memory back once it is quiet: wait for that.
	var now int
	deadline := time.Now().Add(60 * time.Second)
	for now = rssKiB(t, pid); now > base+slack && time.Now().Before(deadline); now = rssKiB(t, pid) {
		time.Sleep(200 * time.Millisecond)
	}
	// Where it settles: the lowest reading over the next seconds (the
	// gateway trims after a quiet second).
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		now = min(now, rssKiB(t, pid))
	}
	t.Logf("RSS: %d KiB at the start, %d KiB at the highest reading under load, %d KiB once answered (%d sessions open)", base, peak, now, sessions+1)
	if now > base+slack {
		t.Errorf("RSS stayed at %d KiB, %d KiB over the %d KiB it started at (bound: %d KiB)", now, now-base, base, slack)
	}
}

// TestSessionBoundsRefuse: each thing a session keeps is refused past its
// bound, with a JSON-RPC error that names it, and the session goes on:
// requests in flight (--max-session-requests), subscriptions
// (--max-subscriptions), an id or an initialize too long to keep, a log
// level that is not one.
func TestSessionBoundsRefuse(t *testing.T) {
	sb := hardenedBox(t, "--max-session-requests", "2", "--max-subscriptions", "1")
	const v = "2025-11-25"
	sid := initSession(t, sb, v)
	refused := func(what string, resp *http.Response, rs []reply, status, code int, mention string) {
		t.Helper()
		if resp.StatusCode != status || len(rs) != 1 || rs[0].Error == nil || rs[0].Error.Code != code || !strings.Contains(rs[0].Error.Message, mention) {
			t.Errorf("%s: %s %+v; want %d, a %d error mentioning %q", what, resp.Status, rs, status, code, mention)
		}
	}

	// Two sleeps in flight fill the session; a third request waits for
	// neither and is refused at once, a notification still goes through.
	sleeping := make(chan int, 2)
	for i := range 2 {
		go func() {
			resp, _ := roundTrip(t, sb, post(sb, sid, v, fmt.Sprintf(`{"jsonrpc":"2.0","id":"s%d","method":"tools/call","params":{"name":"sleep","arguments":{"ms":1500}}}`, i)))
			sleeping <- resp.StatusCode
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(sb.log(), "sleep started 1500ms") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the sleeps never started:\n%s", sb.log())
		}
		time.Sleep(10 * time.Millisecond)
	}
	resp, rs := roundTrip(t, sb, post(sb, sid, v, `{"jsonrpc":"2.0","id":"third","method":"ping"}`))
	refused("a third request in flight", resp, rs, http.StatusTooManyRequests, -32600, "--max-session-requests")
	if resp, _ := roundTrip(t, sb, post(sb, sid, v, `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)); resp.StatusCode != http.StatusAccepted {
		t.Errorf("a notification while the session is full: %s", resp.Status)
	}
	for range 2 {
		if code := <-sleeping; code != http.StatusOK {
			t.Errorf("a sleep answered %d", code)
		}
	}
	mustPing(t, sb, sid, v)

	// One subscription held: a second is refused until the first ends.
	resp, rs = roundTrip(t, sb, post(sb, sid, v, `{"jsonrpc":"2.0","id":"sub1","method":"resources/subscribe","params":{"uri":"fixture://fixture/info"}}`))
	if resp.StatusCode != http.StatusOK || len(rs) != 1 || rs[0].Error != nil {
		t.Fatalf("subscribe: %s %+v", resp.Status, rs)
	}
	other := `{"jsonrpc":"2.0","id":"sub2","method":"resources/subscribe","params":{"uri":"fixture://fixture/other"}}`
	resp, rs = roundTrip(t, sb, post(sb, sid, v, other))
	refused("a second subscription", resp, rs, http.StatusTooManyRequests, -32600, "--max-subscriptions")
	resp, rs = roundTrip(t, sb, post(sb, sid, v, `{"jsonrpc":"2.0","id":"unsub","method":"resources/unsubscribe","params":{"uri":"fixture://fixture/info"}}`))
	if resp.StatusCode != http.StatusOK || len(rs) != 1 || rs[0].Error != nil {
		t.Fatalf("unsubscribe: %s %+v", resp.Status, rs)
	}
	resp, rs = roundTrip(t, sb, post(sb, sid, v, other))
	if len(rs) == 1 && rs[0].Error != nil && strings.Contains(rs[0].Error.Message, "--max-subscriptions") {
		t.Errorf("a subscription after the unsubscribe is still refused: %s %+v", resp.Status, rs)
	}

	// What a session would keep for its life is bounded by size.
	resp, rs = roundTrip(t, sb, post(sb, sid, v, `{"jsonrpc":"2.0","id":"`+strings.Repeat("i", documentedMaxIDBytes-1)+`","method":"ping"}`))
	refused("an id over the bound", resp, rs, http.StatusBadRequest, -32600, `"id" longer than 1024 bytes`)
	resp, rs = roundTrip(t, sb, post(sb, sid, v, `{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"loud"}}`))
	refused("an unknown log level", resp, rs, http.StatusBadRequest, -32602, "level must be one of")
	resp, rs = roundTrip(t, sb, post(sb, sid, v, `{"jsonrpc":"2.0","id":4,"method":"resources/subscribe","params":{"uri":"fixture://`+strings.Repeat("u", 4<<10)+`"}}`))
	refused("a subscription URI over the bound", resp, rs, http.StatusBadRequest, -32602, "uri longer than 4096 bytes")
	mustPing(t, sb, sid, v)
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"","version":"1"}}}`
	init = strings.Replace(init, `"name":""`, `"name":"`+strings.Repeat("n", documentedMaxInitializeBytes-len(init)+1)+`"`, 1)
	resp, rs = roundTrip(t, sb, post(sb, "", "", init))
	refused("an initialize over the bound", resp, rs, http.StatusBadRequest, -32600, "initialize larger than 65536 bytes")
	if resp.Header.Get("Mcp-Session-Id") != "" {
		t.Error("an initialize over the bound made a session")
	}
}

// TestHungUpCallsStillCount: a call that takes the SDK's path (with a
// progress token in a batch, on a 2025-03-26 session: the fast path
// answers a batch as one JSON array, where progress has no place) runs on
// after its client hangs up, and the SDK keeps it until it ends: such calls
// still count against --max-session-requests, so hanging up cannot pile
// them up.
func TestHungUpCallsStillCount(t *testing.T) {
	sb := hardenedBox(t, "--max-session-requests", "2")
	const v = "2025-03-26"
	sid := initSessionCaps(t, sb, v, `{"name":"raw","version":"1"}`, `{"sampling":{}}`)
	sleep := func(id string, ms int) string {
		return post(sb, sid, v, fmt.Sprintf(`[{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":%d},"_meta":{"progressToken":"p"}}}]`, id, ms))
	}
	for i := range 2 {
		rc := dialRaw(t, sb)
		if err := rc.send(sleep(fmt.Sprintf("gone%d", i), 8000)); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for strings.Count(sb.log(), "sleep started 8000ms") < i+1 {
			if time.Now().After(deadline) {
				t.Fatalf("sleep %d never started:\n%s", i, sb.log())
			}
			time.Sleep(10 * time.Millisecond)
		}
		rc.c.Close() // hang up mid-call
	}
	// Once the gateway has seen both hang-ups (no more 429 at the door), a
	// third call still finds two being handled.
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, rs := roundTrip(t, sb, sleep("third", 1))
		if resp.StatusCode == http.StatusTooManyRequests {
			if time.Now().After(deadline) {
				t.Fatalf("hang-ups not seen after 5s: %+v", rs)
			}
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if len(rs) != 1 || rs[0].Error == nil || !strings.Contains(rs[0].Error.Message, "--max-session-requests") {
			t.Fatalf("a third call with two hung-up calls still running: %s %+v; want an error naming --max-session-requests", resp.Status, rs)
		}
		break
	}
	// When they end, the session serves again.
	deadline = time.Now().Add(30 * time.Second)
	for {
		resp, rs := roundTrip(t, sb, sleep("later", 1))
		if resp.StatusCode == http.StatusOK && len(rs) == 1 && rs[0].Error == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session never served again after the hung-up calls ended: %s %+v", resp.Status, rs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
