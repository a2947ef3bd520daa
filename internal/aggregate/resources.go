package aggregate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/naming"
	"github.com/mcp-gateway/mcp-gateway/internal/rawjson"
)

// RewritePrefix is how a resource URI that another server already publishes
// stays reachable: the first server by name keeps the URI as it is; a later
// server's copy is exported as RewritePrefix + <server> + "/" + <URI>, with
// the server name sanitized like a tool name, e.g.
// "mcp-gateway://github_acme_x/file:///notes.txt". The gateway maps it back
// before forwarding. Resource templates are rewritten the same way.
const RewritePrefix = "mcp-gateway://"

// rewrite returns the exported form of uri for a server that lost it to an
// earlier server.
func rewrite(server, uri string) string {
	return RewritePrefix + naming.Sanitize(server) + "/" + uri
}

// resourceSet merges resources and resource templates across servers. URIs
// are forwarded unchanged unless two servers publish the same one.
type resourceSet struct {
	perServer    map[string][]*mcp.Resource
	tplPerServer map[string][]*mcp.ResourceTemplate
	// Per server and original URI (template), the items as listed, for
	// servers listed with raw requests; enc and tplEnc are list's and
	// tpls' items as served (nil where the SDK listed them).
	raw, tplRaw map[string]map[string]json.RawMessage
	enc, tplEnc []json.RawMessage

	routes    map[string]route // exported URI -> owner and original URI
	tplRoutes []tplRoute       // in server order
	prefixes  map[string]Upstream
	list      []*mcp.Resource
	tpls      []*mcp.ResourceTemplate
	fp        []byte
	// withResources lists, in order, the servers that offer resources, for
	// URIs no list or template names.
	withResources []Upstream
}

type tplRoute struct {
	exported string // the exported uriTemplate
	literal  string // its literal prefix, up to the first '{'
	up       Upstream
	orig     string
}

func newResourceSet() *resourceSet {
	return &resourceSet{
		perServer:    make(map[string][]*mcp.Resource),
		tplPerServer: make(map[string][]*mcp.ResourceTemplate),
		raw:          make(map[string]map[string]json.RawMessage),
		tplRaw:       make(map[string]map[string]json.RawMessage),
		routes:       make(map[string]route),
		prefixes:     make(map[string]Upstream),
	}
}

func (rs *resourceSet) rebuild(servers []string, ups map[string]Upstream) bool {
	routes := make(map[string]route)
	prefixes := make(map[string]Upstream)
	var list []*mcp.Resource
	var tpls []*mcp.ResourceTemplate
	var enc, tplEnc []json.RawMessage
	var tplRoutes []tplRoute
	var with []Upstream
	tplTaken := make(map[string]bool)
	for _, s := range servers {
		up := ups[s]
		prefixes[RewritePrefix+naming.Sanitize(s)+"/"] = up
		if len(rs.perServer[s]) > 0 || len(rs.tplPerServer[s]) > 0 {
			with = append(with, up)
		}
		for _, r := range rs.perServer[s] {
			orig := r.URI
			raw := rs.raw[s][orig]
			if _, taken := routes[orig]; taken {
				c := *r
				c.URI = rewrite(s, orig)
				r = &c
				raw = renamed(raw, "uri", c.URI)
			}
			routes[r.URI] = route{up: up, name: orig}
			list = append(list, r)
			enc = append(enc, raw)
		}
		for _, t := range rs.tplPerServer[s] {
			orig := t.URITemplate
			raw := rs.tplRaw[s][orig]
			if tplTaken[orig] {
				c := *t
				c.URITemplate = rewrite(s, orig)
				t = &c
				raw = renamed(raw, "uriTemplate", c.URITemplate)
			}
			tplEnc = append(tplEnc, raw)
			tplTaken[t.URITemplate] = true
			lit, _, _ := strings.Cut(t.URITemplate, "{")
			tplRoutes = append(tplRoutes, tplRoute{exported: t.URITemplate, literal: lit, up: up, orig: orig})
			tpls = append(tpls, t)
		}
	}
	fp, _ := json.Marshal([]any{list, tpls, enc, tplEnc})
	changed := !bytes.Equal(fp, rs.fp)
	rs.routes, rs.prefixes, rs.list, rs.tpls, rs.tplRoutes, rs.withResources, rs.fp = routes, prefixes, list, tpls, tplRoutes, with, fp
	rs.enc, rs.tplEnc = enc, tplEnc
	return changed
}

