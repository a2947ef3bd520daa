package endpoint

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestSDKPathAnswerInOneWrite: on the SDK path (a client that offers
// sampling), a call whose answer is the only event of its stream is sent
// with a Content-Length (one write, no chunks), still as an SSE event; a
// call that streams progress first streams as before, its answer last.
func TestSDKPathAnswerInOneWrite(t *testing.T) {
	url, token, _ := inProcessGatewayOf(t, testSettings(t, 16), io.Discard, fixtureSpec("fx", fixture.Options{Tools: []string{"echo", "progress"}}))
	s := newRawSessionWith(t, url, token, `{"sampling":{}}`)

	status, h, events := s.postEvents(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"one write"}}}`)
	if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("echo: %d %q, want 200 and an SSE stream", status, h.Get("Content-Type"))
	}
	if len(events) != 1 || !strings.HasPrefix(events[0], `{"jsonrpc":"2.0","id":7,"result":`) || !strings.Contains(events[0], "one write") {
		t.Fatalf("echo events = %q, want its answer alone", events)
	}
	n, err := strconv.Atoi(h.Get("Content-Length"))
	if want := len("event: message\ndata: " + events[0] + "\n\n"); err != nil || n != want {
		t.Errorf("echo Content-Length = %q, want %d (the event's length)", h.Get("Content-Length"), want)
	}

	status, h, events = s.postEvents(`{"jsonrpc":"2.0","id":"p","method":"tools/call","params":{"name":"progress","arguments":{"steps":2},"_meta":{"progressToken":"tok"}}}`)
	if status != http.StatusOK || h.Get("Content-Length") != "" {
		t.Fatalf("progress: %d, Content-Length %q; want 200 and a streamed answer", status, h.Get("Content-Length"))
	}
	if len(events) != 3 || !strings.Contains(events[0], `"notifications/progress"`) || !strings.Contains(events[1], `"notifications/progress"`) ||
		!strings.HasPrefix(events[2], `{"jsonrpc":"2.0","id":"p","result":`) {
		t.Errorf("progress events = %q, want two progress notifications, then the answer", events)
	}
}
