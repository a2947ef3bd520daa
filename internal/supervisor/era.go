package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/rawjson"
)

// The protocol eras toward servers.
//
// MCP 2026-07-28 has no initialize handshake: each request carries the
// protocol version and the client's capabilities in its _meta, and a server
// tells its versions through server/discover. A server may speak both eras,
// the 2026 one only, or the 2025 one only. The spec asks a client to speak
// the 2026 era to every server that supports it, and the gateway's agent
// side serves the 2025 era's features to 2025 agents whatever era a server
// speaks (input requests through the legacy shim, log levels and the
// agent's capabilities in each request's _meta, resource subscriptions as
// subscriptions/listen streams: subscribe2026). So every server is probed:
//
//   - A start opens with server/discover on the real connection (the SDK's
//     client: Connect at 2026-07-28), not on a sibling process. A server
//     that answers it with 2026-07-28 among its versions is a 2026 server:
//     no initialize, every request with _meta. The TypeScript SDK pins a
//     stdio connection to the era of its first message, which is the era
//     wanted here, so the same connection serves on.
//   - A server that answers the probe with anything else (an error, a
//     discover without a 2026 version) is sent initialize on the same
//     connection, as before (the SDK's fallback): a 2025 server, whose
//     start costs one round trip more than it did.
//   - A server that exits on the probe without answering anything (some
//     stdio servers end on an unknown first message) is started again at
//     once with initialize. One that is silent until the handshake's limit
//     fails that start as a silent server always did, and its restart
//     opens with initialize.
//   - A server that refuses a 2025 initialize with -32022 naming a 2026
//     version (a 2026-only server whose era was learned as 2025) is started
//     again at once in the 2026 era.
//   - The era learned is kept for the server's later restarts in this run:
//     the probe and its fallbacks are paid once per server per run.

// Protocol2026 is the first protocol version of the stateless era.
const Protocol2026 = "2026-07-28"

// refusesLegacy reports whether err is a server's refusal of the 2025-era
// initialize that names a 2026-era version it would speak instead.
func refusesLegacy(err error) bool {
	var wire *jsonrpc.Error
	return errors.As(err, &wire) && wire.Code == mcp.CodeUnsupportedProtocolVersion && names2026(wire.Data)
}

// names2026 reports whether data (an UnsupportedProtocolVersionError's
// data) lists a version of the 2026 era or later.
func names2026(data json.RawMessage) bool {
	var d mcp.UnsupportedProtocolVersionData
	if json.Unmarshal(data, &d) != nil {
		return false
	}
	for _, v := range d.Supported {
		if v >= Protocol2026 {
			return true
		}
	}
	return false
}

// eraMemo is the protocol version a server's next start opens with: the
// 2026 era (the probe: server/discover, then initialize as the answer
// says) until the server's era is known.
type eraMemo struct {
	mu      sync.Mutex
	version string
}

func (e *eraMemo) get() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.version == "" {
		return Protocol2026
	}
	return e.version
}

// pin starts the memo at the era the server's config names
// (catalog.ProtocolKey): a server pinned to 2025 is never sent
// server/discover. One that refuses initialize for the 2026 era still gets
// it, as it cannot be spoken to otherwise. "" leaves the era to be learned.
func (e *eraMemo) pin(v string) {
	if v == catalog.Protocol2025 {
		e.set(ProtocolVersion)
	}
}

func (e *eraMemo) set(v string) {
	e.mu.Lock()
	e.version = v
	e.mu.Unlock()
}

// is2026 reports whether a session negotiated the 2026 era.
func is2026(cs *mcp.ClientSession) bool {
	ir := cs.InitializeResult()
	return ir != nil && ir.ProtocolVersion >= Protocol2026
}

// discoveredRaw is what InitializeResultRaw holds for a 2026-era server,
// which sent no initialize result: the one the SDK made of its
// server/discover answer.
func discoveredRaw(cs *mcp.ClientSession) json.RawMessage {
	b, err := json.Marshal(cs.InitializeResult())
	if err != nil {
		return nil
	}
	return b
}