// setServer records a server's resources and templates, and their raw
// forms when it was listed with raw requests (nil otherwise).
func (rs *resourceSet) setServer(server string, res []*mcp.Resource, tpls []*mcp.ResourceTemplate, raw, tplRaw map[string]json.RawMessage) {
	rs.perServer[server], rs.tplPerServer[server] = res, tpls
	rs.raw[server], rs.tplRaw[server] = raw, tplRaw
}

// renamed is raw with member key set to value, or nil (the item is then
// served from its Go value, which has the new value) when raw is nil or
// not an object.
func renamed(raw json.RawMessage, key, value string) json.RawMessage {
	if raw == nil {
		return nil
	}
	out, err := rawjson.SetString(raw, key, value)
	if err != nil {
		return nil
	}
	return out
}

// lookup finds the server for a URI an agent sent: an exact listed URI, a
// rewritten one, one a template produces (longest literal prefix wins, then
// the first server by name), or else every server with resources, in order.
func (rs *resourceSet) lookup(uri string) (candidates []Upstream, orig string) {
	if r, ok := rs.routes[uri]; ok {
		return []Upstream{r.up}, r.name
	}
	if strings.HasPrefix(uri, RewritePrefix) {
		for p, up := range rs.prefixes {
			if strings.HasPrefix(uri, p) {
				return []Upstream{up}, strings.TrimPrefix(uri, p)
			}
		}
	}
	best := -1
	for i, t := range rs.tplRoutes {
		if t.literal != "" && strings.HasPrefix(uri, t.literal) && (best < 0 || len(t.literal) > len(rs.tplRoutes[best].literal)) {
			best = i
		}
	}
	if best >= 0 {
		return []Upstream{rs.tplRoutes[best].up}, uri
	}
	return rs.withResources, uri
}

// resourceListing is what listResources found on one server.
type resourceListing struct {
	resources   []*mcp.Resource
	templates   []*mcp.ResourceTemplate
	raw, tplRaw map[string]json.RawMessage // nil when listed through the SDK
}

// listResources lists an upstream's resources and templates, all pages:
// with raw requests when the upstream takes them (raw != nil), keeping each
// item's bytes, else through the SDK client.
func listResources(ctx context.Context, cs *mcp.ClientSession, caps *mcp.ServerCapabilities, raw RoundTrip) (resourceListing, error) {
	var l resourceListing
	if caps.Resources == nil {
		return l, nil
	}
	var err error
	if raw != nil {
		if l.resources, l.raw, err = listRaw(ctx, raw, "resources/list", "resources", func(r *mcp.Resource) string { return r.URI }); err != nil {
			return l, fmt.Errorf("list resources: %w", err)
		}
		// Templates are optional; servers without any may answer
		// "method not found".
		l.templates, l.tplRaw, _ = listRaw(ctx, raw, "resources/templates/list", "resourceTemplates",
			func(t *mcp.ResourceTemplate) string { return t.URITemplate })
		return l, nil
	}
	if l.resources, err = collect(cs.Resources(ctx, nil), "resources"); err != nil {
		return l, err
	}
	l.templates, _ = collect(cs.ResourceTemplates(ctx, nil), "resource templates")
	return l, nil
}

