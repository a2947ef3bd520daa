package aggregate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	fastjson "github.com/segmentio/encoding/json"

	"github.com/mcp-gateway/mcp-gateway/internal/jsonlimit"
	"github.com/mcp-gateway/mcp-gateway/internal/rawjson"
)

// The raw path forwards a request to one server as the agent's bytes and
// answers with the server's, outside the SDK: the SDK path decodes a
// request into Go types, runs its handlers and encodes the result again,
// several times the CPU per call. A request goes through it in three steps,
// each once:
//
//  1. RawEligible: may the session's calls go outside the SDK at all (a
//     session whose server requests or log messages need the call's own
//     stream, and a caller without one, may not)?
//  2. Route: read the params once (as the SDK would read them), decide
//     where the request goes, and keep what sending it needs (Forward).
//  3. Send: rewrite what routing needs (the routed name or URI, a progress
//     token of the gateway's) member by member, send, and answer with the
//     server's bytes.
//
// What Route declines, and what Send cannot rewrite, goes to the SDK path,
// which owns those errors, having sent nothing (ErrNeedsSession).

// ForwardsRaw reports whether Route takes method: the requests the gateway
// forwards to one server and whose result is that server's, which a caller
// can answer outside the SDK as the bytes the server wrote.
// resources/subscribe and unsubscribe are among them: the gateway, not the
// SDK, keeps which session subscribed to what (changeSubscription).
func ForwardsRaw(method string) bool {
	switch method {
	case "tools/call", "prompts/get", "resources/read", "completion/complete",
		"resources/subscribe", "resources/unsubscribe":
		return true
	}
	return false
}

// Forward is a request of the raw path as Route read and routed it: where
// it goes and what its send needs. The zero value routes nowhere.
type Forward struct {
	method string
	// params are the agent's params (trimmed).
	params json.RawMessage
	// ups are the servers the request goes to, tried in turn (several
	// only for a resources/read of a URI that several servers serve);
	// each takes raw requests. Empty for tools/call: tool.up.
	ups []Upstream
	// set rewrites params for the server (the routed prompt name, the
	// server's URI, completion's ref); nil for tools/call, whose routed
	// name is tool.name, and for subscriptions (changeSubscription).
	set func(json.RawMessage) (json.RawMessage, error)
	// uri and orig: resources/read's and subscriptions' URI as the agent
	// sent it, and as the server knows it.
	uri, orig string
	// meta is _meta as sent and token its progress token (nil: none; a
	// null one is none: the params go on as sent).
	meta, token json.RawMessage

	// tools/call only: the tool's route, its name as the agent called it,
	// and the arguments as sent (trimmed; may be "null").
	tool route
	name string
	args json.RawMessage
}

