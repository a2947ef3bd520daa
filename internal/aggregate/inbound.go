package aggregate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/rawjson"
)

// Requests the SDK server handles (prompts/get, resources/read,
// completion/complete, resources/subscribe and unsubscribe, tools/call off
// the fast path) reach the gateway's handlers decoded into the SDK's types,
// and encoding those again dropped members the types do not know and put
// the rest in the types' order. The transport in front of the SDK (the
// HTTP endpoint, stdio mode) hands the handlers the params as the agent
// sent them too, in the request's RequestExtra: the SDK gives a handler no
// other way to see a request's bytes. The handlers forward those bytes,
// rewriting only what routing needs (a renamed name, a rewritten URI, the
// progress token); without them (a batch, an upstream that takes no raw
// requests) they forward the typed params as before.

// rawParamsKey is the RequestExtra.Header key that carries the params. The
// spaces make it an invalid HTTP field name: net/http refuses a request
// that has it, so only the gateway itself sets it.
const rawParamsKey = "Mcp-Gateway raw params"

// KeepsRawParams reports whether the gateway forwards method's params as
// the agent sent them when the transport passes them on (WithRawParams),
// or needs the request's JSON-RPC id (WithRawID): subscriptions/listen,
// whose id is the subscriptionId of everything sent on its stream.
func KeepsRawParams(method string) bool {
	switch method {
	case "tools/call", "prompts/get", "resources/read", "completion/complete",
		"resources/subscribe", "resources/unsubscribe", "subscriptions/listen":
		return true
	}
	return false
}

// rawIDKey is the RequestExtra.Header key that carries a request's
// JSON-RPC id as the agent wrote it (an invalid HTTP field name, like
// rawParamsKey). The SDK keeps the id it hands its own handlers in an
// unexported context key.
const rawIDKey = "Mcp-Gateway raw request id"

// WithRawID returns h (a header the caller owns, which it changes: one
// WithRawParams made, or a clone; nil: a new one) with the JSON-RPC id of
// the request as the agent wrote it (a JSON string or number), for the
// handlers that need it (listen) and the request's span.
func WithRawID(h http.Header, id json.RawMessage) http.Header {
	if h == nil {
		h = make(http.Header, 1)
	}
	if len(id) > 0 {
		h[rawIDKey] = []string{string(id)}
	}
	return h
}

// rawID returns the JSON-RPC id WithRawID set on req, or nil.
func rawID(req mcp.Request) json.RawMessage {
	ex := req.GetExtra()
	if ex == nil || ex.Header == nil {
		return nil
	}
	v := ex.Header[rawIDKey]
	if len(v) != 1 || !json.Valid([]byte(v[0])) {
		return nil
	}
	return json.RawMessage(v[0])
}

// WithRawParams returns a copy of h (nil: an empty header) that carries a
// request's params as the agent sent them to the gateway's handlers: over
// HTTP the SDK hands a handler the request's header as
// RequestExtra.Header; on other transports the transport sets the extra
// itself. Pass it only for a single request (a batch's requests share one
// header) whose method KeepsRawParams.
func WithRawParams(h http.Header, params json.RawMessage) http.Header {
	out := h.Clone()
	if out == nil {
		out = make(http.Header, 1)
	}
	out[rawParamsKey] = []string{string(params)}
	return out
}

// pipeIDKey is the RequestExtra.Header key by which the stdio transport
// passes a request's JSON-RPC id (an invalid HTTP field name, like
// rawParamsKey): for the request's span.
const pipeIDKey = "Mcp-Gateway pipe request id"

// WithPipeID returns h (which WithRawParams made) with the JSON-RPC id of
// a request read from stdio, for its span's jsonrpc.request.id.
func WithPipeID(h http.Header, id string) http.Header {
	h[pipeIDKey] = []string{id}
	return h
}

// pipeID is the id WithPipeID set; ok is false for a request that did not
// come over stdio.
func pipeID(h http.Header) (id string, ok bool) {
	v, ok := h[pipeIDKey]
	if !ok || len(v) != 1 {
		return "", false
	}
	return v[0], true
}

