package aggregate

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// UpstreamCapabilities is what the gateway offers every server at
// initialize: each client capability an agent may have, so that a server
// offers what it has (a server may publish a tool only to clients with URL
// elicitation). Whether the agent a request goes to has it is checked per
// request (see ServeRequest).
func UpstreamCapabilities() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{
		RootsV2:     &mcp.RootCapabilities{ListChanged: true},
		Sampling:    &mcp.SamplingCapabilities{Context: &mcp.SamplingContextCapabilities{}, Tools: &mcp.SamplingToolsCapabilities{}},
		Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
	}
}

// ServeRequest returns the handler for a request server sends the gateway
// (sampling, elicitation, roots, and tasks/* about tasks an agent runs for
// it), or nil for one the SDK client answers (ping). The request goes to the agent session whose call the server is
// handling (see caller), as the bytes the server sent, and the agent's
// answer goes back as the bytes the agent sent.
func (g *Gateway) ServeRequest(server, method string) func(context.Context, json.RawMessage) (json.RawMessage, error) {
	switch method {
	case "sampling/createMessage", "elicitation/create":
		return func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
			feature, supports := inputFeature(method, params)
			return g.relayRequest(ctx, server, method, params, feature, supports)
		}
	case "roots/list":
		return func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
			return g.rootsRaw(ctx, server, params)
		}
	case "tasks/get", "tasks/result", "tasks/cancel":
		// About a task an agent runs for the server (clienttasks.go).
		return func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
			return g.clientTaskRequest(ctx, server, method, params)
		}
	case "tasks/list":
		return func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
			return g.clientTaskList(ctx, server)
		}
	}
	return nil
}

// relayRequest sends a server's request to the agent session that called
// it, after checking that the agent's client has the feature: otherwise
// the server gets an MCP error at once rather than a hang.
func (g *Gateway) relayRequest(ctx context.Context, server, method string, params json.RawMessage, feature string, supports func(*mcp.ClientCapabilities) bool) (json.RawMessage, error) {
	c, err := g.caller(server, feature, supports)
	if err != nil {
		return nil, err
	}
	defer c.hold()() // the agent is the one being waited on
	if taskAugmented(params) {
		return g.askTask(ctx, c, server, method, params)
	}
	return g.askCall(ctx, c, method, params)
}

// askCall sends a request to the agent session of call c, on the call's
// own stream, and returns its raw answer. It ends when ctx or the call
// does.
func (g *Gateway) askCall(ctx context.Context, c *call, method string, params json.RawMessage) (json.RawMessage, error) {
	if c.ask == nil {
		return g.ask(ctx, c.ctx, c.ss, method, params)
	}
	callCtx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	res, err := c.ask(callCtx, method, params)
	if err != nil {
		return nil, agentError(method, err)
	}
	return res, nil
}

// ask sends a request to an agent session on the stream of callCtx (a
// call's handler context; a request sent with another goes to the
// session's standalone stream) and returns its raw answer. It ends when
// either context does.
func (g *Gateway) ask(ctx, callCtx context.Context, ss *mcp.ServerSession, method string, params json.RawMessage) (json.RawMessage, error) {
	a := agentConnOf(ss)
	if a == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "mcp-gateway: cannot relay " + method + " with this SDK version"}
	}
	callCtx, cancel := context.WithCancel(callCtx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	res, err := a.request(callCtx, method, params)
	if err != nil {
		return nil, agentError(method, err)
	}
	return res, nil
}

// agentError is what the server gets when the agent's answer is an error:
// the agent's own JSON-RPC error as it is, else an internal error saying
// what went wrong on the way.
func agentError(method string, err error) error {
	if wire, ok := err.(*jsonrpc.Error); ok {
		return wire
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("mcp-gateway: %s to the agent: %v", method, err)}
}

// rootsWait bounds a roots/list asked outside any call, the wait for the
// session's standalone stream to open included: it travels on that
// stream, which a client may not open or read.
const rootsWait = 10 * time.Second

// rootsRaw answers a server's roots/list with the roots of the agent
// session whose call the server is handling, asked on that call's stream.
// Outside any call, the roots of the only agent session connected, when it
// has roots, asked once it can be (over HTTP, once its standalone stream
// is open, within rootsWait); otherwise (no session, several, one without
// roots or without a stream in time) the list is empty.
func (g *Gateway) rootsRaw(ctx context.Context, server string, params json.RawMessage) (json.RawMessage, error) {
	hasRoots := func(ss *mcp.ServerSession) bool {
		ip := ss.InitializeParams()
		return ip == nil || (ip.Capabilities != nil && ip.Capabilities.RootsV2 != nil)
	}
	empty := json.RawMessage(`{"roots":[]}`)
	if c, _ := g.calls.latest(server); c != nil && c.hasAgent() && c.ctx.Err() == nil {
		if ip := c.initializeParams(); ip != nil && (ip.Capabilities == nil || ip.Capabilities.RootsV2 == nil) {
			return empty, nil
		}
		return g.askCall(ctx, c, "roots/list", params)
	}
	var only *mcp.ServerSession
	n := 0
	for ss := range g.server.Sessions() {
		only = ss
		n++
	}
	if n != 1 || only.InitializeParams() == nil || !hasRoots(only) {
		return empty, nil
	}
	ctx, cancel := context.WithTimeout(ctx, rootsWait)
	defer cancel()
	if !g.awaitReachable(ctx, server, only) {
		return empty, nil // no stream to ask it on: a request would wait in vain
	}
	return g.ask(ctx, context.Background(), only, "roots/list", params)
}

// awaitReachable waits until session ss can be asked outside any call
// (see SetReachable), and reports whether it can before ctx ends. An HTTP
// agent opens its standalone stream a moment after its initialize; a
// server that asks for roots in that moment (server-everything does, on a
// timer of its own) must not be answered "no roots" by an agent that has
// some, or it reports the agent rootless.
func (g *Gateway) awaitReachable(ctx context.Context, server string, ss *mcp.ServerSession) bool {
	logged := false
	for {
		g.mu.Lock()
		reachable := g.reachable
		if g.reachWake == nil {
			g.reachWake = make(chan struct{})
		}
		wake := g.reachWake
		g.mu.Unlock()
		// wake is taken before the check, so a stream that opens after
		// the check closes the channel this waits on.
		if reachable == nil || reachable(ss) {
			return true
		}
		if !logged {
			logged = true
			g.log.Debug().Str("server", server).Str("session", ss.ID()).Msg("roots/list waits for the agent's standalone stream")
		}
		select {
		case <-wake:
		case <-ctx.Done():
			g.log.Debug().Str("server", server).Str("session", ss.ID()).Msg("roots/list answered empty: the agent's standalone stream did not open")
			return false
		}
	}
}

// SetReachable tells the gateway how to know whether an agent session can
// be sent a request outside any call (over HTTP: it holds a standalone GET
// stream open). Without it, every session can (stdio). Call it before
// serving.
func (g *Gateway) SetReachable(f func(*mcp.ServerSession) bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reachable = f
}
