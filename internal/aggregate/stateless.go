package aggregate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	fastjson "github.com/segmentio/encoding/json"

	"github.com/mcp-gateway/mcp-gateway/internal/jsonlimit"
	"github.com/mcp-gateway/mcp-gateway/internal/rawjson"
)

// The raw path for a 2026-era agent's tools/call, which has no session. On
// the SDK path such a call costs three to four times a 2025 session's call
// on the raw path: the SDK's stateless handler opens a session and a
// JSON-RPC connection for the request alone, decodes the request whole into
// its types (the _meta envelope into maps), and frames the answer as an SSE
// stream. RouteStateless and SendStateless do what that path does, for the
// plain case, on the request's bytes:
//
//   - RouteStateless reads the request as Route does, and its envelope as
//     the SDK's validateRequestMeta reads it. It declines anything but the
//     plain case, so that the SDK path answers the rest, every error
//     included: the envelope's version (and the header's) this revision, the
//     capabilities and client info what the SDK accepts, no log level (its
//     messages would have to reach the request), no task (nor a call that
//     may run as one of the tasks extension's: mayRunAsTask), and no retry
//     (requestState, inputResponses: the pending table's resume on the SDK
//     path, or a 2026 server's own round).
//   - SendStateless sends it as handleStateless does: through the pending
//     table (pending.go), so that a 2025-era server's sampling, elicitation
//     or roots request during the call becomes the same InputRequiredResult,
//     whose retry the SDK path resumes; the params without the envelope, as
//     rawParams gives them; the call made for the agent's declared
//     capabilities (call.agent) wherever the SDK path reads those of the
//     session it opened; and the answer stamped as stampedResult and the SDK
//     stamp it (resultType, the gateway's serverInfo), so that it is the
//     SDK path's answer byte for byte.

// StatelessCall is a 2026-era agent's tools/call as RouteStateless read
// it. The zero value routes nowhere.
type StatelessCall struct {
	f Forward
	// agent is what the request's _meta declares, as the SDK makes the
	// InitializeParams of the session it opens for the request.
	agent *mcp.InitializeParams
}

// MayStream reports whether the call could send the agent anything on the
// request's own response (its progress): the caller may keep such a
// client's connection where it can stream.
func (s *StatelessCall) MayStream() bool { return s.f.token != nil }

// RouteStateless reads a 2026-era tools/call and decides where it goes, as
// Route does for a session's. version is the request's
// MCP-Protocol-Version header and name its Mcp-Name header (the caller
// checks the others: Mcp-Method, Accept, Host); stream is as for Route. It
// sends nothing; ok false leaves the request to the SDK path.
func (g *Gateway) RouteStateless(params json.RawMessage, version, name string, stream bool) (s StatelessCall, ok bool) {
	if version != statelessRevision || !jsonlimit.DepthWithin(params, jsonlimit.MaxDepth) {
		return s, false
	}
	// Read once: the call's params, and whether it is a retry or a task,
	// which the SDK path serves.
	var p struct {
		callParams
		RequestState   json.RawMessage `json:"requestState"`
		InputResponses json.RawMessage `json:"inputResponses"`
		Task           json.RawMessage `json:"task"`
	}
	if !g.decode(params, &p) || p.RequestState != nil || p.InputResponses != nil || p.Task != nil {
		return s, false
	}
	s.f.method = "tools/call"
	if !g.routeDecoded(&s.f, params, &p.callParams, stream) || s.f.name != name || g.mayRunAsTask(s.f.tool) {
		return s, false
	}
	if s.agent, ok = g.sl.envelopeOf(p.Meta, version); !ok {
		return s, false
	}
	// The params as the SDK path forwards them (rawParams): without the
	// envelope, which a 2025-era server would misread and a 2026-era one
	// gets from the supervisor as the gateway's. A progress token's _meta
	// is that _meta, so that mapping the token keeps it out.
	s.f.params, p.Meta = withoutEnvelopeIn(bytes.TrimSpace(params), p.Meta)
	if s.f.token != nil {
		s.f.meta = p.Meta
	}
	return s, true
}

// capabilitiesV2 is how a 2026-era request's _meta declares the client's
// capabilities (the SDK's clientCapabilitiesV2): roots as a pointer.
type capabilitiesV2 struct {
	mcp.ClientCapabilities
	Roots *mcp.RootCapabilities `json:"roots,omitempty"`
}