// requestMeta holds the _meta members every request to a 2026-era server
// carries (protocol version, client info and capabilities). They are taken
// from the SDK's own server/discover request, so that the gateway's raw
// requests declare what the SDK's requests do.
type requestMeta struct {
	mu   sync.Mutex
	meta map[string]json.RawMessage
}

// learn records the _meta of params when method is server/discover.
func (m *requestMeta) learn(method string, params json.RawMessage) {
	if method != "server/discover" {
		return
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.Meta) == 0 {
		return
	}
	m.mu.Lock()
	m.meta = p.Meta
	m.mu.Unlock()
}

// callerCapabilitiesKey carries the calling agent's client capabilities.
type callerCapabilitiesKey struct{}

// WithCallerCapabilities returns ctx carrying an agent's own client
// capabilities (the 2026 form, as in _meta), which a raw request to a
// 2026-era server then declares instead of the gateway's: the server shows
// and asks each agent what it would show and ask it directly. A 2025-era
// server has one session for all agents and never sees them.
func WithCallerCapabilities(ctx context.Context, caps json.RawMessage) context.Context {
	return context.WithValue(ctx, callerCapabilitiesKey{}, caps)
}

// callerLogLevelKey carries the calling agent's log level.
type callerLogLevelKey struct{}

// WithCallerLogLevel returns ctx carrying the log level an agent set, which
// a raw request to a 2026-era server then asks for (in _meta) instead of
// debug: the server sends only the messages that agent wants.
func WithCallerLogLevel(ctx context.Context, level string) context.Context {
	return context.WithValue(ctx, callerLogLevelKey{}, level)
}

// callerKey carries a function that yields the calling agent's client
// capabilities (2026 form) and log level.
type callerKey struct{}

// WithCaller is WithCallerCapabilities and WithCallerLogLevel on demand:
// of runs only when a request goes to a 2026-era server, so that the
// requests to 2025-era servers, which never see an agent's capabilities,
// pay nothing to compute them. Values set by the other two win; of may
// return nil caps or "" to leave either to the default.
func WithCaller(ctx context.Context, of func() (caps json.RawMessage, level string)) context.Context {
	return context.WithValue(ctx, callerKey{}, of)
}

// caller returns the agent's capabilities and log level ctx carries.
func caller(ctx context.Context) (caps json.RawMessage, level string) {
	caps, _ = ctx.Value(callerCapabilitiesKey{}).(json.RawMessage)
	level, _ = ctx.Value(callerLogLevelKey{}).(string)
	if of, ok := ctx.Value(callerKey{}).(func() (json.RawMessage, string)); ok && of != nil && (len(caps) == 0 || level == "") {
		c, l := of()
		if len(caps) == 0 {
			caps = c
		}
		if level == "" {
			level = l
		}
	}
	return caps, level
}

// stamp returns params with the era's _meta members added where params
// does not set them already (an agent's progressToken stays).
func (m *requestMeta) stamp(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	m.mu.Lock()
	base := m.meta
	m.mu.Unlock()
	p := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(params)) > 0 && string(bytes.TrimSpace(params)) != "null" {
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("params: %v", err)}
		}
	}
	meta := map[string]json.RawMessage{}
	if raw := p["_meta"]; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("params._meta: %v", err)}
		}
	}
	caps, level := caller(ctx)
	if len(caps) > 0 {
		if _, set := meta[mcp.MetaKeyClientCapabilities]; !set {
			meta[mcp.MetaKeyClientCapabilities] = caps
		}
	}
	for k, v := range base {
		if _, set := meta[k]; !set {
			meta[k] = v
		}
	}
	if _, set := meta[mcp.MetaKeyProtocolVersion]; !set {
		meta[mcp.MetaKeyProtocolVersion] = json.RawMessage(`"` + Protocol2026 + `"`)
	}
	if _, set := meta[mcp.MetaKeyClientCapabilities]; !set {
		meta[mcp.MetaKeyClientCapabilities] = json.RawMessage(`{}`)
	}
	if level != "" {
		if _, set := meta[mcp.MetaKeyLogLevel]; !set {
			b, err := json.Marshal(level)
			if err != nil {
				return nil, err
			}
			meta[mcp.MetaKeyLogLevel] = b
		}
	}
	if _, set := meta[mcp.MetaKeyLogLevel]; !set {
		// A 2026 server logs only for requests that ask; a 2025 server
		// logs what it likes (the gateway sends no logging/setLevel) and
		// the gateway applies each agent's level: the same here.
		meta[mcp.MetaKeyLogLevel] = json.RawMessage(`"debug"`)
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	p["_meta"] = b
	return json.Marshal(p)
}

