package aggregate

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	fastjson "github.com/segmentio/encoding/json"
)

// ForwardsRaw reports whether RequestRaw and RequestStream take method:
// the requests the gateway forwards to one server and whose result is that
// server's, which a caller can answer outside the SDK as the bytes the
// server wrote. resources/subscribe and unsubscribe are among them: the
// gateway, not the SDK, keeps which session subscribed to what
// (forwardSubscription).
func ForwardsRaw(method string) bool {
	switch method {
	case "tools/call", "prompts/get", "resources/read", "completion/complete",
		"resources/subscribe", "resources/unsubscribe":
		return true
	}
	return false
}

// RequestRaw is CallToolRaw for every method ForwardsRaw takes: the
// request is routed and rewritten as the SDK path's handler does (the
// routed prompt name, the server's URI, completion's ref, a subscription's
// URI; a
// resources/read result's contents given the URI the agent read), sent as
// the agent's bytes, and answered with the server's. It returns
// ErrNeedsSession, having sent nothing, for what it leaves to the SDK path,
// which owns those errors: a request before every server's prompts and
// resources are named (the SDK path waits for them), params the SDK would
// refuse, a name or URI
// nothing routes to, an upstream without raw requests, and what
// CallToolRaw leaves for the session's sake.
func (g *Gateway) RequestRaw(ctx context.Context, ss *mcp.ServerSession, method string, params json.RawMessage, hasStream bool) (json.RawMessage, error) {
	return g.requestRaw(ctx, ss, method, params, hasStream, nil, nil)
}

// RequestStream is CallToolStream for every method ForwardsRaw takes (see
// RequestRaw).
func (g *Gateway) RequestStream(ctx context.Context, ss *mcp.ServerSession, method string, params json.RawMessage, hasStream bool, notify Notify, ask Ask, needed *bool) (json.RawMessage, error) {
	if method == "tools/call" {
		return g.CallToolStream(ctx, ss, params, hasStream, notify, ask, needed)
	}
	if needed != nil {
		*needed = g.mayStream(ss, params, hasStream)
	}
	return g.requestRaw(ctx, ss, method, params, hasStream, notify, ask)
}

func (g *Gateway) requestRaw(ctx context.Context, ss *mcp.ServerSession, method string, params json.RawMessage, hasStream bool, notify Notify, ask Ask) (json.RawMessage, error) {
	if method == "tools/call" {
		return g.callToolRaw(ctx, ss, params, hasStream, notify, ask, nil)
	}
	if !ForwardsRaw(method) || !g.rawEligible(ss, hasStream, notify != nil && ask != nil) {
		return nil, ErrNeedsSession
	}
	r, ok := g.routeRaw(method, params, notify != nil)
	if !ok {
		return nil, ErrNeedsSession
	}
	params = r.params
	if method == "resources/subscribe" || method == "resources/unsubscribe" {
		return g.forwardSubscription(ctx, ss, r.uri, params, method == "resources/subscribe", true, notify, ask)
	}
	ups, set, uri, orig := r.ups, r.set, r.uri, r.orig
	var firstErr error
	for i, up := range ups {
		c, done := g.calls.beginNotify(ctx, ss, up.Name(), notify, ask)
		res, sent, err := g.forwardAgentParams(ctx, up, c, method, params, set)
		done()
		if !sent {
			if i == 0 {
				return nil, ErrNeedsSession // params it cannot rewrite
			}
			break
		}
		if err == nil {
			if orig != uri {
				res = contentsAs(res, orig, uri)
			}
			return res.(*rawResult).raw, nil
		}
		if firstErr == nil {
			// As readResource: the only server answers as it would
			// directly; of several tried in turn, the error says whose.
			if len(ups) == 1 {
				firstErr = serverError(up.Name(), err)
			} else {
				firstErr = upstreamError(up.Name(), err)
			}
		}
	}
	return nil, firstErr
}

// parseStrict decodes params into v as the SDK does (member names matched
// exactly), reporting whether they decoded whole.
func parseStrict(params json.RawMessage, v any) bool {
	rest, err := fastjson.Parse(params, v, fastjson.DontMatchCaseInsensitiveStructFields)
	return err == nil && len(rest) == 0
}

// carriesToken reports whether params' _meta holds a progress token that
// is not null (decoded, not searched: a key may be written with escapes),
// or cannot be read.
func carriesToken(params json.RawMessage) bool {
	var p struct {
		Meta json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return true
	}
	if len(p.Meta) == 0 || bytes.Equal(p.Meta, []byte("null")) {
		return false
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(p.Meta, &meta) != nil {
		return true
	}
	tok, ok := meta[progressKey]
	return ok && !bytes.Equal(bytes.TrimSpace(tok), []byte("null"))
}