func (g *Gateway) listResources(req *mcp.ListResourcesRequest) (mcp.Result, error) {
	cursor := ""
	if req.Params != nil {
		cursor = req.Params.Cursor
	}
	g.mu.RLock()
	list, enc := g.res.list, g.res.enc
	g.mu.RUnlock()
	page, err := encodePage(list, enc, "resources", cursor, g.pageSize)
	if err != nil {
		return nil, err
	}
	return &rawResult{raw: page}, nil
}

func (g *Gateway) listResourceTemplates(req *mcp.ListResourceTemplatesRequest) (mcp.Result, error) {
	cursor := ""
	if req.Params != nil {
		cursor = req.Params.Cursor
	}
	g.mu.RLock()
	list, enc := g.res.tpls, g.res.tplEnc
	g.mu.RUnlock()
	page, err := encodePage(list, enc, "resourceTemplates", cursor, g.pageSize)
	if err != nil {
		return nil, err
	}
	return &rawResult{raw: page}, nil
}

func (g *Gateway) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (mcp.Result, error) {
	p := req.Params
	if p == nil || p.URI == "" {
		return nil, invalidParams("missing uri")
	}
	g.mu.RLock()
	ups, orig := g.res.lookup(p.URI)
	g.mu.RUnlock()
	if len(ups) == 0 {
		return nil, &jsonrpc.Error{Code: mcp.CodeResourceNotFound, Message: fmt.Sprintf("resource not found: %s", p.URI)}
	}
	raw := rawParams(req)
	// Set even when unchanged: see callToolAgentParams.
	reroute := func(b json.RawMessage) (json.RawMessage, error) { return rawjson.SetString(b, "uri", orig) }
	var firstErr error
	for _, up := range ups {
		call, done := g.calls.begin(ctx, req.Session, up.Name())
		res, sent, err := g.forwardAgentParams(call.ctx, up, call, "resources/read", raw, reroute)
		if !sent {
			meta := g.progress.forward(p.Meta, call)
			params := &mcp.ReadResourceParams{Meta: meta, URI: orig}
			res, err = g.forward(call.ctx, call, up, "resources/read", params, func(ctx context.Context, cs *mcp.ClientSession) (mcp.Result, error) {
				return cs.ReadResource(ctx, params)
			})
			g.progress.release(meta)
		}
		err = call.expired(err)
		done()
		if err == nil {
			if orig != p.URI {
				res = contentsAs(res, orig, p.URI)
			}
			return res, nil
		}
		if firstErr == nil {
			// The only server the URI can be on answers as it would
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

// subscribe forwards resources/subscribe to the owning server, on the
// SDK's path (stdio mode, batches; the HTTP endpoint's fast path takes the
// rest through Send). The SDK answers the agent with an empty result.
func (g *Gateway) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	return g.forwardSubscription(ctx, req.Session, req.Params.URI, rawParams(req), true)
}

func (g *Gateway) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	return g.forwardSubscription(ctx, req.Session, req.Params.URI, rawParams(req), false)
}

// emptyResult is the gateway's own answer to an unsubscribe it does not
// forward (see changeSubscription), as the SDK encodes an empty result.
func emptyResult() json.RawMessage { return json.RawMessage(`{}`) }

// subscriptionOwner is the server a subscription to the exported uri goes
// to, and the uri as that server names it, once the servers' resources are
// listed.
func (g *Gateway) subscriptionOwner(ctx context.Context, uri string) (Upstream, string, error) {
	if err := g.waitExtras(ctx); err != nil {
		return nil, "", err
	}
	g.mu.RLock()
	ups, orig := g.res.lookup(uri)
	g.mu.RUnlock()
	if len(ups) == 0 {
		return nil, "", invalidParams("unknown resource %q", uri)
	}
	return ups[0], orig, nil
}

// forwardSubscription forwards a subscription change of session ss on the
// SDK's path to the server that owns uri: with raw, the params as the agent
// sent them (the URI mapped back), else typed.
func (g *Gateway) forwardSubscription(ctx context.Context, ss *mcp.ServerSession, uri string, raw json.RawMessage, on bool) error {
	up, orig, err := g.subscriptionOwner(ctx, uri)
	if err != nil {
		return err
	}
	reroute := func(b json.RawMessage) (json.RawMessage, error) { return rawjson.SetString(b, "uri", orig) }
	_, err = g.changeSubscription(ctx, ss, ss, uri, up, orig, on, nil, nil, func(c *call, method string) (json.RawMessage, bool, error) {
		ctx := c.ctx // ends when the server goes quiet (callTimer)
		if res, sent, err := g.forwardAgentParams(ctx, up, c, method, raw, reroute); sent {
			if err != nil {
				return nil, true, err
			}
			return res.(*rawResult).raw, true, nil
		}
		return emptyResult(), true, up.Do(ctx, func(cs *mcp.ClientSession) error {
			if on {
				return cs.Subscribe(ctx, &mcp.SubscribeParams{URI: orig})
			}
			return cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: orig})
		})
	})
	return err
}