// WithoutRawParams returns h without the params WithRawParams adds: h
// itself when it has none (no HTTP request can carry the key; this is for
// a header that came another way).
func WithoutRawParams(h http.Header) http.Header {
	if _, ok := h[rawParamsKey]; !ok {
		return h
	}
	out := h.Clone()
	delete(out, rawParamsKey)
	return out
}

// rawParams returns the params of req as the agent sent them, or nil when
// the transport did not pass them on or they are not an object.
func rawParams(req mcp.Request) json.RawMessage {
	ex := req.GetExtra()
	if ex == nil || ex.Header == nil {
		return nil
	}
	v := ex.Header[rawParamsKey]
	if len(v) != 1 {
		return nil
	}
	b := bytes.TrimSpace([]byte(v[0]))
	if len(b) == 0 || b[0] != '{' {
		return nil
	}
	return withoutEnvelope(b) // era.go: the upstreams speak the 2025 era
}

// agentParams returns the params to forward upstream for a request whose
// params came as the agent sent them (raw): those bytes with set applied
// (the routed name or URI; nil sets nothing), and a progress token in
// _meta replaced by one of the gateway's, so that the server's progress
// reaches c's caller with its own token. release forgets that token once
// the request is over.
func (g *Gateway) agentParams(raw json.RawMessage, c *call, set func(json.RawMessage) (json.RawMessage, error)) (params json.RawMessage, release func(), err error) {
	params = raw
	if set != nil {
		if params, err = set(params); err != nil {
			return nil, nil, err
		}
	}
	release = func() {}
	if !hasProgressToken(raw) {
		return params, release, nil // no token, nor a key written with escapes
	}
	var p struct {
		Meta json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, nil, fmt.Errorf("params: %w", err)
	}
	if len(p.Meta) == 0 || bytes.Equal(p.Meta, []byte("null")) {
		return params, release, nil
	}
	// Decoded, not searched: a key may be written with escapes, and the
	// server would read it as the token the gateway must replace.
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(p.Meta, &meta); err != nil {
		return nil, nil, fmt.Errorf("params: _meta: %w", err)
	}
	tok, ok := meta[progressKey]
	if !ok || bytes.Equal(bytes.TrimSpace(tok), []byte("null")) {
		return params, release, nil
	}
	mine := g.progress.forwardRaw(tok, c)
	if params, err = withProgressToken(params, p.Meta, mine); err != nil {
		g.progress.releaseToken(mine)
		return nil, nil, err
	}
	return params, func() { g.progress.releaseToken(mine) }, nil
}

// setRef returns params with the member key of its "ref" object set to
// value (completion/complete's prompt name or resource template URI).
func setRef(params json.RawMessage, key, value string) (json.RawMessage, error) {
	var p struct {
		Ref json.RawMessage `json:"ref"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	ref, err := rawjson.SetString(p.Ref, key, value)
	if err != nil {
		return nil, fmt.Errorf("ref: %w", err)
	}
	return rawjson.SetMember(params, "ref", ref)
}

// forwardAgentParams sends a request whose params the agent sent (raw) to
// up, when up takes raw requests: the params as agentParams makes them,
// the result as the server's bytes. ok is false, having sent nothing, when
// raw is nil, up takes no raw requests, or the params cannot be rewritten:
// the caller then forwards the typed params.
func (g *Gateway) forwardAgentParams(ctx context.Context, up Upstream, c *call, method string, raw json.RawMessage,
	set func(json.RawMessage) (json.RawMessage, error)) (res mcp.Result, ok bool, err error) {
	rc, isRaw := up.(RawCaller)
	if raw == nil || !isRaw {
		return nil, false, nil
	}
	params, release, err := g.agentParams(raw, c, set)
	if err != nil {
		return nil, false, nil
	}
	b, err := g.callRaw(ctx, c, rc, method, params)
	// A request the agent cancelled may still have progress coming.
	settle(err, release)
	if err != nil {
		return nil, true, err
	}
	if len(b) == 0 || b[0] != '{' {
		return nil, true, fmt.Errorf("%s result is not an object: %.40s", method, b)
	}
	return &rawResult{raw: b}, true, nil
}