// statelessShared is what a gateway's 2026-era calls share: the _meta of
// their results, and the agents their envelopes declare.
type statelessShared struct {
	infoMeta json.RawMessage // the _meta of a 2026-era result: serverInfoMeta

	// agents maps an envelope's capabilities and client info, as bytes,
	// to what envelopeOf made of them: an agent sends the same ones with
	// every request, and decoding them is most of reading one. Emptied
	// when full (any number of agents may come); its values are never
	// changed, only read (call.initializeParams).
	mu     sync.Mutex
	agents map[string]*mcp.InitializeParams
}

// maxAgents bounds statelessShared.agents.
const maxAgents = 256

// envelopeOf reads a 2026-era request's _meta as the SDK's
// validateRequestMeta does, and returns the InitializeParams the SDK would
// give the request's session; ok is false for anything but the plain case
// (the protocol version exactly version, capabilities an object and client
// info absent or an object, each decoding as the SDK decodes it, and no
// log level), whose answer is the SDK path's to give.
func (sl *statelessShared) envelopeOf(meta json.RawMessage, version string) (*mcp.InitializeParams, bool) {
	meta = bytes.TrimSpace(meta)
	if len(meta) == 0 || meta[0] != '{' {
		return nil, false
	}
	var m struct {
		Version json.RawMessage `json:"io.modelcontextprotocol/protocolVersion"`
		Caps    json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
		Info    json.RawMessage `json:"io.modelcontextprotocol/clientInfo"`
		Level   json.RawMessage `json:"io.modelcontextprotocol/logLevel"`
	}
	if !decodeWhole(meta, &m) || string(m.Version) != `"`+version+`"` || m.Level != nil {
		return nil, false
	}
	// The key: the capabilities' bytes, then the info's (absent: none),
	// told apart by the length of the first.
	var buf [512]byte
	key := strconv.AppendInt(buf[:0], int64(len(m.Caps)), 10)
	key = append(append(append(key, ':'), m.Caps...), m.Info...)
	sl.mu.Lock()
	ip, found := sl.agents[string(key)]
	sl.mu.Unlock()
	if found {
		return ip, true
	}
	ip, ok := agentOf(m.Caps, m.Info, version)
	if !ok {
		return nil, false
	}
	sl.mu.Lock()
	if sl.agents == nil || len(sl.agents) >= maxAgents {
		sl.agents = make(map[string]*mcp.InitializeParams)
	}
	sl.agents[string(key)] = ip
	sl.mu.Unlock()
	return ip, true
}

// agentOf decodes an envelope's capabilities and client info (nil:
// absent) as envelopeOf says.
func agentOf(capsRaw, infoRaw json.RawMessage, version string) (*mcp.InitializeParams, bool) {
	var caps capabilitiesV2
	if !isObject(capsRaw) || !decodeWhole(capsRaw, &caps) {
		return nil, false
	}
	ip := &mcp.InitializeParams{ProtocolVersion: version, Capabilities: &caps.ClientCapabilities}
	// As the SDK's clientCapabilitiesV2.toV1.
	ip.Capabilities.RootsV2 = caps.Roots
	if caps.Roots != nil {
		ip.Capabilities.Roots = *caps.Roots
	}
	if infoRaw != nil {
		var info mcp.Implementation
		if !isObject(infoRaw) || !decodeWhole(infoRaw, &info) {
			return nil, false
		}
		ip.ClientInfo = &info
	}
	return ip, true
}

// decodeWhole decodes b into v as the SDK decodes (member names matched
// exactly), reporting whether all of b was read.
func decodeWhole(b json.RawMessage, v any) bool {
	rest, err := fastjson.Parse(b, v, fastjson.DontMatchCaseInsensitiveStructFields)
	return err == nil && len(bytes.TrimSpace(rest)) == 0
}