// subscribe2026 does on a 2026-era session what resources/subscribe and
// resources/unsubscribe, which the era removed, asked for: the SDK's
// session opens a subscriptions/listen stream for the URI (Subscribe) and
// closes it (Unsubscribe); the server's notifications/resources/updated
// arrive on it as they did on the session. So a 2025 agent's
// subscription to a resource of a 2026 server works as before. ok reports
// whether method was one of the two; the result is the empty one the
// removed methods had.
func subscribe2026(ctx context.Context, cs *mcp.ClientSession, method string, params json.RawMessage) (res json.RawMessage, ok bool, err error) {
	if method != "resources/subscribe" && method != "resources/unsubscribe" {
		return nil, false, nil
	}
	var p struct {
		URI string `json:"uri"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.URI == "" {
		return nil, true, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: method + ": params need a uri"}
	}
	if method == "resources/subscribe" {
		err = cs.Subscribe(ctx, &mcp.SubscribeParams{URI: p.URI})
	} else {
		err = cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: p.URI})
	}
	if err != nil {
		return nil, true, fmt.Errorf("%s as subscriptions/listen: %w", method, err)
	}
	return json.RawMessage(`{}`), true, nil
}

// legacyResult is a 2026-era server's complete result as a 2025-era one
// would have sent it: without resultType "complete" and without the
// server's serverInfo in _meta, members of the revision that every 2026
// result carries. The raw path relays a server's bytes to agents of both
// eras: a 2025-era agent gets what the server would have sent it on a
// 2025 session (the same tool through a server of both eras looks the same
// whatever era the gateway speaks to it), and a 2026-era agent's result is
// stamped with both again, the serverInfo being the gateway's. Any other
// result type (input_required) goes as sent: it is the input request
// relay's and the legacy shim's to read.
func legacyResult(res json.RawMessage) json.RawMessage {
	rt, ok, err := rawjson.MemberValue(res, "resultType")
	if err != nil || (ok && string(bytes.TrimSpace(rt)) != `"complete"`) {
		return res
	}
	out, _ := rawjson.RemoveMember(res, "resultType")
	meta, ok, err := rawjson.MemberValue(out, "_meta")
	if err != nil || !ok {
		return out
	}
	meta, removed := rawjson.RemoveMember(meta, mcp.MetaKeyServerInfo)
	if !removed {
		return out
	}
	if string(meta) == "{}" {
		out, _ = rawjson.RemoveMember(out, "_meta")
		return out
	}
	if b, err := rawjson.SetMember(out, "_meta", meta); err == nil {
		return b
	}
	return out
}

// requestName is what the Mcp-Name header of a 2026-era POST carries: the
// tool or prompt name, or the resource URI, of the request (the server's
// own, since the gateway's routing has translated it already).
func requestName(method string, params json.RawMessage) string {
	var p struct {
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	switch method {
	case "tools/call", "prompts/get":
		if json.Unmarshal(params, &p) == nil {
			return p.Name
		}
	case "resources/read":
		if json.Unmarshal(params, &p) == nil {
			return p.URI
		}
	}
	return ""
}
