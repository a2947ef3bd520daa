package endpoint

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
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