// changeSubscription changes the subscription of h (session ss's, or a
// listen stream's on it) to uri (orig at up) through send, and returns the
// server's result bytes (or the gateway's empty result). It records h as
// subscribed to uri, or no longer, so that the server's
// notifications/resources/updated for it reach exactly the holders
// subscribed (relayResourceUpdated).
//
// The server sees one client, the gateway, for every holder: an
// unsubscribe while another live holder still holds uri is answered by
// the gateway and not forwarded, or it would end the other's updates.
// send returns sent false, having sent nothing, for params it cannot
// rewrite: ErrNeedsSession, with nothing recorded.
func (g *Gateway) changeSubscription(ctx context.Context, ss *mcp.ServerSession, h holder, uri string, up Upstream, orig string, on bool,
	notify Notify, ask Ask, send func(c *call, method string) (json.RawMessage, bool, error)) (json.RawMessage, error) {
	// One change at a time, from the check to the server's answer: else
	// one holder's unsubscribe (nobody else holding uri) and another's
	// subscribe can reach the server in the wrong order.
	defer g.subChange.lock(up.Name() + "\x00" + orig)()
	if !on && g.subs.heldElsewhere(uri, h, g.liveHolders()) {
		if g.subs.setSession(uri, h, false) {
			g.subs.set(up.Name(), orig, uri, false)
		}
		return emptyResult(), nil
	}
	method := "resources/unsubscribe"
	if on {
		method = "resources/subscribe"
	}
	// A subscribing holder counts as holding uri from now, so that
	// another's unsubscribe meanwhile is not forwarded.
	was := on && g.subs.setSession(uri, h, true)
	undo := func() {
		if on && !was {
			g.subs.setSession(uri, h, false)
		}
	}
	c, done := g.calls.beginNotify(ctx, ss, up.Name(), notify, ask)
	res, sent, err := send(c, method)
	err = c.expired(err)
	done()
	if !sent {
		undo()
		return nil, ErrNeedsSession
	}
	if err != nil {
		undo()
		return nil, serverError(up.Name(), err)
	}
	// The server's count is of holders: only a change of this
	// holder's own state moves it.
	changed := !was // a subscribe: h is marked already
	if !on {
		changed = g.subs.setSession(uri, h, false)
	}
	if changed {
		g.subs.set(up.Name(), orig, uri, on)
	}
	return res, nil
}

