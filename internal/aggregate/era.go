package aggregate

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/rawjson"
)

// The 2026-07-28 era toward agents. A request of that era reaches the
// gateway's handlers on a session the SDK made for it alone (stateless
// HTTP), whose InitializeParams the SDK filled from the request's _meta.
// What differs for the aggregate:
//
//   - every result says resultType "complete" and names the gateway in
//     _meta (io.modelcontextprotocol/serverInfo). The SDK stamps its own
//     typed results; a result the gateway holds as the server's bytes
//     (rawResult) is stamped when it is encoded (stampedResult);
//   - a 2025-era upstream speaks on a shared session, so the request's
//     envelope (protocol version, client info, log level in _meta) is not
//     forwarded: a 2025 server that knows the envelope (the Go SDK's)
//     would take the request for a 2026 one on a connection initialized
//     for 2025. The client's capabilities go on (callercaps.go): a server
//     of both eras reads them per request, as it would from the agent.

// statelessRevision is the first protocol revision without initialize.
const statelessRevision = "2026-07-28"

// envelopeKeys are the _meta members of a 2026-era request that describe
// the agent's connection, not the request: the upstream's session has its
// own. The client's capabilities stay (callercaps.go): they are the
// agent's, which a server of both eras reads per request.
func envelopeKeys() []string {
	return []string{
		"io.modelcontextprotocol/protocolVersion",
		"io.modelcontextprotocol/clientInfo",
		"io.modelcontextprotocol/logLevel",
	}
}

// handleStateless is handle for a 2026-era request: with the request's log
// level while it runs, and its result stamped for the revision.
func (g *Gateway) handleStateless(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	defer g.requestLogLevel(req)()
	switch method {
	case "tasks/get", "tasks/update", "tasks/cancel": // tasks2026.go
		if !requestDeclaresTasks(req) {
			return nil, missingTasksCapability()
		}
		if err := taskNameHeader(req); err != nil {
			return nil, err
		}
	case "tools/call":
		if call, ok := req.(*mcp.CallToolRequest); ok {
			if res, handled, err := g.taskCall2026(ctx, call); handled {
				if err != nil {
					return nil, err
				}
				return g.stampedResult(method, res), nil
			}
		}
	}
	res, err := g.handlePending(ctx, method, req, next) // pending.go
	if err != nil {
		return nil, err
	}
	if call, ok := req.(*mcp.CallToolRequest); ok {
		if res, err = g.taskHandle2026(call, res); err != nil {
			return nil, err
		}
	}
	return g.stampedResult(method, res), nil
}

// AgentSessions counts the sessions of 2025-era agents (over HTTP or
// stdio): the sessions an operator sees open. A session the SDK makes for
// one 2026-era request lives only while that request is served, and is
// not counted.
func (g *Gateway) AgentSessions() int {
	n := 0
	for ss := range g.server.Sessions() {
		if !statelessSession(ss) {
			n++
		}
	}
	return n
}

// statelessSession reports whether ss was made for one 2026-era request.
func statelessSession(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	return ip != nil && ip.ProtocolVersion >= statelessRevision
}

// requestLogLevel records, while a 2026-era request is served, the log
// level its _meta asks for (io.modelcontextprotocol/logLevel) as its
// session's level, so that the servers' log messages during the request
// reach it at that level (logsAt) and none reach a request that asked for
// none. The upstreams' own level is left alone: it follows the 2025-era
// sessions' logging/setLevel. done forgets the level.
func (g *Gateway) requestLogLevel(req mcp.Request) (done func()) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if ss == nil {
		return func() {}
	}
	level, _ := metaOf(req)["io.modelcontextprotocol/logLevel"].(string)
	if level == "" {
		return func() {}
	}
	g.mu.Lock()
	if g.levels == nil {
		g.levels = make(map[*mcp.ServerSession]mcp.LoggingLevel)
	}
	g.levels[ss] = mcp.LoggingLevel(level)
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		delete(g.levels, ss)
		g.mu.Unlock()
	}
}

// statelessEra reports whether req is a 2026-era request: its _meta names
// that revision (the envelope rule, as the SDK's own validateRequestMeta
// reads it), or its session was opened in it (over stdio, by a
// server/discover that named it).
func statelessEra(req mcp.Request) bool {
	if v, ok := metaOf(req)["io.modelcontextprotocol/protocolVersion"].(string); ok && v >= statelessRevision {
		return true
	}
	ss, _ := req.GetSession().(*mcp.ServerSession)
	return statelessSession(ss)
}

