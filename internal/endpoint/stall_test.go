package endpoint

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestStalledWriteEndsTheResponse: a client that stops reading (a
// standalone GET stream never read) cannot hold a handler, and what it
// would write, for longer than --write-timeout without progress: the
// blocked write fails, the request's context ends, and the connection
// closes. Real net/http on 127.0.0.1, a raw client with a small receive
// buffer that reads nothing.
func TestStalledWriteEndsTheResponse(t *testing.T) {
	const timeout = 300 * time.Millisecond
	ended := make(chan error, 1)
	srv := Limits{WriteTimeout: timeout}.server(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := []byte("data: " + strings.Repeat("x", 64<<10) + "\n\n")
		rc := http.NewResponseController(w)
		for range 4096 { // 256 MiB: far more than any socket buffer holds
			if _, err := w.Write(chunk); err != nil {
				ended <- err
				return
			}
			if err := rc.Flush(); err != nil {
				ended <- err
				return
			}
		}
		ended <- errors.New("the whole stream was written to a client that reads nothing")
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()

	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		if !strings.Contains(err.Error(), "timeout") && !strings.Contains(err.Error(), "deadline") {
			t.Errorf("the stalled write ended with %v, want a deadline error", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("a write to a client that reads nothing is still blocked after a minute")
	}
}

// dialStalled opens a connection to the endpoint at url that never reads:
// its receive buffer is as small as the kernel allows, so what the gateway
// writes to it soon blocks.
func dialStalled(t *testing.T, url string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	c, err := d.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestStalledAgentDoesNotHoldTheServer: the messages of a fast-path call
// reach its agent on the call's own SSE response, relayed from the
// server's reader. An agent that stops reading must not hold that reader:
// the server's later messages (here the stalled call's own result, then
// another session's calls) are still read and answered. The write timeout
// is far longer than the test, so only a reader that never waits for the
// agent passes. Real fixture server over stdio, real HTTP on 127.0.0.1.
func TestStalledAgentDoesNotHoldTheServer(t *testing.T) {
	set := testSettings(t, 16)
	set.Limits.WriteTimeout = 10 * time.Minute
	logs := &syncBuffer{}
	url, token, _ := inProcessGatewayOf(t, set, logs, fixtureSpec("fx", fixture.Options{Tools: []string{"echo", "log"}}))

	stalled := newRawSession(t, url, token)
	if status, _, replies := stalled.post(`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}`); status != http.StatusOK || len(replies) != 1 || replies[0].Error != nil {
		t.Fatalf("logging/setLevel: %d %+v", status, replies)
	}
	// 512 log messages of 32 KiB: 16 MiB, far more than the socket
	// buffers and the stream's backlog hold.
	args := fmt.Sprintf(`{"level":"info","message":%q,"count":512}`, strings.Repeat("x", 32<<10))
	c := dialStalled(t, url)
	if _, err := c.Write([]byte(mcpPost(token, stalled.id, callBody(2, "log", args, "")))); err != nil {
		t.Fatal(err)
	}
	// The audit line of a call is written once the server's result has
	// been read: after every log message the server sent before it.
	waitFor(t, 60*time.Second, "the stalled call's result to be read from the server", func() bool {
		return strings.Contains(logs.String(), `"tool":"log"`)
	})
	other := newRawSession(t, url, token)
	other.echo("served")
	c.Close() // the stalled write fails, the call ends
	waitFor(t, 30*time.Second, "the dropped notifications to be logged", func() bool {
		return strings.Contains(logs.String(), "its agent was not reading its stream")
	})
}