// complete routes completion/complete by its reference: a prompt by its
// exported name, a resource template by its exported URI template.
func (g *Gateway) complete(ctx context.Context, req *mcp.CompleteRequest) (mcp.Result, error) {
	p := req.Params
	if p == nil || p.Ref == nil {
		return nil, invalidParams("missing ref")
	}
	up, ref, reroute := g.completionRoute(*p.Ref)
	if up == nil {
		return nil, invalidParams("unknown completion reference %s %q", ref.Type, ref.Name+ref.URI)
	}
	call, done := g.calls.begin(ctx, req.Session, up.Name())
	defer done()
	ctx = call.ctx // ends when the server goes quiet (callTimer)
	res, sent, err := g.forwardAgentParams(ctx, up, call, "completion/complete", rawParams(req), reroute)
	if !sent {
		params := &mcp.CompleteParams{Meta: p.Meta, Ref: &ref, Argument: p.Argument, Context: p.Context}
		res, err = g.forward(ctx, call, up, "completion/complete", params, func(ctx context.Context, cs *mcp.ClientSession) (mcp.Result, error) {
			return cs.Complete(ctx, params)
		})
	}
	if err != nil {
		return nil, serverError(up.Name(), call.expired(err))
	}
	return res, nil
}

// completionRoute returns the server a completion reference routes to (nil:
// none), the reference as that server knows it, and the rewrite of raw
// params that puts it in "ref".
func (g *Gateway) completionRoute(ref mcp.CompleteReference) (Upstream, mcp.CompleteReference, func(json.RawMessage) (json.RawMessage, error)) {
	var up Upstream
	g.mu.RLock()
	switch ref.Type {
	case "ref/prompt":
		if r, ok := g.prompts.routes[ref.Name]; ok {
			up, ref.Name = r.up, r.name
		}
	case "ref/resource":
		for _, t := range g.res.tplRoutes {
			if t.exported == ref.URI {
				up, ref.URI = t.up, t.orig
				break
			}
		}
		if up == nil {
			if ups, orig := g.res.lookup(ref.URI); len(ups) > 0 {
				up, ref.URI = ups[0], orig
			}
		}
	}
	g.mu.RUnlock()
	// Set even when unchanged: see callToolAgentParams.
	reroute := func(b json.RawMessage) (json.RawMessage, error) { return setRef(b, "name", ref.Name) }
	if ref.Type == "ref/resource" {
		reroute = func(b json.RawMessage) (json.RawMessage, error) { return setRef(b, "uri", ref.URI) }
	}
	return up, ref, reroute
}

// contentsAs returns a resources/read result with each content's uri that
// is orig (the server's URI) given as exported (the URI the agent read).
func contentsAs(res mcp.Result, orig, exported string) mcp.Result {
	switch r := res.(type) {
	case *mcp.ReadResourceResult:
		for _, c := range r.Contents {
			if c != nil && c.URI == orig {
				c.URI = exported
			}
		}
	case *rawResult:
		var page struct {
			Contents []json.RawMessage `json:"contents"`
		}
		if json.Unmarshal(r.raw, &page) != nil {
			return res
		}
		for i, c := range page.Contents {
			var u struct {
				URI string `json:"uri"`
			}
			if json.Unmarshal(c, &u) == nil && u.URI == orig {
				if nc, err := rawjson.SetString(c, "uri", exported); err == nil {
					page.Contents[i] = nc
				}
			}
		}
		contents, err := json.Marshal(page.Contents)
		if err != nil {
			return res
		}
		if out, err := rawjson.SetMember(r.raw, "contents", contents); err == nil {
			r.raw = out
		}
	}
	return res
}

// keyedLocks are mutexes by key, made when first asked for and dropped
// when nobody holds or waits for them, so that keys (a server's URIs) need
// no bound.
type keyedLocks struct {
	mu sync.Mutex
	of map[string]*keyedLock
}

type keyedLock struct {
	sync.Mutex
	refs int // holders and waiters
}

// lock locks key and returns its unlock: one change of a URI's
// subscription at a time, while other URIs and other servers go on (a
// server that hangs on a subscribe holds up only that URI).
func (k *keyedLocks) lock(key string) (unlock func()) {
	k.mu.Lock()
	l := k.of[key]
	if l == nil {
		if k.of == nil {
			k.of = make(map[string]*keyedLock)
		}
		l = new(keyedLock)
		k.of[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.of, key)
		}
		k.mu.Unlock()
	}
}
