package endpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/auth"
	"github.com/mcp-gateway/mcp-gateway/internal/supervisor"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// Options configure an Endpoint. The zero value works: default limits, the
// default session bound, no log, an empty server list in /health.
type Options struct {
	// Logger receives the endpoint's own events (sessions closed, lane
	// connections). The zero Logger logs nothing.
	Logger zerolog.Logger
	// Limits bound request bodies and connections. Zero fields mean their
	// defaults (see Limits).
	Limits Limits
	// MaxSessions bounds the MCP sessions kept at once: beyond it the least
	// recently used one with no request in flight is closed, or, when all
	// have one, the new session is refused with 503 until one is done (a
	// call is never cancelled to make room). Sessions never expire on idle
	// time.
	// Zero (or less) means DefaultMaxSessions.
	MaxSessions int
	// Servers lists the upstream servers' states for GET /health, in any
	// order. Nil means none.
	Servers func() []supervisor.Status
	// OnRequest, if set, is called for every /mcp request that carries the
	// token, before anything else is done with it. It must be cheap: it runs on the hot
	// path (the gateway counts requests with it to trim memory after a
	// burst).
	OnRequest func()
	// TokenFile is where a client on the machine can read the token; the
	// 401 answer names it. Empty names no file.
	TokenFile string
	// AllowedOrigins are the browser origins (scheme://host[:port]) whose
	// pages may use /mcp, besides the endpoint's own address as the
	// request's Host names it; "*" allows any. A request with any other
	// Origin header gets 403 (a page of another site must not reach the
	// servers through an agent's browser, DNS rebinding included).
	// Requests without Origin (MCP clients outside a browser) are not
	// affected. Nil allows no other origin.
	AllowedOrigins []string
	// Telemetry, if set, gets each fast-path request's id and HTTP trace
	// context, and serves GET /metrics behind the token. Nil: /metrics
	// answers 404.
	Telemetry *telemetry.Telemetry
}

// Endpoint serves one merged MCP server (an aggregate.Gateway) over
// streamable HTTP. Build it with New, mark it ready with SetReady once the
// aggregate is open, serve with Serve and stop with Shutdown. Its methods
// are safe for concurrent use.
type Endpoint struct {
	agg   *aggregate.Gateway
	token string
	opts  Options
	log   zerolog.Logger

	ready    atomic.Bool
	stopping atomic.Bool

	sessions *sessionLimit
	fast     *fastPath
	sdk      *sdkCalls   // the SDK path's calls (cancel.go)
	listens  openListens // the open subscriptions/listen requests (era.go)
	lane     *lane
	mux      *http.ServeMux
	srv      *http.Server
}

