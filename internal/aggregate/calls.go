package aggregate

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call is one request forwarded to a server on behalf of an agent session.
// What the server sends while handling it (progress, logs, sampling and
// elicitation requests) goes back to that session, on that request's stream
// (ctx is the downstream handler's context, which the SDK uses to pick it).
type call struct {
	ss *mcp.ServerSession
	// agent, for a call with no session (ss nil) made for a 2026-era
	// agent's request on the raw path (SendStateless), is what the
	// request's _meta declares: what the SDK makes the InitializeParams of
	// the session it would open for the request alone.
	agent  *mcp.InitializeParams
	ctx    context.Context
	server string
	seq    uint64
	// notify, when set, sends the call's progress and log messages on
	// the call's own response, which the endpoint writes (Send with notify);
	// otherwise they go through the SDK session on ctx's stream.
	notify Notify
	// ask, when set, sends the server's requests during the call on the
	// call's own response, and returns the agent's answer; otherwise they
	// go through the SDK session on ctx's stream.
	ask Ask
	// timer ends the call when its server goes quiet (nil: never; see
	// callTimer); ctx is then a context of the call's own.
	timer *callTimer
}

// Notify sends a notification to the agent with raw params.
type Notify = func(method string, params json.RawMessage) error

// Ask sends a request to the agent with raw params and returns its raw
// result; an error answer comes back as a *jsonrpc.Error. It ends when ctx
// does.
type Ask = func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)

// inflight tracks forwarded calls per server.
type inflight struct {
	mu       sync.Mutex
	seq      uint64
	byServer map[string]map[*call]struct{}
	// timeout is how long a call's server may send nothing (callTimer);
	// zero: forever.
	timeout time.Duration
}

func newInflight(timeout time.Duration) *inflight {
	return &inflight{byServer: make(map[string]map[*call]struct{}), timeout: timeout}
}

// begin records a call; done removes it.
func (f *inflight) begin(ctx context.Context, ss *mcp.ServerSession, server string) (*call, func()) {
	return f.beginNotify(ctx, ss, server, nil, nil)
}

// beginNotify is begin for a call whose messages go through notify, and
// requests through ask. The call's request goes upstream with the call's
// ctx, which ends when its server goes quiet for too long (then c.expired
// says so).
func (f *inflight) beginNotify(ctx context.Context, ss *mcp.ServerSession, server string, notify Notify, ask Ask) (*call, func()) {
	if ask == nil {
		ask = pendingAskOf(ctx) // a 2026-era agent's call (pending.go)
	}
	var agent *mcp.InitializeParams
	if ss == nil {
		agent = statelessAgentOf(ctx) // SendStateless's call, or none
	}
	f.mu.Lock()
	f.seq++
	c := &call{ss: ss, agent: agent, ctx: ctx, server: server, seq: f.seq, notify: notify, ask: ask}
	if f.timeout > 0 {
		c.startTimer(f.timeout)
	}
	m := f.byServer[server]
	if m == nil {
		m = make(map[*call]struct{})
		f.byServer[server] = m
	}
	m[c] = struct{}{}
	f.mu.Unlock()
	return c, func() {
		f.mu.Lock()
		delete(f.byServer[server], c)
		f.mu.Unlock()
		c.stop()
	}
}

// latest returns the most recent call in flight to server, and whether the
// routing is exact.
//
// On protocol 2025-11-25 and older, a request or log message a stdio server
// sends carries no reference to the call that caused it. The rule: when every
// call in flight to that server comes from one agent session, that session is
// the caller (exact). When several sessions have calls in flight to it, the
// session whose call started last is chosen (a best guess, logged as such).
// With no call in flight, there is no caller.
func (f *inflight) latest(server string) (c *call, exact bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var sessions int
	seen := make(map[any]bool)
	for k := range f.byServer[server] {
		// A session-less agent's call is an agent of its own, as the
		// session the SDK path opens for its request alone is.
		var who any = k.ss
		if k.ss == nil && k.agent != nil {
			who = k
		}
		if !seen[who] {
			seen[who] = true
			sessions++
		}
		if c == nil || k.seq > c.seq {
			c = k
		}
	}
	return c, sessions == 1
}

// of returns the latest call of session ss to server in flight, or nil.
func (f *inflight) of(server string, ss *mcp.ServerSession) *call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var c *call
	for k := range f.byServer[server] {
		if k.ss == ss && (c == nil || k.seq > c.seq) {
			c = k
		}
	}
	return c
}

// hasAgent reports whether c was made for an agent: a session's, or a
// session-less 2026-era request's.
func (c *call) hasAgent() bool { return c.ss != nil || c.agent != nil }

// initializeParams returns what c's agent declared: its session's
// initialize (or, for a 2026-era request on the SDK path, the _meta the
// SDK made its session of), or a session-less request's _meta; nil for a
// call without an agent.
func (c *call) initializeParams() *mcp.InitializeParams {
	if c.ss != nil {
		return c.ss.InitializeParams()
	}
	return c.agent
}

// sessionID is the id of c's agent session: "" for none, and for a
// session-less 2026-era request, as for the SDK's stateless sessions.
func (c *call) sessionID() string {
	if c.ss == nil {
		return ""
	}
	return c.ss.ID()
}
