package endpoint

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	fastjson "github.com/segmentio/encoding/json"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// list answers tools/list, prompts/list, resources/list,
// resources/templates/list and ping with listResult's answer, in a served
// span when telemetry is on (the page is at hand: the span is the answer's
// writing, and its duration counts it).
func (f *fastPath) list(w http.ResponseWriter, r *http.Request, sid string, msg *rpcMessage) bool {
	res, items, ok := f.listResult(msg)
	if !ok {
		return false
	}
	op := f.serveList(r, sid, msg)
	writeResult(w, msg.ID, res)
	f.endList(op, msg.Method, items)
	return true
}

// serveList starts the served span and duration of a list or ping the
// fast path answers, alone or in a batch; nil when telemetry is off.
func (f *fastPath) serveList(r *http.Request, sid string, msg *rpcMessage) *telemetry.Op {
	t := f.e.opts.Telemetry
	if t == nil {
		return nil
	}
	ctx := t.WithRequest(r.Context(), string(msg.ID), r.Header.Get("traceparent"), r.Header.Get("tracestate"), "tcp")
	req := telemetry.Request{Method: msg.Method, Session: sid}
	if t.Tracing() {
		req.Traceparent, req.Tracestate = aggregate.TraceMeta(msg.Params)
	}
	_, op := t.Serve(ctx, req)
	return op
}

// endList ends a list's or ping's op once answered, recording the number
// of items of a list's page.
func (f *fastPath) endList(op *telemetry.Op, method string, items int) {
	f.lists.Add(1)
	if method != "ping" {
		op.Items(items)
	}
	op.End("")
}

// isListMethod reports whether method is one listResult answers.
func isListMethod(method string) bool {
	switch method {
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list", "ping":
		return true
	}
	return false
}

// listResult is the result, and its number of items, of a tools/list,
// prompts/list, resources/list or resources/templates/list request, from
// the aggregate's encoded pages
// (aggregate.ListPage), or of ping (the SDK's empty result): the bytes the
// SDK path sends. A single request and a batch's element are answered by
// it alike. Through the SDK, a list of 6,400 tools cost ~35 ms of CPU per
// request in reflection and JSON compaction; here it costs a map lookup.
// ok is false when the answer is the SDK's: params it would refuse, and
// those that may name the sessionless protocol (whose rules the SDK
// applies), prompts and resources not named yet (the SDK path waits for
// them), and an invalid cursor (its error).
func (f *fastPath) listResult(msg *rpcMessage) (res json.RawMessage, items int, ok bool) {
	if bytes.Contains(msg.Params, []byte("protocolVersion")) || bytes.Contains(msg.Params, []byte(`\u`)) {
		return nil, 0, false
	}
	var cursor string
	switch msg.Method {
	case "ping":
		if !sdkDecodes(msg.Params, new(mcp.PingParams)) {
			return nil, 0, false
		}
		return json.RawMessage(`{}`), 0, true
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
		return nil, 0, false
	}
	page, items, ok, err := f.e.agg.ListPage(msg.Method, cursor)
	if !ok || err != nil {
		return nil, 0, false // not named yet, or an invalid cursor: the SDK's wait or error
	}
	return page, items, true
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
