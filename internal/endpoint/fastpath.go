package endpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	fastjson "github.com/segmentio/encoding/json"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
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
	// by aggregate.Task), for tests: which path took a request.
	forwarded atomic.Int64
}

type fastCallKey struct{ session, id string }

func newFastPath(e *Endpoint) *fastPath {
	return &fastPath{e: e, sessions: newSessionIndex(e.agg.Server()), calls: make(map[fastCallKey]context.CancelCauseFunc), asks: make(map[fastCallKey]chan agentAnswer), ended: make(map[string]struct{})}
}

// serve answers r and reports true, or reports false having written nothing.
func (f *fastPath) serve(w http.ResponseWriter, r *http.Request) bool {
	msg := messageOf(r)
	sid := r.Header.Get(sessionIDHeader)
	if msg == nil || sid == "" || r.Method != http.MethodPost {
		return false
	}
	if msg.Batch > 0 {
		return f.batch(w, r, sid, msg)
	}
	task := aggregate.IsTaskRequest(msg.Method, msg.Params)
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
		return f.list(w, msg)
	}
	if !f.call(w, r, ss, sid, msg, task) {
		return false
	}
	f.forwarded.Add(1)
	return true
}

// list answers tools/list, prompts/list, resources/list,
// resources/templates/list and ping with listResult's answer.
func (f *fastPath) list(w http.ResponseWriter, msg *rpcMessage) bool {
	res, ok := f.listResult(msg)
	if !ok {
		return false
	}
	writeResult(w, msg.ID, res)
	return true
}

// isListMethod reports whether method is one listResult answers.
func isListMethod(method string) bool {
	switch method {
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list", "ping":
		return true
	}
	return false
}

// listResult is the result of a tools/list, prompts/list, resources/list
// or resources/templates/list request, from the aggregate's encoded pages
// (aggregate.ListPage), or of ping (the SDK's empty result): the bytes the
// SDK path sends. A single request and a batch's element are answered by
// it alike. Through the SDK, a list of 6,400 tools cost ~35 ms of CPU per
// request in reflection and JSON compaction; here it costs a map lookup.
// ok is false when the answer is the SDK's: params it would refuse, and
// those that may name the sessionless protocol (whose rules the SDK
// applies), prompts and resources not named yet (the SDK path waits for
// them), and an invalid cursor (its error).
func (f *fastPath) listResult(msg *rpcMessage) (json.RawMessage, bool) {
	if bytes.Contains(msg.Params, []byte("protocolVersion")) || bytes.Contains(msg.Params, []byte(`\u`)) {
		return nil, false
	}
	var cursor string
	var ok bool
	switch msg.Method {
	case "ping":
		if !sdkDecodes(msg.Params, new(mcp.PingParams)) {
			return nil, false
		}
		return json.RawMessage(`{}`), true
	case "tools/list":
		p := new(mcp.ListToolsParams)
		ok, cursor = sdkDecodes(msg.Params, p), p.Cursor
	case "prompts/list":
		p := new(mcp.ListPromptsParams)
		ok, cursor = sdkDecodes(msg.Params, p), p.Cursor
	case "resources/list":
		p := new(mcp.ListResourcesParams)
		ok, cursor = sdkDecodes(msg.Params, p), p.Cursor
	case "resources/templates/list":
		p := new(mcp.ListResourceTemplatesParams)
		ok, cursor = sdkDecodes(msg.Params, p), p.Cursor
	}
	if !ok {
		return nil, false
	}
	page, ok, err := f.e.agg.ListPage(msg.Method, cursor)
	if !ok || err != nil {
		return nil, false // not named yet, or an invalid cursor: the SDK's wait or error
	}
	return page, true
}

// sdkDecodes reports whether params (absent, null or an object) decode into
// v as the SDK decodes a request's params: case-sensitive member names
// (go-sdk internal/json). The body's depth was bounded by rpcGuard.
func sdkDecodes(params json.RawMessage, v any) bool {
	if len(params) == 0 {
		return true
	}
	dec := fastjson.NewDecoder(bytes.NewReader(params))
	dec.DontMatchCaseInsensitiveStructFields()
	return dec.Decode(v) == nil
}