// isObject reports whether b is (the start of) a JSON object.
func isObject(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{'
}

// statelessAgentKey carries the agent of a SendStateless call, for the
// calls it begins (inflight.beginNotify).
type statelessAgentKey struct{}

// statelessAgentOf returns the session-less agent ctx carries, or nil.
func statelessAgentOf(ctx context.Context) *mcp.InitializeParams {
	ip, _ := ctx.Value(statelessAgentKey{}).(*mcp.InitializeParams)
	return ip
}

// SendStateless forwards s, as RouteStateless routed it, and returns the
// answer the SDK path gives the request (see the top of this file): the
// server's result with resultType and the gateway's serverInfo, or an
// InputRequiredResult (a 2026-era server's own, passed on as sent, or the
// pending table's for a 2025-era server that asked for input). With notify
// set (the caller can stream), the call's progress goes through it, each
// before the answer. It returns ErrNeedsSession, having sent nothing, when
// the params cannot be rewritten for the server.
func (g *Gateway) SendStateless(ctx context.Context, s *StatelessCall, notify Notify) (json.RawMessage, error) {
	ctx = context.WithValue(ctx, statelessAgentKey{}, s.agent)
	if !mayBeAsked(s.agent) {
		return g.sendDirect(ctx, s, notify)
	}
	res, err := g.pending.start(ctx, func(ctx context.Context) (mcp.Result, error) {
		b, err := g.Send(ctx, nil, &s.f, notify, nil)
		if err != nil {
			return nil, err
		}
		return typedInputRequired(&rawResult{raw: b}), nil
	})
	if err != nil {
		return nil, err
	}
	r, ok := res.(*rawResult)
	if !ok || r == nil {
		return nil, fmt.Errorf("tools/call: unexpected result %T", res) // cannot happen: both kinds are raw
	}
	return g.stampComplete(r.raw), nil
}

// mayBeAsked reports whether a 2025-era server's request during the call
// of an agent that declared agent could reach the agent: sampling,
// elicitation or roots declared. For any other agent the gateway answers
// such a request itself (caller refuses sampling and elicitation, rootsRaw
// gives no roots) and never asks, so its call needs no pending call.
func mayBeAsked(agent *mcp.InitializeParams) bool {
	c := agent.Capabilities
	return c == nil || c.Sampling != nil || c.Elicitation != nil || c.RootsV2 != nil
}

// sendDirect is SendStateless for an agent that cannot be asked anything:
// the call on the request's own goroutine, without the pending call's
// goroutine and wake-ups, ended after pendingTTL as a pending call is, and
// when the agent goes away (a pending call that never waited for input is
// cancelled then too).
func (g *Gateway) sendDirect(ctx context.Context, s *StatelessCall, notify Notify) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, pendingTTL)
	defer cancel()
	b, err := g.Send(ctx, nil, &s.f, notify, nil)
	if err != nil {
		return nil, err
	}
	r, ok := typedInputRequired(&rawResult{raw: b}).(*rawResult)
	if !ok || r == nil {
		return nil, fmt.Errorf("tools/call: unexpected result") // cannot happen: it is raw
	}
	return g.stampComplete(r.raw), nil
}

// stampComplete is stamp(raw, {serverInfo: the gateway's}, nil), as the
// SDK path stamps a 2026-era request's result (annotateServerInfo, then
// rawResult's MarshalJSON): the gateway's serverInfo over the server's own.
// A result without _meta (most) gets the _meta encoded once, in New
// (infoMeta); the bytes are stamp's.
func (g *Gateway) stampComplete(raw json.RawMessage) json.RawMessage {
	if len(g.sl.infoMeta) > 0 {
		// One scan and one copy for both members (setAbsent, then
		// SetMember of a _meta the result lacks).
		out, had, err := rawjson.AppendAbsent(raw,
			rawjson.Member{Key: "resultType", Value: json.RawMessage(`"complete"`)},
			rawjson.Member{Key: "_meta", Value: g.sl.infoMeta})
		if err == nil && had&2 == 0 {
			return out
		}
	}
	return stamp(raw, mcp.Meta{mcp.MetaKeyServerInfo: g.serverInfo()}, nil)
}

// serverInfoMeta encodes the _meta stamp gives a result that has none: the
// gateway's serverInfo alone, encoded as stamp encodes it. nil if it does
// not encode (stamp then runs in full).
func serverInfoMeta(info *mcp.Implementation) json.RawMessage {
	b, err := json.Marshal(info)
	if err != nil {
		return nil
	}
	m, err := json.Marshal(map[string]json.RawMessage{mcp.MetaKeyServerInfo: b})
	if err != nil {
		return nil
	}
	return m
}

// serverInfo is the merged server's implementation, as it names itself to
// agents.
func (g *Gateway) serverInfo() *mcp.Implementation {
	return &mcp.Implementation{Name: "mcp-gateway", Version: g.version}
}
