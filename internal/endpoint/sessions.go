package endpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
)

// sessionIDHeader carries the MCP session id on every request after
// initialize (streamable HTTP transport).
const sessionIDHeader = "Mcp-Session-Id"

// DefaultMaxSessions bounds the agent sessions an endpoint keeps when
// Options.MaxSessions is zero.
const DefaultMaxSessions = 1024

// sessionLimit bounds the number of MCP sessions by count, never by idle
// time: a sandbox may be paused for days with its agents' sessions open, and
// an idle timer would tear them down on resume. When a new session
// would exceed the bound, the least recently used one is closed; the SDK's
// handler then answers its id with 404, which tells the client to
// initialize again.
//
// It sits in front of the SDK's StreamableHTTPHandler and learns session ids
// from the traffic: the Mcp-Session-Id response header of an initialize, the
// request header afterwards. Recency is a counter, not a clock, so a pause
// changes nothing. Safe for concurrent use.
type sessionLimit struct {
	max    int
	server *mcp.Server
	log    zerolog.Logger
	// closed, if set, is told of each session closed here (evicted, or
	// ended by the client's DELETE), so that work outside the SDK for it
	// (fast-path calls) ends too.
	closed func(id string)
	// opened, if set, is told when a session's standalone stream is
	// answered (the SDK has it then), where messages that belong to no
	// request reach the client.
	opened func(id string)
	// initialized, if set, is told of each new session with the params of
	// its initialize, before the client has its answer.
	initialized func(id string, params json.RawMessage)

	// Per-session bounds (limits.go): batch size, requests in flight,
	// subscriptions.
	maxBatch, maxRequests, maxSubs int
	// gets keeps GET streams alive and lets a new one replace a stale one.
	gets *getStreams

	mu    sync.Mutex
	clock uint64
	seen  map[string]*sessionUse
	inSDK map[*mcp.ServerSession]int // requests the SDK is handling (see handling)
	// pending counts sessions being initialized that hold room (reserve).
	pending int
	// closing holds the sessions closed for room until their close ends:
	// requests for them are refused meanwhile.
	closing map[string]struct{}
}

// codeServerBusy is the JSON-RPC error code of a new session refused
// because every session has work in flight (implementation-defined server
// error range).
const codeServerBusy = -32000

type sessionUse struct {
	last    uint64 // clock at the latest request start
	active  int    // POSTs being served; GET streams do not count
	streams int    // GET streams being served
	calls   int    // requests in flight (a batch counts each)
	// subs are the URIs the session asked to subscribe to and has not
	// unsubscribed from (a refused subscribe is counted until then too).
	subs map[string]struct{}
}

func newSessionLimit(max int, server *mcp.Server, log zerolog.Logger) *sessionLimit {
	if max <= 0 {
		max = DefaultMaxSessions
	}
	return &sessionLimit{max: max, server: server, log: log, seen: make(map[string]*sessionUse),
		maxBatch: defaultMaxBatch, maxRequests: defaultMaxSessionRequests, maxSubs: defaultMaxSubscriptions,
		gets: newGetStreams(defaultStreamKeepAlive)}
}

// bound sets the per-session bounds of limits.
func (l *sessionLimit) bound(limits Limits) {
	limits = limits.withDefaults()
	l.maxBatch, l.maxRequests, l.maxSubs = limits.MaxBatch, limits.MaxSessionRequests, limits.MaxSubscriptions
	l.gets = newGetStreams(limits.StreamKeepAlive)
}

// wrap returns next with session accounting in front of it.
func (l *sessionLimit) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(sessionIDHeader)
		msg := messageOf(r)
		if isStateless(r, msg) {
			next.ServeHTTP(w, r) // no session to count (era.go)
			return
		}
		if msg != nil && msg.Batch > 0 && !l.batchAllowed(w, id, msg) {
			return
		}
		if id == "" {
			if r.Method != http.MethodPost {
				next.ServeHTTP(w, r)
				return
			}
			// A new session needs room first: an idle session is closed
			// for it, or, when every session has work in flight, it is
			// refused until one is done (closing a busy session would
			// cancel another agent's call).
			var room *reservation
			if msg != nil && msg.Method == "initialize" {
				var refusal string
				if room, refusal = l.reserve(); refusal != "" {
					w.Header().Set("Retry-After", "1")
					writeRPCError(w, http.StatusServiceUnavailable, msg.ID, codeServerBusy, refusal)
					return
				}
				defer room.release()
			}
			// Admit the new session when its id is about to reach the
			// client, not after the response: once the client has the
			// id it may use the other sessions, and that use must not
			// race with picking which one to close.
			admit := func(id string) { l.admit(id, room) }
			if msg != nil && msg.Method == "initialize" && l.initialized != nil {
				admit = func(id string) {
					l.initialized(id, msg.Params)
					l.admit(id, room)
				}
			}
			aw := &admitWriter{ResponseWriter: w, admit: admit}
			next.ServeHTTP(aw, r)
			aw.header()
			return
		}
		if r.Method == http.MethodGet {
			// A GET is the client's standing stream for server messages,
			// opened and reopened by the client library on its own: not a
			// use of the session by the agent.
			l.stream(id, +1)
			defer l.stream(id, -1)
			var end func()
			w, r, end = l.gets.take(id, w, r)
			defer end()
			if l.opened != nil {
				w = &openWriter{ResponseWriter: w, opened: func() { l.opened(id) }}
			}
			next.ServeHTTP(w, r)
			return
		}
		post := r.Method == http.MethodPost
		// Recency counts the agent's requests; a notification such as the
		// client's own notifications/initialized, which a client library
		// may send late, must not make an idle session look recent.
		use := !(post && msg != nil && msg.clientTraffic())
		var calls int
		var subs []subChange
		if post && msg != nil {
			calls, subs = msg.Calls, msg.Subs
		}
		if status, refusal := l.start(id, post, use, calls, subs); refusal != "" {
			var rid json.RawMessage
			if msg != nil {
				rid = msg.ID
			}
			writeRPCError(w, status, rid, jsonrpc.CodeInvalidRequest, refusal)
			return
		}
		defer l.end(id, post, calls)
		if r.Method != http.MethodDelete {
			next.ServeHTTP(w, r)
			return
		}
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		if sw.status/100 == 2 { // the SDK ended the session
			l.forget(id)
			if l.closed != nil {
				l.closed(id)
			}
		}
	})
}