// New returns the endpoint for agg behind token (every /mcp request must
// carry "Authorization: Bearer <token>"). Nothing is served until Serve, and
// /mcp answers 503 until SetReady.
func New(agg *aggregate.Gateway, token string, opts Options) *Endpoint {
	e := &Endpoint{agg: agg, token: token, opts: opts, log: opts.Logger}
	// No SessionTimeout: sessions are bounded by count (sessions.go), never
	// closed for idleness, so they survive a paused sandbox.
	e.sessions = newSessionLimit(opts.MaxSessions, agg.Server(), e.log)
	e.sessions.bound(opts.Limits)
	agg.Server().AddReceivingMiddleware(e.sessions.handling)
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return agg.Server() },
		&mcp.StreamableHTTPOptions{MaxRequestBodyBytes: opts.Limits.withDefaults().MaxBodyBytes})
	fast := newFastPath(e)
	sdkCalls := newSDKCalls() // cancel.go
	e.fast, e.sdk = fast, sdkCalls
	e.sessions.closed = fast.endSession
	agg.SetReachable(func(ss *mcp.ServerSession) bool { return e.sessions.hasStream(ss.ID()) })
	e.sessions.initialized = agg.AgentInitialized
	e.sessions.opened = func(id string) {
		if ss := fast.sessions.lookup(id); ss != nil {
			agg.AgentReachable(ss)
		}
	}
	// The chain of /mcp, around core: the token, readiness, then bodies
	// read, bounded and checked as JSON-RPC (protocol.go), then session
	// accounting, for the fast path (fastpath.go) and the SDK alike.
	mcpChain := func(core http.HandlerFunc) http.Handler {
		guarded := rpcGuard{limits: opts.Limits, next: e.sessions.wrap(core)}
		return auth.Bearer(token, opts.TokenFile, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if opts.OnRequest != nil {
				opts.OnRequest()
			}
			if origin, ok := originAllowed(r, opts.AllowedOrigins); !ok {
				writeRPCError(w, http.StatusForbidden, nil, jsonrpc.CodeInvalidRequest,
					fmt.Sprintf("Origin %q is not allowed: only the gateway's own address and --allowed-origins are", origin))
				return
			}
			if !e.ready.Load() || e.stopping.Load() {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"mcp-gateway is starting or stopping; retry shortly"}}` + "\n"))
				return
			}
			guarded.ServeHTTP(w, r)
		}))
	}
	// The lane (lane.go) runs the same chain with the fast path alone: what
	// the fast path declines goes back to net/http, and to the SDK.
	e.lane = newLane(mcpChain(func(w http.ResponseWriter, r *http.Request) { fast.serve(w, r) }), token, opts.Limits, e.log)
	e.mux = http.NewServeMux()
	stateless := newStatelessHandler(agg.Server(), opts.Limits) // era.go
	e.mux.Handle("/mcp", mcpChain(func(w http.ResponseWriter, r *http.Request) {
		r, ok := withToolsView(w, r)
		if !ok {
			return
		}
		if isStateless(r, messageOf(r)) {
			if !fast.serve(w, r) { // a plain tools/call: stateless.go
				if msg := messageOf(r); msg != nil && msg.Method == "subscriptions/listen" {
					defer e.listens.begin()()
				}
				stateless.ServeHTTP(w, withRequestID(opts.Telemetry, withRawParams(r)))
			}
			return
		}
		if !fast.serve(w, r) {
			sdkCalls.serve(sdk, w, withRequestID(opts.Telemetry, withRawParams(r)))
		}
	}))
	e.mux.HandleFunc("GET /health", e.health)
	e.mux.Handle("GET /metrics", auth.Bearer(token, opts.TokenFile, opts.Telemetry.Handler()))
	e.srv = opts.Limits.server(e.mux)
	e.srv.Handler = e.lane.takeover(e.srv.Handler)
	return e
}

// originAllowed reports whether the Origin of r, if any, may use the
// endpoint: absent, the request's own Host (a page served from the
// sandbox's address, in whichever form the proxy in front passes it), or
// one of allowed. It returns the refused origin.
func originAllowed(r *http.Request, allowed []string) (string, bool) {
	for _, origin := range r.Header.Values("Origin") {
		if !oneOriginAllowed(origin, r.Host, allowed) {
			return origin, false
		}
	}
	return "", true
}

func oneOriginAllowed(origin, host string, allowed []string) bool {
	u, err := url.Parse(origin)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.Path == "" && strings.EqualFold(u.Host, host) {
		return true
	}
	for _, a := range allowed {
		if a == "*" || strings.EqualFold(strings.TrimSuffix(a, "/"), origin) {
			return true
		}
	}
	return false
}

// withRequestID passes a single request's JSON-RPC id to the gateway's
// handlers (aggregate.WithRawID) for the SDK path's span: the SDK hands
// its handlers no id, and the HTTP request's context does not reach them
// on a 2025-era session (their context is the session's, made from the
// initialize request's), while the request's header does (RequestExtra).
// r itself when telemetry is off or r is no single request.
func withRequestID(t *telemetry.Telemetry, r *http.Request) *http.Request {
	msg := messageOf(r)
	if !t.Tracing() || msg == nil || msg.Batch > 0 || len(msg.ID) == 0 {
		return r
	}
	return withHeader(r, aggregate.WithRawID(r.Header.Clone(), msg.ID))
}

// withRawParams returns r carrying, for the gateway's handlers, the params
// of a single request that the gateway forwards as the agent sent them
// (aggregate.WithRawParams): the SDK decodes them into its types, which
// drop what they do not know. Other requests are returned as they are.
func withRawParams(r *http.Request) *http.Request {
	msg := messageOf(r)
	keep := msg != nil && msg.Batch == 0 && len(msg.ID) > 0 && len(msg.Params) > 0 && aggregate.KeepsRawParams(msg.Method)
	h := aggregate.WithoutRawParams(r.Header) // only the gateway sets them
	if !keep && len(h) == len(r.Header) {
		return r
	}
	if keep {
		h = aggregate.WithRawID(aggregate.WithRawParams(h, msg.Params), msg.ID)
	}
	return withHeader(r, h)
}

// withToolsView returns r asking the gateway's handlers for the tool view
// its URL names (/mcp?tools=search; aggregate.ToolsView), or r itself when
// it names none. A view it does not know is refused with 400 (ok false):
// an agent configured with a typo should hear of it at its first request,
// not wonder why it sees every tool.
func withToolsView(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	q := r.URL.Query()
	if !q.Has("tools") {
		return r, true
	}
	v, err := aggregate.ParseToolsView(q.Get("tools"))
	if err != nil {
		writeRPCError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, "?tools=: "+err.Error())
		return r, false
	}
	return withHeader(r, aggregate.WithToolsView(r.Header, v)), true
}

// withHeader returns a shallow copy of r with header h.
func withHeader(r *http.Request, h http.Header) *http.Request {
	c := *r
	c.Header = h
	return &c
}

// Handler returns /mcp and /health as a plain http.Handler, with the body
// deadline but without the lane: for mounting the endpoint in a server of
// one's own. Serve uses the lane as well.
func (e *Endpoint) Handler() http.Handler { return e.opts.Limits.bodyDeadline(e.mux) }

// SetReady opens /mcp: until it is called (once every server has started
// and the aggregate is open), /mcp answers 503 with Retry-After and
// /health says "starting".
func (e *Endpoint) SetReady() { e.ready.Store(true) }

// Serve accepts connections on ln and serves them, with the limits and the
// lane, until Shutdown. Like http.Server.Serve it always returns an error;
// after Shutdown that is http.ErrServerClosed. Call it once.
func (e *Endpoint) Serve(ln net.Listener) error {
	return e.srv.Serve(e.lane.listener(ln))
}

// Shutdown stops accepting requests and ends every session, waiting for
// requests in flight until ctx is done; then it closes what is left. From
// its start /mcp answers 503 and /health says "stopping". Open GET streams
// never go idle, so sessions are closed before the server waits.
func (e *Endpoint) Shutdown(ctx context.Context) {
	e.stopping.Store(true)
	done := make(chan struct{})
	go func() {
		var both sync.WaitGroup
		both.Go(func() { _ = e.srv.Shutdown(ctx) })
		both.Go(func() { e.lane.close(ctx) })
		both.Wait()
		close(done)
	}()
	// A 2026-era agent's subscriptions/listen gets its result, the
	// graceful end, while its stream is still there: the sessions are
	// closed once those requests have written it.
	e.agg.EndListens(ctx)
	e.listens.wait(ctx)
	// ServerSession.Close waits for the session's running handlers, and a
	// tool call runs until its server answers, which may be never until
	// the servers are stopped after this: close concurrently, and wait no
	// longer than the grace period.
	var closing sync.WaitGroup
	for ss := range e.agg.Server().Sessions() {
		closing.Go(func() { ss.Close() })
	}
	closed := make(chan struct{})
	go func() {
		closing.Wait()
		close(closed)
	}()
	select {
	case <-closed:
	case <-ctx.Done():
	}
	select {
	case <-done:
	case <-ctx.Done():
		e.srv.Close()
	}
}

// AuditLog returns the aggregate's audit hook (aggregate.Options.Audit)
// writing one line per forwarded call to log: who called what, how long it
// took, how it ended and how many bytes moved; never the values.
func AuditLog(log zerolog.Logger) func(aggregate.CallRecord) {
	audit := log.With().Str("event", "call").Logger()
	return func(r aggregate.CallRecord) {
		ev := audit.Info()
		if r.Outcome == "error" {
			ev = audit.Warn().Str("error", r.Error)
		}
		ev.Str("session", r.Session).Str("server", r.Server).Str("tool", r.Tool).
			Dur("duration", r.Duration).Str("outcome", r.Outcome).
			Int("bytes_in", r.BytesIn).Int("bytes_out", r.BytesOut)
		if r.Interceptors != "" { // which denied, changed or failed the call
			ev = ev.Str("interceptors", r.Interceptors)
		}
		if r.TraceID != "" {
			ev = ev.Str("trace_id", r.TraceID).Str("span_id", r.SpanID)
		}
		ev.Msg("tool call")
	}
}

// health reports the gateway and each server without a token, so it says
// nothing about config values or envs: names, states, counts.
func (e *Endpoint) health(w http.ResponseWriter, r *http.Request) {
	type server struct {
		supervisor.Status
		Tools int `json:"tools"`
	}
	perServer, total := e.agg.ToolCount()
	body := struct {
		Status  string   `json:"status"`
		Servers []server `json:"servers"`
		Tools   int      `json:"tools"`
	}{Tools: total, Servers: []server{}}
	degraded := false
	var statuses []supervisor.Status
	if e.opts.Servers != nil {
		statuses = e.opts.Servers()
	}
	for _, st := range statuses {
		if st.State != supervisor.StateReady {
			degraded = true
		}
		body.Servers = append(body.Servers, server{Status: st, Tools: perServer[st.Name]})
	}
	slices.SortFunc(body.Servers, func(a, b server) int { return strings.Compare(a.Name, b.Name) })
	code := http.StatusOK
	switch {
	case e.stopping.Load():
		body.Status, code = "stopping", http.StatusServiceUnavailable
	case !e.ready.Load():
		body.Status, code = "starting", http.StatusServiceUnavailable
	case degraded:
		body.Status = "degraded"
	default:
		body.Status = "ok"
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(body)
}