// call forwards a tools/call, prompts/get, resources/read,
// completion/complete, resources/subscribe or resources/unsubscribe as raw
// JSON (aggregate.RequestRaw). The call
// lives as long as the HTTP request, and notifications/cancelled for its id
// ends it early, upstream too, and without an answer (cancel.go).
//
// Task requests (a tools/call with "task", and tasks/*) always come here:
// the SDK does not know the task methods and would drop "task" from a
// call's params. They are answered by aggregate.Task.
func (f *fastPath) call(w http.ResponseWriter, r *http.Request, ss *mcp.ServerSession, sid string, msg *rpcMessage, task bool) bool {
	hasStream := f.e.sessions.hasStream(sid)
	streams := canFlush(w)
	if !task && !f.e.agg.RawEligible(ss, hasStream, streams) {
		return false // the session's calls take the SDK's path: set nothing up for it
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
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
		res, err = f.e.agg.Task(ctx, ss, msg.Method, msg.Params)
	case streams:
		// Progress and log messages of the call go on this response,
		// which becomes an SSE stream at the first one.
		stream = &eventStream{w: w}
		res, err = f.e.agg.RequestStream(ctx, ss, msg.Method, msg.Params, hasStream, stream.send, f.asker(sid, stream), &stream.needed)
	default:
		res, err = f.e.agg.RequestRaw(ctx, ss, msg.Method, msg.Params, hasStream)
	}
	if stream != nil && stream.close() {
		if n := stream.droppedCount(); n > 0 {
			f.e.log.Warn().Str("session", sid).Int("dropped", n).Msg("notifications of a call dropped: its agent was not reading its stream")
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

// noTakeover hides the lane's takeover from a response (offerResponse).
type noTakeover struct{ http.ResponseWriter }

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

// eventStream turns a fast-path response into an SSE stream at the first
// message of its call for the agent (progress, log messages, a server's
// request), as the SDK path answers such a call; the JSON-RPC response is
// its last event. A call that sends nothing is answered with plain JSON.
//
// Notifications are relayed on the server's reader (aggregate.Intercept),
// which must never wait for an agent: one that stops reading its stream
// would hold every session's calls to that server. So send only queues the
// event, and a goroutine of the stream's own writes it (each write bounded
// by --write-timeout, stallWriter). The queue is bounded: past
// maxStreamBacklog bytes waiting, a notification is dropped (the agent is
// not reading them anyway). close waits for the queue to drain, so every
// event queued goes out before the response.
type eventStream struct {
	w      http.ResponseWriter
	needed bool // the call could send notifications (CallToolStream)

	mu      sync.Mutex
	started bool // the writer runs: the response is an SSE stream
	closed  bool
	failed  bool     // a write failed: the agent is gone
	queue   [][]byte // events not yet written
	queued  int      // their bytes
	dropped int      // notifications dropped for a full queue
	wake    chan struct{}
	done    chan struct{} // closed when the writer returns
}

// maxStreamBacklog bounds the bytes of notifications waiting for one
// agent's stream.
const maxStreamBacklog = 4 << 20

// errStreamBehind is send's error for a notification dropped because the
// agent has not read the ones before it.
var errStreamBehind = errors.New("the agent is not reading its stream: notification dropped")

// send queues one notification as an event, to be written and flushed by
// the stream's writer; it never waits for the agent.
func (s *eventStream) send(method string, params json.RawMessage) error {
	m, _ := json.Marshal(method)
	ev := make([]byte, 0, len(params)+len(m)+64)
	ev = append(ev, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":"...)
	ev = append(ev, m...)
	ev = append(ev, `,"params":`...)
	ev = append(ev, params...)
	ev = append(ev, "}\n\n"...)
	return s.enqueue(ev, true)
}

// request queues a request to the agent as an event (never dropped: the
// server waits for its answer); params absent stay absent.
func (s *eventStream) request(id, method string, params json.RawMessage) error {
	m, _ := json.Marshal(method)
	ev := make([]byte, 0, len(params)+len(m)+len(id)+64)
	ev = append(ev, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"...)
	ev = append(ev, id...)
	ev = append(ev, `,"method":`...)
	ev = append(ev, m...)
	if len(params) > 0 {
		ev = append(ev, `,"params":`...)
		ev = append(ev, params...)
	}
	ev = append(ev, "}\n\n"...)
	return s.enqueue(ev, false)
}

// enqueue queues an event for the writer, which it starts with the first;
// a bounded event is dropped when the backlog is full.
func (s *eventStream) enqueue(ev []byte, bounded bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return errors.New("the call's response is complete")
	case s.failed:
		return errors.New("the call's stream failed")
	case bounded && s.queued > 0 && s.queued+len(ev) > maxStreamBacklog:
		s.dropped++
		return errStreamBehind
	}
	s.queue = append(s.queue, ev)
	s.queued += len(ev)
	if !s.started {
		s.started = true
		s.wake = make(chan struct{}, 1)
		s.done = make(chan struct{})
		go s.write()
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

// write starts the SSE response and writes queued events until the stream
// is closed and drained, or a write fails.
func (s *eventStream) write() {
	defer close(s.done)
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	s.w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(s.w)
	for {
		s.mu.Lock()
		batch, closed := s.queue, s.closed
		s.queue, s.queued = nil, 0
		s.mu.Unlock()
		if len(batch) == 0 {
			if closed {
				return
			}
			<-s.wake
			continue
		}
		var err error
		for _, ev := range batch {
			if _, err = s.w.Write(ev); err != nil {
				break
			}
		}
		if err == nil {
			err = rc.Flush()
		}
		if err != nil {
			s.mu.Lock()
			s.failed, s.queue, s.queued = true, nil, 0
			s.mu.Unlock()
			return
		}
	}
}

// close ends sending, waits until the events queued are written (or the
// stream failed), and reports whether the stream started.
func (s *eventStream) close() bool {
	s.mu.Lock()
	s.closed = true
	started := s.started
	s.mu.Unlock()
	if started {
		select {
		case s.wake <- struct{}{}:
		default:
		}
		<-s.done
	}
	return started
}

// droppedCount is the number of notifications dropped for a full queue.
func (s *eventStream) droppedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// final writes the response to the call as the stream's last event.
func (s *eventStream) final(id json.RawMessage, member string, raw json.RawMessage) {
	b := make([]byte, 0, len(raw)+len(id)+64)
	b = append(b, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"...)
	b = append(b, id...)
	b = append(b, `,"`+member+`":`...)
	b = append(b, raw...)
	b = append(b, "}\n\n"...)
	_, _ = s.w.Write(b)
}

// agentAnswer is an agent's response to a request of the gateway's.
type agentAnswer struct {
	result json.RawMessage
	err    error
}

// asker returns the aggregate.Ask of a fast-path call of session sid: the
// request goes on the call's own stream (as the SDK sends a request made
// during a call on that call's stream), with an id of the gateway's, and
// the agent's answer, a POST of a JSON-RPC response, is caught by answer
// before the SDK would see it. A request the server gives up on (or whose
// call ends) is cancelled at the agent too.
func (f *fastPath) asker(sid string, stream *eventStream) aggregate.Ask {
	return func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		id := `"mcp-gateway-` + strconv.FormatUint(f.askSeq.Add(1), 10) + `"`
		key := fastCallKey{sid, id}
		ch := make(chan agentAnswer, 1)
		f.mu.Lock()
		f.asks[key] = ch
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			delete(f.asks, key)
			f.mu.Unlock()
		}()
		if err := stream.request(id, method, params); err != nil {
			return nil, err
		}
		select {
		case a := <-ch:
			return a.result, a.err
		case <-ctx.Done():
			_ = stream.send("notifications/cancelled", json.RawMessage(`{"requestId":`+id+`}`))
			return nil, ctx.Err()
		}
	}
}

// answer takes an agent's response to a request asker sent, and answers
// the POST 202 as the SDK does; a response to anything else is the SDK's.
func (f *fastPath) answer(w http.ResponseWriter, r *http.Request, sid string, msg *rpcMessage) bool {
	f.mu.Lock()
	_, ok := f.asks[fastCallKey{sid, string(msg.ID)}]
	f.mu.Unlock()
	if !ok {
		return false
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return false
	}
	f.deliver(sid, msg.ID, body)
	w.WriteHeader(http.StatusAccepted)
	return true
}

// deliver gives the agent's response raw, with id, to the asker waiting
// for it, if one still is.
func (f *fastPath) deliver(sid string, id json.RawMessage, raw []byte) {
	f.mu.Lock()
	ch, ok := f.asks[fastCallKey{sid, string(id)}]
	f.mu.Unlock()
	if !ok {
		return
	}
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  *jsonrpc.Error  `json:"error"`
	}
	a := agentAnswer{err: errors.New("the agent's answer is not a JSON-RPC response")}
	if json.Unmarshal(raw, &resp) == nil {
		switch {
		case resp.Error != nil:
			a = agentAnswer{err: resp.Error}
		case len(resp.Result) > 0:
			a = agentAnswer{result: resp.Result}
		}
	}
	select {
	case ch <- a:
	default: // answered twice: the first answer stands
	}
}

// canFlush reports whether the writer under w can flush, as a stream
// needs: the lane records whole responses and cannot (the wrappers above
// it may still have a Flush method).
func canFlush(w http.ResponseWriter) bool {
	for {
		if _, ok := w.(*laneRecorder); ok {
			return false
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			_, ok := w.(http.Flusher) // net/http's own writer
			return ok
		}
		w = u.Unwrap()
	}
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

// writeError writes a JSON-RPC error response, data included, as the SDK
// path would (with status 200: the request itself was fine).
func writeError(w http.ResponseWriter, id json.RawMessage, e *jsonrpc.Error) {
	writeResponse(w, id, "error", aggregate.ErrorJSON(e))
}

// writeResult writes a JSON-RPC response with a raw result.
func writeResult(w http.ResponseWriter, id, result json.RawMessage) {
	writeResponse(w, id, "result", result)
}

// writeResponse writes a JSON-RPC response whose member ("result" or
// "error") holds raw.
func writeResponse(w http.ResponseWriter, id json.RawMessage, member string, raw json.RawMessage) {
	out := make([]byte, 0, len(raw)+len(id)+40)
	out = append(appendMessage(out, id, member, raw), '\n')
	writeWhole(w, out)
}

// appendMessage appends a JSON-RPC response whose member ("result" or
// "error") holds raw.
func appendMessage(b []byte, id json.RawMessage, member string, raw json.RawMessage) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"`...)
	b = append(b, member...)
	b = append(b, `":`...)
	b = append(b, raw...)
	return append(b, '}')
}

// writeWhole writes a complete JSON body (status 200), to the lane's
// writer when there is one (lane.go).
func writeWhole(w http.ResponseWriter, body []byte) {
	if !offerResponse(w, body) {
		writeJSON(w, http.StatusOK, body)
	}
}