// start marks a known session as used now and counts the request's calls
// in flight and subscriptions, or returns the HTTP status and why it is
// refused: the session is being closed to make room (404, so that the
// client initializes again), too many calls in flight, or subscriptions.
// Unknown ids are ignored: the SDK answers them 404, and remembering them
// would let anyone grow the map.
func (l *sessionLimit) start(id string, post, use bool, calls int, subs []subChange) (int, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	u, ok := l.seen[id]
	if !ok {
		if _, closing := l.closing[id]; closing && post {
			// Picked as idle and being closed: work started now would be
			// cancelled by the close.
			return http.StatusNotFound, "session closed to make room for a new one (--max-sessions); initialize a new session"
		}
		return 0, ""
	}
	if calls > 0 && u.calls+calls > l.maxRequests {
		return http.StatusTooManyRequests, fmt.Sprintf("this session has %d requests in flight; at most %d are served at once (--max-session-requests)", u.calls, l.maxRequests)
	}
	added := 0
	for _, c := range subs {
		if _, ok := u.subs[c.URI]; c.On && !ok {
			added++
		}
	}
	if added > 0 && len(u.subs)+added > l.maxSubs {
		return http.StatusTooManyRequests, fmt.Sprintf("this session holds %d resource subscriptions, the most allowed (--max-subscriptions)", len(u.subs))
	}
	for _, c := range subs {
		switch {
		case c.On && u.subs == nil:
			u.subs = map[string]struct{}{c.URI: {}}
		case c.On:
			u.subs[c.URI] = struct{}{}
		default:
			delete(u.subs, c.URI)
		}
	}
	if len(u.subs) == 0 {
		u.subs = nil // a map that grew keeps its size; start over
	}
	// Recency is when requests start: a response that finishes writing
	// after the client moved on to another session must not make this one
	// look more recent than that one.
	if use {
		l.clock++
		u.last = l.clock
	}
	if post {
		u.active++
		u.calls += calls
	}
	return 0, ""
}

// handling is an SDK receiving middleware that bounds, per session, the
// requests the SDK is handling at once to maxRequests. The count of start
// and end ends with the HTTP request; but a request whose client went
// away runs on in the SDK until its handler returns (a disconnect does not
// cancel it there), and the SDK keeps its bookkeeping meanwhile: counted
// here until then, it cannot be used to pile up requests by hanging up.
func (l *sessionLimit) handling(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, ok := req.GetSession().(*mcp.ServerSession)
		if !ok || strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		l.mu.Lock()
		if n := l.inSDK[ss]; n >= l.maxRequests {
			l.mu.Unlock()
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
				Message: fmt.Sprintf("this session has %d requests being handled; at most %d are served at once (--max-session-requests)", n, l.maxRequests)}
		}
		if l.inSDK == nil {
			l.inSDK = make(map[*mcp.ServerSession]int)
		}
		l.inSDK[ss]++
		l.mu.Unlock()
		defer func() {
			l.mu.Lock()
			if l.inSDK[ss]--; l.inSDK[ss] <= 0 {
				delete(l.inSDK, ss)
			}
			l.mu.Unlock()
		}()
		return next(ctx, method, req)
	}
}

// end undoes start's counts when the request has been answered.
func (l *sessionLimit) end(id string, post bool, calls int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if u, ok := l.seen[id]; ok && post {
		u.active--
		u.calls -= calls
	}
}