// Route reads a request of the raw path and decides where it goes, once:
// the sends (Send) and the batch pre-check use its answer, so that they
// cannot disagree. It sends nothing. It declines (ok false) what the SDK
// path owns: a method ForwardsRaw does not take, params nested deeper than
// the SDK reads or that do not read whole as the SDK reads them, a progress
// token when the caller cannot stream (stream false), a name or URI
// nothing routes to, an upstream without raw requests; for all but
// tools/call, also a request before every server's prompts and resources
// are named (the SDK path waits for them). Whether the session's calls may
// go outside the SDK is RawEligible's to say.
func (g *Gateway) Route(method string, params json.RawMessage, stream bool) (f Forward, ok bool) {
	f.method = method
	if !ForwardsRaw(method) || !jsonlimit.DepthWithin(params, jsonlimit.MaxDepth) {
		return f, false
	}
	if method == "tools/call" {
		return f, g.routeCall(&f, params, stream, nil)
	}
	select {
	case <-g.extrasReady:
	default:
		return f, false // not every server's named yet: the SDK path waits
	}
	if params = bytes.TrimSpace(params); len(params) == 0 || params[0] != '{' {
		return f, false
	}
	f.params = params
	var meta mcp.Meta
	switch method {
	case "prompts/get":
		var p mcp.GetPromptParams
		if !g.decode(params, &p) {
			return f, false
		}
		meta = p.Meta
		g.mu.RLock()
		pr, found := g.prompts.routes[p.Name]
		g.mu.RUnlock()
		if !found {
			return f, false
		}
		f.ups = []Upstream{pr.up}
		// Set even when unchanged: see callToolAgentParams.
		f.set = func(b json.RawMessage) (json.RawMessage, error) { return rawjson.SetString(b, "name", pr.name) }
	case "resources/read":
		var p mcp.ReadResourceParams
		if !g.decode(params, &p) || p.URI == "" {
			return f, false
		}
		meta, f.uri = p.Meta, p.URI
		g.mu.RLock()
		f.ups, f.orig = g.res.lookup(f.uri)
		g.mu.RUnlock()
		orig := f.orig
		f.set = func(b json.RawMessage) (json.RawMessage, error) { return rawjson.SetString(b, "uri", orig) }
	case "resources/subscribe", "resources/unsubscribe":
		var p mcp.SubscribeParams
		if !g.decode(params, &p) || p.URI == "" {
			return f, false
		}
		meta, f.uri = p.Meta, p.URI
		g.mu.RLock()
		f.ups, f.orig = g.res.lookup(f.uri)
		g.mu.RUnlock()
		if len(f.ups) > 1 {
			f.ups = f.ups[:1] // the first owns it (changeSubscription)
		}
	case "completion/complete":
		var p mcp.CompleteParams
		if !g.decode(params, &p) || p.Ref == nil {
			return f, false
		}
		meta = p.Meta
		if up, _, set := g.completionRoute(*p.Ref); up != nil {
			f.ups, f.set = []Upstream{up}, set
		}
	}
	// The progress token as decoded (a key may be written with escapes,
	// and the server would read it as the token the gateway must
	// replace); a null one is none.
	if tok, has := meta[progressKey]; has && tok != nil {
		if !stream {
			return f, false // its progress needs the call's stream
		}
		if !f.tokenOf(params) {
			return f, false
		}
	}
	if len(f.ups) == 0 {
		return f, false
	}
	for _, up := range f.ups {
		if _, ok := up.(RawCaller); !ok {
			return f, false
		}
	}
	return f, true
}

// tokenOf keeps params' _meta and its progress token as the agent wrote
// them (the server gets one of the gateway's instead, and the agent its own
// back); params were decoded already, so this only finds their bytes.
func (f *Forward) tokenOf(params json.RawMessage) bool {
	meta, _, err := rawjson.MemberValue(params, "_meta")
	if err != nil {
		return false
	}
	tok, ok, err := rawjson.MemberValue(meta, progressKey)
	if err != nil || !ok || !json.Valid(tok) {
		return false
	}
	f.meta, f.token = meta, tok
	return true
}

// routeCall is Route for a tools/call: the params read whole, _meta's
// progress token (a null one is none; any other needs the call's stream,
// and must be valid JSON to be mapped), arguments an object or null, and a
// route to a server that takes raw requests. meta, if not nil, is set to
// _meta as sent (nil when absent).
func (g *Gateway) routeCall(f *Forward, params json.RawMessage, stream bool, meta *json.RawMessage) bool {
	var p callParams
	if !g.decode(params, &p) {
		return false
	}
	if meta != nil {
		*meta = p.Meta
	}
	return g.routeDecoded(f, params, &p, stream)
}

// callParams is what routeCall reads of a tools/call's params.
type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      json.RawMessage `json:"_meta"`
}

// routeDecoded is routeCall for params already decoded into p.
func (g *Gateway) routeDecoded(f *Forward, params json.RawMessage, p *callParams, stream bool) bool {
	if len(p.Meta) > 0 && !bytes.Equal(p.Meta, []byte("null")) {
		// Read as decoded, not searched: a key may be written with
		// escapes ("progress\u0054oken"), and the upstream would read it
		// as the token the gateway must replace with one of its own.
		t, ok, err := rawjson.MemberValue(p.Meta, progressKey)
		if err != nil {
			return false
		}
		// A null token is none (as agentParams reads it on the SDK path):
		// the params go on as sent, and the server has no token to send
		// progress with that the gateway could route.
		if ok && !bytes.Equal(bytes.TrimSpace(t), []byte("null")) {
			if !stream || !json.Valid(t) {
				return false
			}
			f.meta, f.token = p.Meta, t
		}
	}
	f.args = bytes.TrimSpace(p.Arguments)
	if len(f.args) > 0 && f.args[0] != '{' && !bytes.Equal(f.args, []byte("null")) {
		return false
	}
	g.mu.RLock()
	r, ok := g.tools.routes[p.Name]
	g.mu.RUnlock()
	if !ok {
		return false
	}
	if _, ok := r.up.(RawCaller); !ok {
		return false
	}
	f.params, f.tool, f.name = params, r, p.Name
	return true
}

