package endpoint

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestSDKPathAnswerInOneWrite: a request the SDK answers (here a call of a
// tool no server has, which the fast path leaves to the SDK's error) gets
// its answer, the only event of its SSE stream, with a Content-Length: one
// write, no chunks.
func TestSDKPathAnswerInOneWrite(t *testing.T) {
	url, token, _ := inProcessGatewayOf(t, testSettings(t, 16), io.Discard, fixtureSpec("fx", fixture.Options{Tools: []string{"echo"}}))
	s := newRawSession(t, url, token)
	status, h, events := s.postEvents(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"no-such-tool","arguments":{}}}`)
	if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("unknown tool: %d %q, want 200 and the SDK's SSE stream", status, h.Get("Content-Type"))
	}
	if len(events) != 1 || !strings.HasPrefix(events[0], `{"jsonrpc":"2.0","id":7,"error":`) {
		t.Fatalf("events = %q, want the error answer alone", events)
	}
	n, err := strconv.Atoi(h.Get("Content-Length"))
	if want := len("event: message\ndata: " + events[0] + "\n\n"); err != nil || n != want {
		t.Errorf("Content-Length = %q, want %d (the event's length)", h.Get("Content-Length"), want)
	}
}

// TestAnswerWriterStreamsWhatIsNotTheAnswerAlone: an SSE response whose
// first event is not the answer (a notification before it) streams as the
// SDK writes it, each event flushed, without a Content-Length; the answer
// still comes last. Real net/http on 127.0.0.1.
func TestAnswerWriterStreamsWhatIsNotTheAnswerAlone(t *testing.T) {
	const (
		note   = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n"
		answer = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n"
	)
	flushed := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		aw := newAnswerWriter(w, []byte("7"))
		aw.Header().Set("Content-Type", "text/event-stream")
		_, _ = aw.Write([]byte(note))
		_ = http.NewResponseController(aw).Flush()
		<-flushed // the client read the notification before the answer was written
		_, _ = aw.Write([]byte(answer))
		_ = http.NewResponseController(aw).Flush()
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	resp, err := http.Get("http://" + ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ContentLength != -1 {
		t.Errorf("Content-Length %d, want none (streamed)", resp.ContentLength)
	}
	first := make([]byte, len(note))
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != note {
		t.Fatalf("first event %q (%v), want the notification", first, err)
	}
	close(flushed)
	if rest, err := io.ReadAll(resp.Body); err != nil || string(rest) != answer {
		t.Errorf("rest %q (%v), want the answer", rest, err)
	}
}
