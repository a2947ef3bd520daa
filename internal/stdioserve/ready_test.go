package stdioserve

import (
	"bytes"
	"context"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// countingReader counts the reads of the client's stdin.
type countingReader struct {
	io.Reader
	reads atomic.Int32
}

func (r *countingReader) Read(p []byte) (int, error) {
	r.reads.Add(1)
	return r.Reader.Read(p)
}

// TestNothingReadBeforeConnected: the Transport of New reads no message of
// the client before Connected. The SDK's Server.Connect starts its reader
// before it records the versions the transport serves; a server/discover
// read in that moment was answered with 2026-07-28 among them, and the
// client then spoke a revision stdio mode refuses (seen under load as
// "protocol version 2026-07-28 is not served in stdio mode" on a Go SDK
// client's first call).
func TestNothingReadBeforeConnected(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pr, pw := io.Pipe() // stays open until the end: EOF would end the session
	go pw.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"))
	in := &countingReader{Reader: pr}
	out := &lockedBuffer{}
	tr := New(in, out, time.Second)
	server := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	ss, err := server.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		pw.Close() // EOF first: the SDK's Close waits for its reader
		ss.Close()
	}()
	// The SDK's transport may read stdin ahead, but hands the session no
	// message before Connected: the ping stays unanswered. Wait until stdin
	// was read, then give the SDK's reader every chance to run.
	for in.reads.Load() == 0 && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	for range 50 {
		time.Sleep(time.Millisecond)
	}
	if got := out.String(); got != "" {
		t.Fatalf("answered before Connected: %s", got)
	}
	tr.Connected()
	deadline := time.Now().Add(15 * time.Second)
	for out.String() == "" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if out.String() == "" {
		t.Fatal("the ping read after Connected got no answer")
	}
}

// lockedBuffer is stdout for a test: written by the transport, read by the
// test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
