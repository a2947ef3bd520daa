package aggregate

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	fastjson "github.com/segmentio/encoding/json"

	"github.com/mcp-gateway/mcp-gateway/internal/jsonlimit"
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
func (g *Gateway) RoutesRaw(method string, params json.RawMessage) bool {
	if !ForwardsRaw(method) || !jsonlimit.DepthWithin(params, jsonlimit.MaxDepth) {
		return false
	}
	if params = bytes.TrimSpace(params); len(params) == 0 || params[0] != '{' {
		return false
	}
	if method == "tools/call" {
		return g.routesCall(params)
	}
	select {
	case <-g.extrasReady:
	default:
		return false // the SDK path waits for every server's names
	}
	if hasProgressToken(params) && carriesToken(params) {
		return false
	}
	var ups []Upstream
	switch method {
	case "prompts/get":
		var p mcp.GetPromptParams
		if !parseStrict(params, &p) {
			return false
		}
		g.mu.RLock()
		r, ok := g.prompts.routes[p.Name]
		g.mu.RUnlock()
		if ok {
			ups = []Upstream{r.up}
		}
	case "resources/read":
		var p mcp.ReadResourceParams
		if !parseStrict(params, &p) || p.URI == "" {
			return false
		}
		g.mu.RLock()
		ups, _ = g.res.lookup(p.URI)
		g.mu.RUnlock()
	case "completion/complete":
		var p mcp.CompleteParams
		if !parseStrict(params, &p) || p.Ref == nil {
			return false
		}
		if up, _, _ := g.completionRoute(*p.Ref); up != nil {
			ups = []Upstream{up}
		}
	case "resources/subscribe", "resources/unsubscribe":
		var p mcp.SubscribeParams
		if !parseStrict(params, &p) || p.URI == "" {
			return false
		}
		g.mu.RLock()
		ups, _ = g.res.lookup(p.URI)
		g.mu.RUnlock()
		if len(ups) > 1 {
			ups = ups[:1] // the first owns it (forwardSubscription)
		}
	}
	for _, up := range ups {
		if _, ok := up.(RawCaller); !ok {
			return false
		}
	}
	return len(ups) > 0
}

// routesCall is RoutesRaw for a tools/call (see callToolRaw): a progress
// token needs the call's stream; a null one is none.
func (g *Gateway) routesCall(params json.RawMessage) bool {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      json.RawMessage `json:"_meta"`
	}
	if rest, err := fastjson.Parse(params, &p, fastjson.DontMatchCaseInsensitiveStructFields); err != nil || len(rest) != 0 {
		return false
	}
	if len(p.Meta) > 0 && !bytes.Equal(p.Meta, []byte("null")) {
		t, ok, err := memberValue(p.Meta, progressKey)
		if err != nil || ok && !bytes.Equal(bytes.TrimSpace(t), []byte("null")) {
			return false
		}
	}
	if args := bytes.TrimSpace(p.Arguments); len(args) > 0 && args[0] != '{' && !bytes.Equal(args, []byte("null")) {
		return false
	}
	g.mu.RLock()
	r, ok := g.tools.routes[p.Name]
	g.mu.RUnlock()
	if !ok {
		return false
	}
	_, raw := r.up.(RawCaller)
	return raw
}
