package endpoint

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// The fast path answers the lists (tools, prompts, resources, resource
// templates) and ping, and the requests the gateway forwards to one server
// (tools/call, prompts/get, resources/read, completion/complete,
// resources/subscribe and unsubscribe: aggregate.ForwardsRaw), outside the SDK's session machinery, as plain
// JSON responses (streamable HTTP lets a server answer a POST with
// application/json). The
// SDK path decodes a request into Go types, runs it through its handlers,
// encodes the result and frames it as an SSE stream; for a forwarded call
// that is done again on the upstream side. Here a call's result goes from the
// server's stdout to the agent as the bytes the server wrote.
//
// It takes only what it fully understands: a single request with an id (or
// a batch made only of what it takes alone: batch.go), on a session the SDK
// holds, from a client that accepts JSON responses. What it
// declines goes to the SDK unchanged, which also owns every error other than
// an upstream's: unknown tools, bad params, gone sessions (404).
type fastPath struct {
	e        *Endpoint
	sessions *sessionIndex

	mu    sync.Mutex
	calls map[fastCallKey]context.CancelCauseFunc // tools/call in flight, for notifications/cancelled
	// asks are the requests sent to agents on fast-path calls' streams
	// (sampling, elicitation, roots) waiting for the agent's answer, by
	// session and the id the gateway gave the request.
	asks   map[fastCallKey]chan agentAnswer
	askSeq atomic.Uint64
	// ended holds sessions closed by sessionLimit that the SDK still lists
	// while it closes them (Close waits for their SDK requests): a fast
	// call for one of them is left to the SDK, which answers 404 or waits.
	ended map[string]struct{}

	// forwarded counts the requests answered here by forwarding them (or
	// by aggregate.Task), for tests: which path took a request; stateless
	// counts the 2026-era ones among them (stateless.go); lists the lists
	// and pings answered from the aggregate's pages (fastlist.go).
	forwarded, stateless, lists atomic.Int64
	// sdkOnly, set by tests, leaves every 2026-era request to the SDK's
	// stateless handler, so that its answers can be compared with the
	// fast path's.
	sdkOnly atomic.Bool
}

type fastCallKey struct{ session, id string }

func newFastPath(e *Endpoint) *fastPath {
	return &fastPath{e: e, sessions: newSessionIndex(e.agg.Server()), calls: make(map[fastCallKey]context.CancelCauseFunc), asks: make(map[fastCallKey]chan agentAnswer), ended: make(map[string]struct{})}
}

// serve answers r and reports true, or reports false having written nothing.
func (f *fastPath) serve(w http.ResponseWriter, r *http.Request) bool {
	msg := messageOf(r)
	if msg != nil && msg.Stateless && r.Method == http.MethodPost {
		return f.serveStateless(w, r, msg) // stateless.go
	}
	sid := r.Header.Get(sessionIDHeader)
	if msg == nil || sid == "" || r.Method != http.MethodPost || msg.Stateless {
		return false
	}
	if msg.Batch > 0 {
		return f.batch(w, r, sid, msg)
	}
	task := aggregate.IsTaskRequest(msg.Method, msg.Params)
	if !task && f.e.agg.ViewOwns(r.Header, msg.Method, msg.Params) {
		return false // the search view's list and tools: the SDK path's
	}
	switch msg.Method {
	case "notifications/cancelled":
		return f.cancel(w, sid, msg)
	case "":
		if msg.Batch == 0 && len(msg.ID) > 0 {
			return f.answer(w, r, sid, msg) // a response: the agent's answer to a request
		}
		return false
	case "notifications/tasks/status":
		return f.taskStatus(w, r, sid, msg)
	default:
		if !task && !isListMethod(msg.Method) && !aggregate.ForwardsRaw(msg.Method) {
			return false
		}
	}
	if len(msg.ID) == 0 || !acceptsJSON(r) || foreignHost(r) {
		return false
	}
	ss := f.sessions.lookup(sid)
	if ss == nil {
		return false
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" {
		if ip := ss.InitializeParams(); ip == nil || ip.ProtocolVersion != v {
			return false // the SDK's check and its error
		}
	}
	if isListMethod(msg.Method) {
		if f.ending(sid) || ss.InitializeParams() == nil {
			// Closed or being closed: the SDK answers (404 once it is
			// gone); not initialized: the SDK refuses.
			return false
		}
		return f.list(w, r, sid, msg)
	}
	if !f.call(w, r, ss, sid, msg, task) {
		return false
	}
	f.forwarded.Add(1)
	return true
}

