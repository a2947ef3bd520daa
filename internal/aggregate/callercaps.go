package aggregate

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/supervisor"
)

// Per-request capabilities toward 2026-era servers. A 2025-era server has
// one session for all agents, initialized with the gateway's capabilities
// (every feature an agent may have), so it shows and asks every agent the
// same. A 2026-era server reads the client's capabilities and log level
// from each request's _meta; the gateway puts there the calling agent's
// own (a 2025 agent's from its initialize, a 2026 agent's from its
// request's _meta), so that the server shows and asks each agent what it
// would directly, and refuses (-32021) what the agent could not answer.
//
// The legacy shim keeps its own check (an input request the 2025 agent did
// not declare the capability for): a server that does not check, or a call
// without an agent, still reaches it. A server that does check refuses the
// call before asking; legacyRefusal turns that refusal into the shim's
// answer, in the 2025 agent's terms.

// withCaller returns ctx carrying the capabilities and log level of c's
// agent for the supervisor's raw requests to 2026-era servers. They are
// computed only when such a request is sent (supervisor.WithCaller), never
// for a 2025-era server. A 2026 agent's request carries its own
// capabilities in _meta already (envelopeKeys keeps them), which the
// supervisor leaves as they are.
func (g *Gateway) withCaller(ctx context.Context, c *call) context.Context {
	if c == nil || c.ss == nil {
		return ctx
	}
	ss := c.ss
	return supervisor.WithCaller(ctx, func() (json.RawMessage, string) {
		return g.callerOf(ss)
	})
}

// callerOf returns the capabilities (2026 form) and log level of the agent
// behind ss: from its initialize (or, for a 2026 agent, the _meta the SDK
// made its session of) and its logging/setLevel (or its request's _meta
// level). nil caps or "" leave the supervisor's default (the gateway's
// capabilities; debug, which the gateway filters per agent as for a 2025
// server).
func (g *Gateway) callerOf(ss *mcp.ServerSession) (caps json.RawMessage, level string) {
	if ip := ss.InitializeParams(); ip != nil && ip.Capabilities != nil {
		caps = capabilities2026(ip.Capabilities)
	}
	g.mu.Lock()
	level = string(g.levels[ss])
	g.mu.Unlock()
	return caps, level
}

// capabilities2026 encodes caps as a 2026 request's _meta declares them:
// roots only when the client declared roots (the SDK's ClientCapabilities
// always encodes its legacy Roots member, which would declare roots for
// every 2025 agent). nil when caps cannot be encoded: the gateway's own
// then go.
func capabilities2026(caps *mcp.ClientCapabilities) json.RawMessage {
	b, err := json.Marshal(caps)
	if err != nil {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	delete(m, "roots")
	if caps.RootsV2 != nil {
		r, err := json.Marshal(caps.RootsV2)
		if err != nil {
			return nil
		}
		m["roots"] = r
	}
	out, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return out
}

// legacyRefusal is the answer to a 2025 agent's request that the server
// refused for a capability the agent did not declare (-32021, which a 2025
// client does not know): the legacy shim's own answer to an input request
// the agent cannot take (shimFailure), so that the agent sees the same
// whether the server or the shim found the capability missing. Every other
// failure goes back as it came.
func legacyRefusal(method string, res json.RawMessage, err error) (json.RawMessage, error) {
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != mcp.CodeMissingRequiredClientCapabilities {
		return res, err
	}
	return shimFailure(method, rpcErr.Code, "the server needs a capability this client did not declare: "+rpcErr.Message)
}
