package endpoint

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestCancelledCallsGetNoAnswer: a call the agent cancels with
// notifications/cancelled gets no JSON-RPC answer, as the spec asks of the
// receiver of a cancellation (a direct server does not answer either): its
// POST ends as an SSE stream without the response, on the fast path
// through net/http and on the lane, and on the SDK path (a call whose
// Mcp-Protocol-Version the SDK checks). The server sees every cancellation, and the session and
// the lane connection go on serving.
func TestCancelledCallsGetNoAnswer(t *testing.T) {
	url, token, g, logs := fastPathGateway(t)
	s := newRawSession(t, url, token)
	started := 0
	// cancelOnceStarted waits for the server to run the sleep of call id,
	// then cancels the call as an agent does.
	cancelOnceStarted := func(t *testing.T, id string) {
		t.Helper()
		started++
		waitFor(t, 30*time.Second, "the sleep to start", func() bool { return strings.Count(logs.String(), "sleep started") == started })
		if status, _, _ := s.post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `,"reason":"test"}}`); status != http.StatusAccepted {
			t.Fatalf("notifications/cancelled: HTTP %d", status)
		}
		waitFor(t, 10*time.Second, "the server to see the cancellation", func() bool { return strings.Count(logs.String(), "sleep cancelled") == started })
	}
	noAnswer := func(t *testing.T, status int, h http.Header, replies []rpcReply) {
		t.Helper()
		if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") || len(replies) != 0 {
			t.Errorf("cancelled call: HTTP %d %q with %d JSON-RPC messages %+v; want 200, an SSE stream and no answer",
				status, h.Get("Content-Type"), len(replies), replies)
		}
	}
	type answer struct {
		status  int
		h       http.Header
		replies []rpcReply
	}
	callAndCancel := func(t *testing.T, s *rawSession, id, meta string) answer {
		t.Helper()
		done := make(chan answer, 1)
		go func() {
			status, h, r := s.post(strings.Replace(callBody(0, "sleep", `{"ms":600000}`, meta), `"id":0`, `"id":`+id, 1))
			done <- answer{status, h, r}
		}()
		cancelOnceStarted(t, id)
		select {
		case a := <-done:
			return a
		case <-time.After(10 * time.Second):
			t.Fatal("the cancelled call's POST did not end")
			return answer{}
		}
	}

	// Each case checks that its path took the call: the fast path's and
	// the SDK path's counters.
	t.Run("fast path", func(t *testing.T) {
		fast, sdk := g.fast.forwarded.Load(), g.sdk.tracked.Load()
		a := callAndCancel(t, s, "7", "")
		noAnswer(t, a.status, a.h, a.replies)
		if g.fast.forwarded.Load() != fast+1 || g.sdk.tracked.Load() != sdk {
			t.Errorf("fast-path calls %d -> %d, SDK-path calls %d -> %d; want the fast path",
				fast, g.fast.forwarded.Load(), sdk, g.sdk.tracked.Load())
		}
		s.echo("after the fast path")
	})
	t.Run("SDK path", func(t *testing.T) {
		// A request whose Mcp-Protocol-Version is one the SDK supports
		// but not the session's is the SDK's (the fast path leaves that
		// check to it), as is its cancellation.
		other := *s
		other.t, other.version = t, "2025-06-18"
		fast, sdk := g.fast.forwarded.Load(), g.sdk.tracked.Load()
		a := callAndCancel(t, &other, `"sdk-8"`, `{"progressToken":"p8"}`)
		noAnswer(t, a.status, a.h, a.replies)
		if g.fast.forwarded.Load() != fast || g.sdk.tracked.Load() != sdk+1 {
			t.Errorf("fast-path calls %d -> %d, SDK-path calls %d -> %d; want the SDK path",
				fast, g.fast.forwarded.Load(), sdk, g.sdk.tracked.Load())
		}
		s.echo("after the SDK path")
	})
	t.Run("lane", func(t *testing.T) {
		w := dialWire(t, url)
		w.call(token, s.id, 1, "who") // a fast answer: the lane takes the connection
		adopted := g.lane.adopted.Load()
		w.send(mcpPost(token, s.id, callBody(9, "sleep", `{"ms":600000}`, "")))
		cancelOnceStarted(t, "9")
		resp, body := w.response()
		noAnswer(t, resp.StatusCode, resp.Header, parseReplies(t, resp.Header.Get("Content-Type"), body))
		if g.lane.adopted.Load() != adopted {
			t.Errorf("the connection left the lane and came back (adopted %d, then %d)", adopted, g.lane.adopted.Load())
		}
		if got := w.call(token, s.id, 10, "who"); got != "a:who" {
			t.Errorf("next call on the lane connection answered %q", got)
		}
	})
}