// call forwards a tools/call, prompts/get, resources/read,
// completion/complete, resources/subscribe or resources/unsubscribe as raw
// JSON: the session's eligibility (aggregate.RawEligible), the request
// read and routed once (aggregate.Route), then sent (aggregate.Send). The call
// lives as long as the HTTP request, and notifications/cancelled for its id
// ends it early, upstream too, and without an answer (cancel.go).
//
// Task requests (a tools/call with "task", and tasks/*) always come here:
// the SDK does not know the task methods and would drop "task" from a
// call's params. They are answered by aggregate.Task.
func (f *fastPath) call(w http.ResponseWriter, r *http.Request, ss *mcp.ServerSession, sid string, msg *rpcMessage, task bool) bool {
	hasStream := f.e.sessions.hasStream(sid)
	streams := canFlush(w)
	var fw aggregate.Forward
	if !task {
		if !f.e.agg.RawEligible(ss, hasStream, streams) {
			return false // the session's calls take the SDK's path: set nothing up for it
		}
		var ok bool
		if fw, ok = f.e.agg.Route(msg.Method, msg.Params, streams); !ok {
			return false // the SDK's to answer (or refuse)
		}
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	if t := f.e.opts.Telemetry; t.Tracing() {
		ctx = t.WithRequest(ctx, string(msg.ID), r.Header.Get("traceparent"), r.Header.Get("tracestate"), "tcp")
	}
	key := fastCallKey{sid, string(msg.ID)}
	f.mu.Lock()
	_, dup := f.calls[key]
	_, ended := f.ended[sid]
	if !dup && !ended {
		f.calls[key] = cancel
	}
	f.mu.Unlock()
	if dup || ended {
		return false // a reused id, or a session being closed: the SDK's business
	}
	defer func() {
		f.mu.Lock()
		delete(f.calls, key)
		f.mu.Unlock()
	}()
	var res json.RawMessage
	var err error
	var stream *eventStream
	switch {
	case task:
		res, err = f.e.agg.Task(ctx, ss, r.Header, msg.Method, msg.Params)
	case streams:
		// Progress and log messages of the call go on this response,
		// which becomes an SSE stream at the first one.
		stream = &eventStream{w: w, needed: f.e.agg.MayStream(ss, &fw, hasStream)}
		res, err = f.e.agg.Send(ctx, ss, &fw, stream.send, f.asker(sid, stream))
	default:
		res, err = f.e.agg.Send(ctx, ss, &fw, nil, nil)
	}
	if stream != nil && stream.close() {
		if n := stream.droppedCount(); n > 0 {
			// Written after the call's span ended: Served gives it the
			// span's ids all the same.
			f.e.log.Warn().Ctx(telemetry.Served(ctx)).Str("session", sid).Int("dropped", n).
				Msg("notifications of a call dropped: its agent was not reading its stream")
		}
		// Started: the response ends the stream (none for a call the
		// agent cancelled).
		switch {
		case errors.Is(context.Cause(ctx), errCancelledByAgent):
		case err != nil:
			b, _ := json.Marshal(callError(ctx, r, err))
			stream.final(msg.ID, "error", b)
		default:
			stream.final(msg.ID, "result", res)
		}
		return true
	}
	if errors.Is(err, aggregate.ErrNeedsSession) {
		return false
	}
	if errors.Is(context.Cause(ctx), errCancelledByAgent) {
		noAnswer(w)
		return true
	}
	if stream != nil && stream.needed {
		// A call that could have streamed keeps its connection off the
		// lane, which cannot stream: the client's next such call would
		// only come back (a round trip through net/http each time).
		w = noTakeover{w}
	}
	if err != nil {
		writeError(w, msg.ID, callError(ctx, r, err))
		return true
	}
	writeResult(w, msg.ID, res)
	return true
}

// callError is the JSON-RPC error of a failed fast-path call.
func callError(ctx context.Context, r *http.Request, err error) *jsonrpc.Error {
	var wire *jsonrpc.Error
	if !errors.As(err, &wire) {
		wire = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	if ctx.Err() != nil && r.Context().Err() == nil {
		wire = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "request cancelled"}
	}
	return wire
}

// cancel ends a fast-path call named by notifications/cancelled and answers
// 202 like the SDK; a cancellation of anything else is the SDK's.
func (f *fastPath) cancel(w http.ResponseWriter, sid string, msg *rpcMessage) bool {
	id := cancelledID(msg)
	if id == nil {
		return false
	}
	f.mu.Lock()
	stop, ok := f.calls[fastCallKey{sid, string(id)}]
	f.mu.Unlock()
	if !ok {
		return false
	}
	stop(errCancelledByAgent)
	w.WriteHeader(http.StatusAccepted)
	return true
}

// taskStatus relays an agent's notifications/tasks/status (about a task it
// runs for a server) and answers 202 like the SDK, which does not know the
// method. What the SDK would refuse (a session it does not hold, a foreign
// Host) is left to it.
func (f *fastPath) taskStatus(w http.ResponseWriter, r *http.Request, sid string, msg *rpcMessage) bool {
	if len(msg.ID) != 0 || foreignHost(r) || f.ending(sid) {
		return false
	}
	ss := f.sessions.lookup(sid)
	if ss == nil {
		return false
	}
	f.e.agg.AgentTaskStatus(ss, msg.Params)
	w.WriteHeader(http.StatusAccepted)
	return true
}

// ending reports whether session id was closed by sessionLimit (DELETE or
// eviction). The session index may still hold it for a moment after the SDK
// dropped it.
func (f *fastPath) ending(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.ended[id]
	return ok
}

// endSession cancels the fast-path calls of a session that was closed, as
// closing a session cancels its calls on the SDK path.
func (f *fastPath) endSession(id string) {
	live := make(map[string]bool)
	for ss := range f.e.agg.Server().Sessions() {
		live[ss.ID()] = true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for sid := range f.ended {
		if !live[sid] {
			delete(f.ended, sid) // closed for good: the SDK answers 404
			f.sessions.drop(sid) // in case its Wait has not returned yet
		}
	}
	f.ended[id] = struct{}{}
	for k, stop := range f.calls {
		if k.session == id {
			stop(nil)
		}
	}
}

// foreignHost reports whether r came in on a loopback address with a Host
// that is not a loopback name: the SDK refuses those (403) against DNS
// rebinding, so the fast path leaves them to it.
func foreignHost(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && local != nil && isLoopback(local.String()) && !isLoopback(r.Host)
}

// isLoopback is the SDK's test (go-sdk internal/util.IsLoopback): a
// host[:port] that is "localhost" or a loopback IP.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// acceptsJSON reports whether the client takes both response forms, as the
// transport requires of every POST (the SDK refuses others with its error).
func acceptsJSON(r *http.Request) bool {
	var json, sse bool
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
			switch strings.TrimSpace(mt) {
			case "application/json":
				json = true
			case "text/event-stream":
				sse = true
			case "*/*":
				json, sse = true, true
			}
		}
	}
	return json && sse
}