// batchAllowed refuses a batch that the session's protocol does not have
// (2025-06-18 dropped batching; the negotiated version decides, not the
// request's Mcp-Protocol-Version, which a client may leave out), one with
// more than maxBatch messages, and one without a session (initialize
// cannot be batched, and everything else needs a session). It writes the
// refusal and reports false.
func (l *sessionLimit) batchAllowed(w http.ResponseWriter, id string, msg *rpcMessage) bool {
	refuse := func(why string) bool {
		writeRPCError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, "invalid request: "+why)
		return false
	}
	if id == "" {
		return refuse("a batch needs a session (initialize cannot be part of one)")
	}
	var ss *mcp.ServerSession
	for s := range l.server.Sessions() { // batches are rare: no index needed
		if s.ID() == id {
			ss = s
			break
		}
	}
	if ss == nil {
		return true // the SDK answers an unknown session
	}
	if v := negotiatedVersion(ss); v >= "2025-06-18" {
		return refuse(fmt.Sprintf("JSON-RPC batches are not part of protocol %s, which this session uses", v))
	}
	if msg.Batch > l.maxBatch {
		return refuse(fmt.Sprintf("a batch of %d messages is more than %d (--max-batch)", msg.Batch, l.maxBatch))
	}
	return true
}

// negotiatedVersion is the protocol version the SDK agreed with the
// session's client: the one the client asked for if the server speaks it,
// else the newest it speaks (go-sdk v1.8.0 negotiatedVersion, which is not
// exported; 2026-07-28 is never negotiated by initialize).
func negotiatedVersion(ss *mcp.ServerSession) string {
	const newest = "2025-11-25"
	ip := ss.InitializeParams()
	if ip == nil {
		return newest
	}
	switch v := ip.ProtocolVersion; v {
	case "2024-11-05", "2025-03-26", "2025-06-18", newest:
		return v
	}
	return newest
}

// stream counts a session's open GET streams.
func (l *sessionLimit) stream(id string, delta int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if u, ok := l.seen[id]; ok {
		u.streams += delta
	}
}

// hasStream reports whether the session's client has a standalone (GET)
// stream open, where the server's messages that belong to no request can
// reach it.
func (l *sessionLimit) hasStream(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	u, ok := l.seen[id]
	return ok && u.streams > 0
}

func (l *sessionLimit) forget(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.seen, id)
}

// admitWriter calls admit with the new session's id just before the
// response headers go out.
type admitWriter struct {
	http.ResponseWriter
	admit func(id string)
	done  bool
}

func (w *admitWriter) header() {
	if w.done {
		return
	}
	w.done = true
	if id := w.Header().Get(sessionIDHeader); id != "" {
		w.admit(id)
	}
}

func (w *admitWriter) WriteHeader(code int) {
	w.header()
	w.ResponseWriter.WriteHeader(code)
}

func (w *admitWriter) Write(p []byte) (int, error) {
	w.header()
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection's Flush.
func (w *admitWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// statusWriter records the status of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// sessionIndex finds the SDK's session of a request by its id. The SDK only
// lists its sessions (a copy of the list per call): a scan per fast-path call
// cost 30 µs and 9.6 KB at 1,024 sessions (BenchmarkSessionLookup). Sessions
// are indexed when first looked up and dropped once they end.
type sessionIndex struct {
	server *mcp.Server

	mu   sync.Mutex
	byID map[string]*mcp.ServerSession
}

func newSessionIndex(server *mcp.Server) *sessionIndex {
	return &sessionIndex{server: server, byID: make(map[string]*mcp.ServerSession)}
}

// lookup returns the live session with this id, or nil.
func (x *sessionIndex) lookup(id string) *mcp.ServerSession {
	x.mu.Lock()
	ss := x.byID[id]
	x.mu.Unlock()
	if ss != nil {
		return ss
	}
	if ss = x.scan(id); ss == nil {
		return ss
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.byID[id]; !ok {
		x.byID[id] = ss
		go x.forgetWhenDone(id, ss)
	}
	return ss
}

// scan finds the session in the SDK's list.
func (x *sessionIndex) scan(id string) *mcp.ServerSession {
	for ss := range x.server.Sessions() {
		if ss.ID() == id {
			return ss
		}
	}
	return nil
}

// forgetWhenDone drops ss from the index once its connection closes,
// however the session ends (DELETE, eviction, shutdown).
func (x *sessionIndex) forgetWhenDone(id string, ss *mcp.ServerSession) {
	_ = ss.Wait()
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.byID[id] == ss {
		delete(x.byID, id)
	}
}

// drop forgets the session with this id.
func (x *sessionIndex) drop(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.byID, id)
}

// len is the number of sessions indexed.
func (x *sessionIndex) len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.byID)
}

// openWriter tells opened once the response of a GET stream starts.
type openWriter struct {
	http.ResponseWriter
	opened func()
	once   sync.Once
}

func (w *openWriter) WriteHeader(code int) {
	w.ResponseWriter.WriteHeader(code)
	if code == http.StatusOK {
		w.once.Do(w.opened)
	}
}

func (w *openWriter) Write(p []byte) (int, error) {
	w.once.Do(w.opened)
	return w.ResponseWriter.Write(p)
}

func (w *openWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *openWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
