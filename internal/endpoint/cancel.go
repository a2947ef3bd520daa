package endpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// A call the agent cancels with notifications/cancelled gets no answer: the
// spec asks the receiver of a cancellation not to respond, and a server
// connected directly does not. Over HTTP the POST that carried the call
// still needs an HTTP response, so it ends as an SSE stream without the
// JSON-RPC response (noAnswer), which neither the TypeScript nor the Go SDK
// client tries to resume (it carries no event id).
//
// On the fast path (fastpath.go) that is written instead of the call's
// error. On the SDK path the SDK itself would write "context canceled" as
// soon as the cancellation cancels the handler; sdkCalls ends the call's
// POST first, so that when the SDK writes the answer its stream is gone and
// the SDK drops it (go-sdk v1.8.0: a write to a released stream is
// rejected, which does not break the session).

// errCancelledByAgent is the cause of a fast call's context when the agent
// cancelled it, as opposed to its session or connection ending.
var errCancelledByAgent = errors.New("cancelled by the agent (notifications/cancelled)")

// noAnswer ends a cancelled call's POST without a JSON-RPC response: status
// 200 and an empty SSE stream, as an SDK-path POST whose answer was dropped
// looks.
func noAnswer(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
}

// cancelledID returns the requestId of a notifications/cancelled, trimmed
// as request ids are compared here (the bytes of the id as sent), or nil.
func cancelledID(msg *rpcMessage) json.RawMessage {
	if msg == nil || msg.Method != "notifications/cancelled" {
		return nil
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(msg.Params, &p) != nil || len(p.RequestID) == 0 {
		return nil
	}
	return bytes.TrimSpace(p.RequestID)
}

// sdkCalls tracks the calls in flight on the SDK path by session and id, so
// that a cancellation can end the call's POST before the SDK sees it.
type sdkCalls struct {
	mu    sync.Mutex
	calls map[fastCallKey]*sdkCall

	// served counts the requests passed to the SDK, and tracked those of
	// them that were calls a cancellation could end, for tests: which
	// path took a request.
	served, tracked atomic.Int64
}

type sdkCall struct {
	stop context.CancelFunc
	done chan struct{} // closed when the SDK's handler of the POST returned
}

// endWait bounds how long a cancellation waits for the SDK to let go of the
// call's POST (it does at once when the request's context ends).
const endWait = 5 * time.Second

func newSDKCalls() *sdkCalls { return &sdkCalls{calls: make(map[fastCallKey]*sdkCall)} }

// serve passes r to sdk. A POST of one call on a session is served with a
// context that a cancellation of that call ends; a notifications/cancelled
// first ends the POST of the call it names, then goes to the SDK, which
// cancels the handler (and the upstream request).
func (c *sdkCalls) serve(sdk http.Handler, w http.ResponseWriter, r *http.Request) {
	c.served.Add(1)
	msg := messageOf(r)
	sid := r.Header.Get(sessionIDHeader)
	if r.Method != http.MethodPost || msg == nil || sid == "" {
		sdk.ServeHTTP(w, r)
		return
	}
	if id := cancelledID(msg); id != nil {
		c.end(fastCallKey{sid, string(id)})
		sdk.ServeHTTP(w, r)
		return
	}
	if len(msg.ID) == 0 || msg.Method == "" {
		sdk.ServeHTTP(w, r)
		return
	}
	key := fastCallKey{sid, string(msg.ID)}
	ctx, stop := context.WithCancel(r.Context())
	call := &sdkCall{stop: stop, done: make(chan struct{})}
	c.mu.Lock()
	_, dup := c.calls[key]
	if !dup {
		c.calls[key] = call
	}
	c.mu.Unlock()
	if dup { // a reused id in flight: the SDK refuses it
		stop()
		sdk.ServeHTTP(w, r)
		return
	}
	c.tracked.Add(1)
	defer func() {
		c.mu.Lock()
		delete(c.calls, key)
		c.mu.Unlock()
		stop()
		close(call.done)
	}()
	sdk.ServeHTTP(newAnswerWriter(w, msg.ID), r.WithContext(ctx))
}

// end ends the POST of the call key, if it is in flight, and waits until
// the SDK has let go of it.
func (c *sdkCalls) end(key fastCallKey) {
	c.mu.Lock()
	call := c.calls[key]
	c.mu.Unlock()
	if call == nil {
		return
	}
	call.stop()
	select {
	case <-call.done:
	case <-time.After(endWait):
	}
}
