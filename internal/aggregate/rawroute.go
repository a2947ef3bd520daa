package aggregate

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	fastjson "github.com/segmentio/encoding/json"

	"github.com/mcp-gateway/mcp-gateway/internal/jsonlimit"
	"github.com/mcp-gateway/mcp-gateway/internal/rawjson"
)

// RoutesRaw reports whether RequestRaw would take a request of method with
// params (rather than return ErrNeedsSession), as far as the request itself
// decides: its params read as the SDK reads them, no progress token, and a
// server that takes raw requests to route it to. Whether the session's
// calls may go outside the SDK is RawEligible's to say.
//
// It sends nothing. A caller that must choose before it sends anything (a
// JSON-RPC batch, answered outside the SDK whole or not at all) asks it
// first; RequestRaw may still decline when the routes change in between.
// It decides with routeRaw, as RequestRaw does, so that the two cannot
// disagree about the same request and routes. It does not rewrite the
// params (the routed name or URI): that is the send's, and cannot fail on
// params routeRaw read whole; were it to, the send declines having sent
// nothing, as when the routes changed in between.
func (g *Gateway) RoutesRaw(method string, params json.RawMessage) bool {
	_, ok := g.routeRaw(method, params, false)
	return ok
}

// rawRoute is where routeRaw routes a request of the raw path, and what its
// send needs.
type rawRoute struct {
	// ups are the servers the request goes to, tried in turn (several
	// only for a resources/read of a URI that several servers serve); each
	// takes raw requests.
	ups []Upstream
	// params are the agent's params as the send takes them (trimmed).
	params json.RawMessage
	// set rewrites params for the server (the routed prompt name, the
	// server's URI, completion's ref); nil for tools/call, whose routed
	// name is call.route.name, and for subscriptions, which
	// forwardSubscription routes and rewrites.
	set func(json.RawMessage) (json.RawMessage, error)
	// uri and orig: resources/read's and subscriptions' URI as the agent
	// sent it, and as the server knows it.
	uri, orig string

	// tools/call only.
	call toolCall
}

// toolCall is a tools/call as routeRaw reads it for callToolRaw.
type toolCall struct {
	route route           // the tool's route
	up    RawCaller       // route.up
	name  string          // the tool's name as the agent called it
	args  json.RawMessage // the arguments as sent (trimmed; may be "null")
	meta  json.RawMessage // _meta as sent
	token json.RawMessage // the agent's progress token (nil: none)
}

// routeRaw is the one place that decides whether the raw path takes a
// request of method with params, and where it goes: RoutesRaw (the batch
// pre-check) and the sends (requestRaw, callToolRaw) both ask it, so that a
// batch accepted is a batch the sends take. It declines (ok false, nothing
// sent) what the SDK path owns: a method ForwardsRaw does not take, params
// nested deeper than the SDK reads or that do not read whole as the SDK
// reads them, a progress token when the caller cannot stream (stream
// false), a name or URI nothing routes to, an upstream without raw
// requests; for all but tools/call, also a request before every server's
// prompts and resources are named (the SDK path waits for them). Whether
// the session's calls may go outside the SDK is rawEligible's to say.
func (g *Gateway) routeRaw(method string, params json.RawMessage, stream bool) (rawRoute, bool) {
	var r rawRoute
	var ok bool
	if !ForwardsRaw(method) || !jsonlimit.DepthWithin(params, jsonlimit.MaxDepth) {
		return r, false
	}
	if method == "tools/call" {
		r.call, r.params, ok = g.routeCall(params, stream)
		return r, ok
	}
	select {
	case <-g.extrasReady:
	default:
		return r, false // not every server's named yet: the SDK path waits
	}
	if params = bytes.TrimSpace(params); len(params) == 0 || params[0] != '{' {
		return r, false
	}
	if !stream && hasProgressToken(params) && carriesToken(params) {
		return r, false // its progress needs the call's stream
	}
	r.params = params
	switch method {
	case "prompts/get":
		var p mcp.GetPromptParams
		if !parseStrict(params, &p) {
			return r, false
		}
		g.mu.RLock()
		pr, found := g.prompts.routes[p.Name]
		g.mu.RUnlock()
		if !found {
			return r, false
		}
		r.ups = []Upstream{pr.up}
		// Set even when unchanged: see callToolAgentParams.
		r.set = func(b json.RawMessage) (json.RawMessage, error) { return rawjson.SetString(b, "name", pr.name) }
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		if method == "resources/read" {
			var p mcp.ReadResourceParams
			if !parseStrict(params, &p) {
				return r, false
			}
			r.uri = p.URI
		} else {
			var p mcp.SubscribeParams
			if !parseStrict(params, &p) {
				return r, false
			}
			r.uri = p.URI
		}
		if r.uri == "" {
			return r, false
		}
		g.mu.RLock()
		r.ups, r.orig = g.res.lookup(r.uri)
		g.mu.RUnlock()
		if method != "resources/read" && len(r.ups) > 1 {
			r.ups = r.ups[:1] // the first owns it (forwardSubscription)
		}
		if method == "resources/read" { // forwardSubscription rewrites its own
			orig := r.orig
			r.set = func(b json.RawMessage) (json.RawMessage, error) { return rawjson.SetString(b, "uri", orig) }
		}
	case "completion/complete":
		var p mcp.CompleteParams
		if !parseStrict(params, &p) || p.Ref == nil {
			return r, false
		}
		if up, _, set := g.completionRoute(*p.Ref); up != nil {
			r.ups, r.set = []Upstream{up}, set
		}
	}
	if len(r.ups) == 0 {
		return r, false
	}
	for _, up := range r.ups {
		if _, ok := up.(RawCaller); !ok {
			return r, false
		}
	}
	return r, true
}

// routeCall is routeRaw for a tools/call (see callToolRaw): the params read
// whole, _meta's progress token (a null one is none; any other needs the
// call's stream, and must be valid JSON to be mapped), arguments an object
// or null, and a route to a server that takes raw requests.
func (g *Gateway) routeCall(params json.RawMessage, stream bool) (toolCall, json.RawMessage, bool) {
	var c toolCall
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      json.RawMessage `json:"_meta"`
	}
	if rest, err := fastjson.Parse(params, &p, fastjson.DontMatchCaseInsensitiveStructFields); err != nil || len(rest) != 0 {
		return c, nil, false
	}
	if len(p.Meta) > 0 && !bytes.Equal(p.Meta, []byte("null")) {
		// Read as decoded, not searched: a key may be written with
		// escapes ("progress\u0054oken"), and the upstream would read it
		// as the token the gateway must replace with one of its own.
		t, ok, err := rawjson.MemberValue(p.Meta, progressKey)
		if err != nil {
			return c, nil, false
		}
		// A null token is none (as agentParams reads it on the SDK path):
		// the params go on as sent, and the server has no token to send
		// progress with that the gateway could route.
		if ok && !bytes.Equal(bytes.TrimSpace(t), []byte("null")) {
			if !stream || !json.Valid(t) {
				return c, nil, false
			}
			c.token = t
		}
	}
	c.args = bytes.TrimSpace(p.Arguments)
	if len(c.args) > 0 && c.args[0] != '{' && !bytes.Equal(c.args, []byte("null")) {
		return c, nil, false
	}
	g.mu.RLock()
	r, ok := g.tools.routes[p.Name]
	g.mu.RUnlock()
	if !ok {
		return c, nil, false
	}
	up, ok := r.up.(RawCaller)
	if !ok {
		return c, nil, false
	}
	c.route, c.up, c.name, c.meta = r, up, p.Name, p.Meta
	return c, params, true
}