// decode reads params into v as the SDK does (member names matched
// exactly), reporting whether they read whole. It is the one place a
// request's params are decoded on the raw path.
func (g *Gateway) decode(params json.RawMessage, v any) bool {
	if g.decoded != nil {
		g.decoded()
	}
	rest, err := fastjson.Parse(params, v, fastjson.DontMatchCaseInsensitiveStructFields)
	return err == nil && len(rest) == 0
}

// MayStream reports whether request f of session ss could send the agent
// anything on the request's own stream: it has a progress token, the
// session set a log level, or its client may be asked something during the
// request. The caller may keep such a client's connection where it can
// stream. hasStream is as for RawEligible.
func (g *Gateway) MayStream(ss *mcp.ServerSession, f *Forward, hasStream bool) bool {
	return f.token != nil || !g.rawEligible(ss, hasStream, false)
}

// Send forwards request f, as Route routed it, for session ss, and returns
// the server's result as the bytes it sent. The caller has checked
// RawEligible for the session: with notify and ask set (the caller can
// stream), the request's progress and log messages go through notify, each
// before the result, and the server's requests during it (sampling,
// elicitation, roots) through ask, whose answer goes back to the server.
//
// It returns ErrNeedsSession, having sent nothing, when the params cannot
// be rewritten for the server (or, for a subscription, the server no longer
// owns the URI): the SDK path answers such a request.
func (g *Gateway) Send(ctx context.Context, ss *mcp.ServerSession, f *Forward, notify Notify, ask Ask) (json.RawMessage, error) {
	if g.tel != nil {
		return g.sendTraced(ctx, ss, f, notify, ask)
	}
	return g.send(ctx, ss, f, notify, ask)
}

// send is Send without telemetry (sendTraced wraps it).
func (g *Gateway) send(ctx context.Context, ss *mcp.ServerSession, f *Forward, notify Notify, ask Ask) (json.RawMessage, error) {
	switch f.method {
	case "tools/call":
		return g.sendCall(ctx, ss, f, notify, ask)
	case "resources/subscribe", "resources/unsubscribe":
		up := f.ups[0]
		return g.changeSubscription(ctx, ss, ss, f.uri, up, f.orig, f.method == "resources/subscribe", notify, ask,
			func(c *call, method string) (json.RawMessage, bool, error) {
				set := func(b json.RawMessage) (json.RawMessage, error) { return rawjson.SetString(b, "uri", f.orig) }
				return g.sendParams(c.ctx, up, c, f, set)
			})
	}
	var firstErr error
	for i, up := range f.ups {
		c, done := g.calls.beginNotify(ctx, ss, up.Name(), notify, ask)
		res, sent, err := g.sendParams(c.ctx, up, c, f, f.set)
		err = c.expired(err)
		done()
		if !sent {
			if i == 0 {
				return nil, ErrNeedsSession // params it cannot rewrite
			}
			break
		}
		if err == nil {
			if f.orig != f.uri {
				res = contentsAs(&rawResult{raw: res}, f.orig, f.uri).(*rawResult).raw
			}
			return res, nil
		}
		if firstErr == nil {
			// As readResource: the only server answers as it would
			// directly; of several tried in turn, the error says whose.
			if len(f.ups) == 1 {
				firstErr = serverError(up.Name(), err)
			} else {
				firstErr = upstreamError(up.Name(), err)
			}
		}
	}
	return nil, firstErr
}

