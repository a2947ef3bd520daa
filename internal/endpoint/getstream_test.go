package endpoint

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// openGET opens session s's standalone GET stream; the response is closed
// at the test's end.
func openGET(t *testing.T, ctx context.Context, s *rawSession) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", s.id)
	req.Header.Set("Mcp-Protocol-Version", s.version)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// readUntil reads lines of an SSE body until one contains want; it fails
// the test when the stream ends first.
func readUntil(t *testing.T, r *bufio.Reader, want string) {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if strings.Contains(line, want) {
			return
		}
		if err != nil {
			t.Fatalf("the stream ended (%v) before %q", err, want)
		}
	}
}

// TestGETStreamKeptAliveAndReplaced: an idle standalone stream gets SSE
// comment lines at the keep-alive interval; a second GET of the session is
// served (the SDK alone answers it 409) and ends the first, and the
// server's messages then reach the second.
func TestGETStreamKeptAliveAndReplaced(t *testing.T) {
	set := testSettings(t, 8)
	set.Limits.StreamKeepAlive = 50 * time.Millisecond
	url, token, _ := inProcessGatewayOf(t, set, io.Discard,
		fixtureSpec("fx", fixture.Options{Tools: append([]string{"echo"}, fixture.ProtocolTools()...)}))
	s := newRawSession(t, url, token)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	first := openGET(t, ctx, s)
	if first.StatusCode != http.StatusOK {
		t.Fatalf("first GET: %d", first.StatusCode)
	}
	r1 := bufio.NewReader(first.Body)
	readUntil(t, r1, ": keep-alive")
	readUntil(t, r1, ": keep-alive") // and again: at an interval

	second := openGET(t, ctx, s)
	if second.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(second.Body)
		t.Fatalf("a second GET of the session got %d %s; want it to replace the first", second.StatusCode, b)
	}
	if _, err := io.Copy(io.Discard, r1); err != nil {
		t.Fatalf("the replaced stream ended with %v, want its end", err)
	}
	if status, _, replies := s.post(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"add_tool","arguments":{"name":"late"}}}`); status != http.StatusOK || len(replies) != 1 || replies[0].Error != nil {
		t.Fatalf("add_tool: %d %+v", status, replies)
	}
	readUntil(t, bufio.NewReader(second.Body), "notifications/tools/list_changed")
}