// stampedResult returns res ready for a 2026-era agent: a rawResult is
// copied (it may be shared) and marked, so that its encoding carries
// resultType and the _meta the SDK sets on it; the SDK's typed results are
// left to the SDK, which stamps them itself.
//
// A cacheable result without hints of its own gets them: a merged list the
// merge of its servers' (listHint), anything else (a resource read from a
// 2025 server, discover) a legacy hint.
func (g *Gateway) stampedResult(method string, res mcp.Result) mcp.Result {
	r, ok := res.(*rawResult)
	if !ok || r == nil {
		return res
	}
	s := &rawResult{ResultBase: r.ResultBase, raw: r.raw, stateless: true}
	switch {
	case method == "tools/list" || method == "prompts/list" || method == "resources/list" || method == "resources/templates/list":
		h := g.listHint()
		s.hint = &h
	case cacheableMethod(method):
		h := legacyHint()
		s.hint = &h
	}
	return s
}

// cacheableMethod reports whether results of method carry the revision's
// caching hints (ttlMs and cacheScope are required members of them).
func cacheableMethod(method string) bool {
	switch method {
	case "server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read":
		return true
	}
	return false
}

// stamp returns raw with resultType "complete" unless the result says its
// type, hint's ttlMs and cacheScope where the result has none (hint nil:
// not a cacheable result), and with the members of meta (the SDK's
// serverInfo: the gateway's) in its _meta, over a 2026 server's own (the
// agent's server is the gateway). On any failure raw goes as it is: an
// answer must go out.
func stamp(raw json.RawMessage, meta mcp.Meta, hint *cacheHint) json.RawMessage {
	out := setAbsent(raw, "resultType", json.RawMessage(`"complete"`))
	if hint != nil {
		ttl, _ := json.Marshal(hint.TTLMs)
		scope, _ := json.Marshal(hint.Scope)
		out = setAbsent(out, "ttlMs", ttl)
		out = setAbsent(out, "cacheScope", scope)
	}
	if len(meta) == 0 {
		return out
	}
	have := map[string]json.RawMessage{}
	if m, ok, err := rawjson.MemberValue(out, "_meta"); err == nil && ok && !bytes.Equal(bytes.TrimSpace(m), []byte("null")) {
		if json.Unmarshal(m, &have) != nil {
			return out
		}
	}
	for k, v := range meta {
		b, err := json.Marshal(v)
		if err != nil {
			continue
		}
		have[k] = b
	}
	m, err := json.Marshal(have)
	if err != nil {
		return out
	}
	if b, err := rawjson.SetMember(out, "_meta", m); err == nil {
		out = b
	}
	return out
}

// withoutEnvelope returns params without the 2026 envelope in _meta (see
// envelopeKeys), every other byte as sent.
func withoutEnvelope(params json.RawMessage) json.RawMessage {
	if !bytes.Contains(params, []byte("io.modelcontextprotocol/")) {
		return params
	}
	m, ok, err := rawjson.MemberValue(params, "_meta")
	if err != nil || !ok {
		return params
	}
	out, _ := withoutEnvelopeIn(params, m)
	return out
}

// withoutEnvelopeIn is withoutEnvelope for params whose _meta is meta (as
// rawjson.MemberValue reads it, or a decoder), read already; it returns
// _meta as it is in out too.
func withoutEnvelopeIn(params, meta json.RawMessage) (out, outMeta json.RawMessage) {
	// Its members taken out as bytes: the rest of _meta goes on as the
	// agent wrote it.
	stripped, err := rawjson.DeleteMembers(meta, envelopeKeys()...)
	if err != nil || len(stripped) == len(meta) {
		return params, meta
	}
	out, err = rawjson.SetMember(params, "_meta", stripped)
	if err != nil {
		return params, meta
	}
	return out, stripped
}

// withoutEnvelopeMeta is withoutEnvelope for decoded _meta: meta itself
// when it carries none of the envelope.
func withoutEnvelopeMeta(meta mcp.Meta) mcp.Meta {
	var out mcp.Meta
	for _, k := range envelopeKeys() {
		if _, ok := meta[k]; ok {
			if out == nil {
				out = maps.Clone(meta)
			}
			delete(out, k)
		}
	}
	if out == nil {
		return meta
	}
	return out
}

// setAbsent returns obj with key set to value unless obj has the member.
func setAbsent(obj json.RawMessage, key string, value json.RawMessage) json.RawMessage {
	if _, ok, err := rawjson.MemberValue(obj, key); err != nil || ok {
		return obj
	}
	if b, err := rawjson.SetMember(obj, key, value); err == nil {
		return b
	}
	return obj
}

// metaOf returns the _meta of req's params, nil when it has none: a request
// without params holds a nil pointer of its params type, whose GetMeta
// would panic.
func metaOf(req mcp.Request) map[string]any {
	p := req.GetParams()
	if p == nil {
		return nil
	}
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return p.GetMeta()
}