// sendParams sends f's params to up with set applied and the agent's
// progress token (if any) replaced by one of the gateway's for call c,
// and returns the server's result. sent is false, having sent nothing,
// when the params cannot be rewritten.
func (g *Gateway) sendParams(ctx context.Context, up Upstream, c *call, f *Forward,
	set func(json.RawMessage) (json.RawMessage, error)) (res json.RawMessage, sent bool, err error) {
	params := f.params
	if set != nil {
		if params, err = set(params); err != nil {
			return nil, false, nil
		}
	}
	release := func() {}
	if f.token != nil {
		mine := g.progress.forwardRaw(f.token, c)
		if params, err = withProgressToken(params, f.meta, mine); err != nil {
			g.progress.releaseToken(mine)
			return nil, false, nil
		}
		release = func() { g.progress.releaseToken(mine) }
	}
	res, err = g.callRaw(ctx, c, up.(RawCaller), f.method, params)
	// A request the agent cancelled may still have progress coming.
	settle(err, release)
	if err != nil {
		return nil, true, err
	}
	if len(res) == 0 || res[0] != '{' {
		return nil, true, fmt.Errorf("%s result is not an object: %.40s", f.method, res)
	}
	return res, true, nil
}

// sendCall is Send for a tools/call: the routed name set, the progress
// token mapped, through the interceptors when one applies, and audited.
func (g *Gateway) sendCall(ctx context.Context, ss *mcp.ServerSession, f *Forward, notify Notify, ask Ask) (json.RawMessage, error) {
	r, params := f.tool, f.params
	if r.name != f.name {
		var err error
		if params, err = rename(params, r.name); err != nil {
			return nil, ErrNeedsSession
		}
	}
	up := r.up.(RawCaller)
	server := r.up.Name()
	began := time.Now()
	c, done := g.calls.beginNotify(ctx, ss, server, notify, ask)
	var res json.RawMessage
	var err error
	if f.token != nil {
		// The caller's token goes upstream as one of the gateway's own
		// (two sessions may use the same), and comes back as it was.
		mine := g.progress.forwardRaw(f.token, c)
		defer func() { settle(err, func() { g.progress.releaseToken(mine) }) }()
		if params, err = withProgressToken(params, f.meta, mine); err != nil {
			done()
			return nil, ErrNeedsSession
		}
	}
	if g.hooked(server, r.name) {
		args := f.args
		if bytes.Equal(args, []byte("null")) {
			args = nil
		}
		var trace string
		res, trace, err = g.callToolRawHooked(c.ctx, c, up, r, f.name, args, params)
		err = c.expired(err)
		done()
		g.auditRaw(ctx, ss, server, f.name, began, len(args), res, err, trace)
		return res, err
	}
	res, err = g.callRaw(c.ctx, c, up, "tools/call", params)
	done()
	if err == nil && (len(res) == 0 || res[0] != '{') {
		err = fmt.Errorf("tools/call result is not an object: %.40s", res)
		res = nil
	}
	if err != nil {
		// err itself stays as it is, for settle.
		wrapped := serverError(server, c.expired(err))
		g.auditRaw(ctx, ss, server, f.name, began, len(f.args), res, wrapped, "")
		return res, wrapped
	}
	g.auditRaw(ctx, ss, server, f.name, began, len(f.args), res, nil, "")
	return res, nil
}

// RequestStream is the raw path in one call (RawEligible, Route, Send) for
// a caller that can send the agent messages on the request's own response
// (see Send); it returns ErrNeedsSession, having sent nothing, for what it
// leaves to the SDK path. needed, if not nil,
// is set as MayStream says, once the request is routed (a request declined
// leaves it as it was: the SDK path answers it).
func (g *Gateway) RequestStream(ctx context.Context, ss *mcp.ServerSession, method string, params json.RawMessage, hasStream bool, notify Notify, ask Ask, needed *bool) (json.RawMessage, error) {
	if !g.rawEligible(ss, hasStream, notify != nil && ask != nil) || g.ViewOwns(nil, method, params) {
		return nil, ErrNeedsSession
	}
	f, ok := g.Route(method, params, notify != nil)
	if !ok {
		return nil, ErrNeedsSession
	}
	if needed != nil {
		*needed = g.MayStream(ss, &f, hasStream)
	}
	return g.Send(ctx, ss, &f, notify, ask)
}
