package aggregate

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/rawjson"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// The gateway's traces and metrics (internal/telemetry) hook in at these
// places, each a nil check when telemetry is off:
//
//   - tracedMiddleware: a server span around every request the SDK path
//     serves;
//   - sendTraced: the same around Send, the raw path;
//   - syncTraced: a span per start and restart of a server;
//   - runHooks: interceptors' decisions that changed a call as events of
//     the served span and a count (telemetry.Decisions), and those that
//     let it through unchanged as a count alone (telemetry.Passes);
//   - tracedCallRaw: a client span around every request forwarded to a server,
//     whose _meta then carries the span as traceparent, so that a server
//     that reads it continues the trace.

// tracedMiddleware is the SDK path's server span.
func (g *Gateway) tracedMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	if g.tel == nil {
		return next
	}
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		r := telemetry.Request{Method: method}
		if s := req.GetSession(); s != nil {
			r.Session = s.ID()
		}
		// A notification without params (notifications/initialized from
		// the TS SDK) has a typed nil: GetMeta would dereference it.
		if p := req.GetParams(); p != nil && !reflect.ValueOf(p).IsNil() {
			if m := p.GetMeta(); m != nil {
				r.Traceparent, _ = m["traceparent"].(string)
				r.Tracestate, _ = m["tracestate"].(string)
			}
		}
		switch p := req.GetParams().(type) {
		case *mcp.CallToolParamsRaw:
			if p != nil {
				r.Tool = p.Name
			}
		case *mcp.GetPromptParams:
			if p != nil {
				r.Prompt = p.Name
			}
		}
		if ex := req.GetExtra(); ex != nil && ex.Header != nil {
			r.Transport = "tcp"
			if id, ok := pipeID(ex.Header); ok { // stdio mode's raw params header
				r.Transport, r.ID = "pipe", id
			} else if id := rawID(req); id != nil { // the HTTP endpoint's
				r.ID = spanRequestID(id)
			}
			if r.Traceparent == "" {
				r.Traceparent, r.Tracestate = ex.Header.Get("traceparent"), ex.Header.Get("tracestate")
			}
		}
		ctx, op := g.tel.Serve(ctx, r)
		res, err := next(ctx, method, req)
		if n := listSize(method, res); n >= 0 {
			op.Items(n)
		}
		if in, out := sizes(req, res); in >= 0 || out >= 0 {
			op.Bytes(in, out)
		}
		op.End(resultErrorType(res, err))
		return res, err
	}
}

// spanRequestID is a JSON-RPC id as a span names it: a string id without
// its quotes, as telemetry.WithRequest gives the raw path's.
func spanRequestID(id json.RawMessage) string {
	var s string
	if len(id) > 0 && id[0] == '"' && json.Unmarshal(id, &s) == nil {
		return s
	}
	return string(id)
}

// Sync lists everything server offers over cs (all pages) and updates the
// merged view, after every start of the server (see sync); raw, when not
// nil, sends requests on cs's connection past the SDK.
func (g *Gateway) Sync(ctx context.Context, server string, cs *mcp.ClientSession, raw RoundTrip) error {
	if g.tel != nil {
		return g.syncTraced(ctx, server, cs, raw)
	}
	return g.sync(ctx, server, cs, raw)
}

// syncTraced is Sync in a span of the server's (re)start.
func (g *Gateway) syncTraced(ctx context.Context, server string, cs *mcp.ClientSession, raw RoundTrip) error {
	g.mu.RLock()
	_, restart := g.raws[server] // set by every Sync
	g.mu.RUnlock()
	ctx, op := g.tel.ServerStart(ctx, server, restart)
	err := g.sync(ctx, server, cs, raw)
	op.End(telemetry.ErrorType(err))
	return err
}

// resultErrorType is the error.type of a served request's outcome.
func resultErrorType(res mcp.Result, err error) string {
	if err != nil {
		return telemetry.ErrorType(err)
	}
	switch r := res.(type) {
	case *mcp.CallToolResult:
		if r.IsError {
			return telemetry.ToolError
		}
	case *rawResult:
		if isErrorResult(r.raw) {
			return telemetry.ToolError
		}
	}
	return ""
}

// sendTraced is Send with the raw path's server span.
func (g *Gateway) sendTraced(ctx context.Context, ss *mcp.ServerSession, f *Forward, notify Notify, ask Ask) (json.RawMessage, error) {
	r := telemetry.Request{Method: f.method}
	if ss != nil {
		r.Session = ss.ID()
	}
	if f.method == "tools/call" {
		r.Tool = f.name
	}
	if g.tel.Tracing() { // metrics alone need no parent
		r.Traceparent, r.Tracestate = TraceMeta(f.params)
	}
	ctx, op := g.tel.Serve(ctx, r)
	res, err := g.send(ctx, ss, f, notify, ask)
	errType := telemetry.ErrorType(err)
	if err == nil && f.method == "tools/call" && isErrorResult(res) {
		errType = telemetry.ToolError
	}
	out := len(res)
	if err != nil {
		out = -1
	}
	op.Bytes(len(f.params), out)
	op.End(errType)
	return res, err
}

