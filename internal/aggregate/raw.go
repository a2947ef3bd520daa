package aggregate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/rawjson"
)

// RawCaller is an Upstream that can also forward a request as raw JSON and
// return the raw result (*supervisor.Server for stdio servers).
type RawCaller interface {
	CallRaw(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// ErrNeedsSession is returned by CallToolRaw for a call it leaves to the
// SDK's session machinery; nothing was sent upstream.
var ErrNeedsSession = errors.New("aggregate: the call needs the session's own stream")

// CallToolRaw forwards a tools/call whose params are raw JSON and returns the
// upstream's result as the bytes it sent: no Go types in between. It is the
// gateway's hot path; the SDK path (callTool) costs several times
// more CPU per call, in decoding and encoding the result on both sides.
//
// The caller answers the agent on the request's own HTTP response, outside
// the SDK, so CallToolRaw takes only calls during which the server cannot
// need that request's stream, and returns ErrNeedsSession otherwise: a call
// with a progress token (a null one is none: the params go on as sent, and
// progress with a null token has nowhere to go, as on the SDK path); a
// session that set a log level (its log messages
// go with the call); a client that offers sampling or elicitation (requests
// that belong to the call); a client that offers roots but has no
// standalone stream open (hasStream), where a roots/list request goes, as
// in the SDK's own JSON-response mode. Unknown tools, arguments that are not
// an object and upstreams without raw support also go to the SDK path,
// which owns their errors.
func (g *Gateway) CallToolRaw(ctx context.Context, ss *mcp.ServerSession, params json.RawMessage, hasStream bool) (json.RawMessage, error) {
	return g.callToolRaw(ctx, ss, params, hasStream, nil, nil, nil)
}

// CallToolStream is CallToolRaw for a caller that can also send the agent
// messages on the request's own response (an SSE stream it starts at the
// first one), as the SDK path would on the call's stream: it takes every
// session's calls, also those with a progress token, of sessions that set a
// log level, and of clients that offer sampling, elicitation or roots. The
// call's progress and log messages go through notify, each before the
// result; the server's requests during the call (sampling, elicitation,
// roots) through ask, whose answer goes back to the server.
//
// needed, if not nil, is set when the call could send the agent anything
// (it has a progress token, the session set a log level, or its client may
// be asked something on the call's stream), whether or not anything came:
// the caller may keep such a client's connection where it can stream.
func (g *Gateway) CallToolStream(ctx context.Context, ss *mcp.ServerSession, params json.RawMessage, hasStream bool, notify Notify, ask Ask, needed *bool) (json.RawMessage, error) {
	return g.callToolRaw(ctx, ss, params, hasStream, notify, ask, needed)
}

// mayStream reports whether a request of session ss with params could send
// the agent anything on its stream (RequestStream's needed; a tools/call
// sets it from its decoded _meta, where a null token is none).
func (g *Gateway) mayStream(ss *mcp.ServerSession, params json.RawMessage, hasStream bool) bool {
	g.mu.RLock()
	_, logs := g.levels[ss]
	g.mu.RUnlock()
	return logs || hasProgressToken(params) || !g.rawEligible(ss, hasStream, false)
}

// hasProgressToken is a quick look for a progress token in params; the
// call itself decodes _meta.
func hasProgressToken(params json.RawMessage) bool {
	return bytes.Contains(params, []byte("progressToken")) || bytes.Contains(params, []byte(`\u`))
}

// callToolRaw is CallToolRaw, and CallToolStream when notify and ask are
// set; needed is CallToolStream's, set once the call's _meta is read (a
// call declined leaves it as it was: the SDK path answers it).
func (g *Gateway) callToolRaw(ctx context.Context, ss *mcp.ServerSession, params json.RawMessage, hasStream bool, notify Notify, ask Ask, needed *bool) (json.RawMessage, error) {
	if !g.rawEligible(ss, hasStream, notify != nil && ask != nil) {
		return nil, ErrNeedsSession
	}
	rr, ok := g.routeRaw("tools/call", params, notify != nil)
	if !ok {
		return nil, ErrNeedsSession
	}
	params = rr.params
	r, up, name, args, token := rr.call.route, rr.call.up, rr.call.name, rr.call.args, rr.call.token
	if r.name != name {
		var err error
		if params, err = rename(params, r.name); err != nil {
			return nil, ErrNeedsSession
		}
	}
	if needed != nil {
		// A log level set, or a client that may be asked something,
		// makes the session's calls ineligible without a stream.
		*needed = token != nil || !g.rawEligible(ss, hasStream, false)
	}
	server := r.up.Name()
	hooked := g.hooked(server, r.name)
	began := time.Now()
	c, done := g.calls.beginNotify(ctx, ss, server, notify, ask)
	var res json.RawMessage
	var err error
	if token != nil {
		// The caller's token goes upstream as one of the gateway's own
		// (two sessions may use the same), and comes back as it was.
		mine := g.progress.forwardRaw(token, c)
		defer func() { settle(err, func() { g.progress.releaseToken(mine) }) }()
		if params, err = withProgressToken(params, rr.call.meta, mine); err != nil {
			done()
			return nil, ErrNeedsSession
		}
	}
	if hooked {
		if bytes.Equal(args, []byte("null")) {
			args = nil
		}
		var trace string
		res, trace, err = g.callToolRawHooked(ctx, ss, up, r, name, args, params)
		done()
		g.auditRaw(ss, server, name, began, len(args), res, err, trace)
		return res, err
	}
	res, err = up.CallRaw(ctx, "tools/call", params)
	done()
	if err == nil && (len(res) == 0 || res[0] != '{') {
		err = fmt.Errorf("tools/call result is not an object: %.40s", res)
		res = nil
	}
	if err != nil {
		// err itself stays as it is, for settle.
		wrapped := serverError(server, err)
		g.auditRaw(ss, server, name, began, len(args), res, wrapped, "")
		return res, wrapped
	}
	g.auditRaw(ss, server, name, began, len(args), res, nil, "")
	return res, nil
}

// auditRaw records a call of the raw path.
func (g *Gateway) auditRaw(ss *mcp.ServerSession, server, tool string, began time.Time, bytesIn int, res json.RawMessage, err error, trace string) {
	if g.audit == nil {
		return
	}
	rec := CallRecord{Session: ss.ID(), Server: server, Tool: tool, Duration: time.Since(began),
		BytesIn: bytesIn, BytesOut: len(res), Outcome: "ok", Interceptors: trace}
	switch {
	case err != nil:
		rec.Outcome, rec.Error = "error", errorCode(err)
	case isErrorResult(res):
		rec.Outcome = "tool_error"
	}
	g.audit(rec)
}

// RawEligible reports whether calls of session ss may be answered outside
// the SDK, as far as the session decides: CallToolRaw (stream false) or
// CallToolStream (stream true) would not decline them for the session's
// sake. A caller checks it before setting anything up for such a call: a
// call it refuses takes the SDK's path. hasStream is as for CallToolRaw.
func (g *Gateway) RawEligible(ss *mcp.ServerSession, hasStream, stream bool) bool {
	return g.rawEligible(ss, hasStream, stream)
}

// rawEligible reports whether nothing the server may send during a call
// needs the call's own stream to reach this session (see CallToolRaw).
//
// With stream set, the caller sends the call's notifications and requests
// on the call's stream itself, so every initialized session's calls are.
func (g *Gateway) rawEligible(ss *mcp.ServerSession, hasStream, stream bool) bool {
	ip := ss.InitializeParams()
	if ip == nil {
		return false
	}
	if stream {
		return true
	}
	if caps := ip.Capabilities; caps != nil {
		if caps.Sampling != nil || caps.Elicitation != nil {
			return false
		}
		if caps.RootsV2 != nil && !hasStream {
			return false
		}
	}
	g.mu.RLock()
	_, logs := g.levels[ss]
	g.mu.RUnlock()
	return !logs
}

// withProgressToken returns params with _meta's progressToken set to mine,
// every other byte as sent.
func withProgressToken(params, meta json.RawMessage, mine string) (json.RawMessage, error) {
	m, err := rawjson.SetString(meta, progressKey, mine)
	if err != nil {
		return nil, err
	}
	return rawjson.SetMember(params, "_meta", m)
}

// isErrorResult reports whether a raw CallToolResult has isError set.
func isErrorResult(res json.RawMessage) bool {
	if !bytes.Contains(res, []byte(`"isError"`)) {
		return false
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(res, &r) == nil && r.IsError
}

// rename returns params with "name" set to name, every other byte as sent.
func rename(params json.RawMessage, name string) (json.RawMessage, error) {
	return rawjson.SetString(params, "name", name)
}

// forward sends a request to up and returns its result: as the bytes the
// server sent when up takes raw requests (RawCaller), so that the agent
// gets them as the server wrote them, else through the SDK client (sdk).
// params are the request's params as the gateway forwards them (routing
// applied).
func forward(ctx context.Context, up Upstream, method string, params any, sdk func(context.Context, *mcp.ClientSession) (mcp.Result, error)) (mcp.Result, error) {
	rc, ok := up.(RawCaller)
	if !ok {
		var res mcp.Result
		err := up.Do(ctx, func(cs *mcp.ClientSession) error {
			var err error
			res, err = sdk(ctx, cs)
			return err
		})
		return res, err
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("%s params: %w", method, err)
	}
	res, err := rc.CallRaw(ctx, method, b)
	if err != nil {
		return nil, err
	}
	if len(res) == 0 || res[0] != '{' {
		return nil, fmt.Errorf("%s result is not an object: %.40s", method, res)
	}
	return &rawResult{raw: res}, nil
}