// sizes are the bytes of req's params and of res as the agent sent and
// gets them, where the SDK path holds them as bytes (params it forwards as
// sent, results it answers with the server's or a cached page's bytes);
// -1 for a size it would have to encode to know.
func sizes(req mcp.Request, res mcp.Result) (in, out int) {
	in, out = -1, -1
	if p := rawParams(req); p != nil {
		in = len(p)
	}
	if r, ok := res.(*rawResult); ok && r != nil {
		out = len(r.raw)
	}
	return in, out
}

// listMember names the array of a list method's result ("" for another
// method).
func listMember(method string) string {
	switch method {
	case "tools/list":
		return "tools"
	case "prompts/list":
		return "prompts"
	case "resources/list":
		return "resources"
	case "resources/templates/list":
		return "resourceTemplates"
	}
	return ""
}

// listSize is the number of items in a list result, -1 for another result.
func listSize(method string, res mcp.Result) int {
	switch r := res.(type) {
	case *rawResult: // a merged page, encoded once
		key := listMember(method)
		if key == "" || r == nil {
			return -1
		}
		v, ok, err := rawjson.MemberValue(r.raw, key)
		var items []json.RawMessage
		if err != nil || !ok || json.Unmarshal(v, &items) != nil {
			return -1
		}
		return len(items)
	case *mcp.ListToolsResult:
		return len(r.Tools)
	case *mcp.ListPromptsResult:
		return len(r.Prompts)
	case *mcp.ListResourcesResult:
		return len(r.Resources)
	case *mcp.ListResourceTemplatesResult:
		return len(r.ResourceTemplates)
	}
	return -1
}

// TraceMeta reads the W3C trace context in params' _meta, if any: the
// agent's span, the parent of the request's.
func TraceMeta(params json.RawMessage) (traceparent, tracestate string) {
	meta, ok, err := rawjson.MemberValue(params, "_meta")
	if err != nil || !ok {
		return "", ""
	}
	str := func(key string) string {
		v, ok, err := rawjson.MemberValue(meta, key)
		if err != nil || !ok {
			return ""
		}
		var s string
		if json.Unmarshal(v, &s) != nil {
			return ""
		}
		return s
	}
	return str("traceparent"), str("tracestate")
}

// tracedCallRaw forwards a raw request to its server, in a client span when the
// served request has one: the span's trace context goes in the forwarded
// _meta (replacing the agent's: the server's parent is the gateway's span).
func tracedCallRaw(ctx context.Context, rc RawCaller, method string, params json.RawMessage) (json.RawMessage, error) {
	if !telemetry.Serving(ctx) {
		return rc.CallRaw(ctx, method, params)
	}
	server := ""
	if up, ok := rc.(Upstream); ok {
		server = up.Name()
	}
	// The name after routing: the server's own name for the tool.
	r := telemetry.Request{Method: method}
	switch method {
	case "tools/call":
		r.Tool = nameOf(params)
	case "prompts/get":
		r.Prompt = nameOf(params)
	}
	ctx, op := telemetry.Forward(ctx, server, r)
	if tp, ts := op.Traceparent(); tp != "" {
		if p, err := withTraceMeta(params, tp, ts); err == nil {
			params = p
		}
	}
	res, err := rc.CallRaw(ctx, method, params)
	errType := telemetry.ErrorType(err)
	if err == nil && method == "tools/call" && isErrorResult(res) {
		errType = telemetry.ToolError
	}
	op.End(errType)
	return res, err
}

// nameOf is params' "name" member, "" if none.
func nameOf(params json.RawMessage) string {
	v, ok, err := rawjson.MemberValue(params, "name")
	if err != nil || !ok {
		return ""
	}
	if s, ok := plainString(v); ok {
		return s
	}
	var s string
	_ = json.Unmarshal(v, &s)
	return s
}

// plainString is the JSON string v without decoding it, when it needs
// none: quoted printable ASCII without escapes, as tool names are. A
// forwarded call's span reads its name on every call, and json.Unmarshal
// costs more than the rest of the reading.
func plainString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	for _, c := range v[1 : len(v)-1] {
		if c < 0x20 || c >= 0x7f || c == '\\' || c == '"' {
			return "", false
		}
	}
	return string(v[1 : len(v)-1]), true
}

// withTraceMeta sets traceparent (and tracestate, when set) in params'
// _meta, keeping every other member as sent.
func withTraceMeta(params json.RawMessage, traceparent, tracestate string) (json.RawMessage, error) {
	if tracestate == "" {
		// Most requests carry no _meta: one scan and one copy add it. The
		// value is built on the stack (a traceparent is hex and dashes,
		// nothing to escape).
		var buf [96]byte
		v := append(append(append(buf[:0], `{"traceparent":"`...), traceparent...), `"}`...)
		out, had, err := rawjson.AppendAbsent(params, rawjson.Member{Key: "_meta", Value: v})
		if err != nil || had == 0 {
			return out, err
		}
	}
	meta, ok, err := rawjson.MemberValue(params, "_meta")
	if err != nil {
		return nil, err
	}
	if !ok || bytes.Equal(bytes.TrimSpace(meta), []byte("null")) {
		meta = json.RawMessage(`{}`)
	}
	if meta, err = rawjson.SetString(meta, "traceparent", traceparent); err != nil {
		return nil, err
	}
	if tracestate != "" {
		if meta, err = rawjson.SetString(meta, "tracestate", tracestate); err != nil {
			return nil, err
		}
	}
	return rawjson.SetMember(params, "_meta", meta)
}
