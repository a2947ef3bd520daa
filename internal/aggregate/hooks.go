package aggregate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/intercept"
	"github.com/mcp-gateway/mcp-gateway/internal/rawjson"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// The interceptors (Options.Interceptors) run at three points: a server's
// tools listing, before it is named (visibleTools: a hidden tool never
// takes a name, is never offered, and a call to it fails as a call to an
// unknown tool), and around tools/call on both paths (callToolHooked from
// callTool, callToolRawHooked from Send). A call no interceptor
// applies to takes neither: one nil check, or one scope match per
// interceptor.

// visibleTools returns the tools of server the interceptors let agents see.
func (g *Gateway) visibleTools(ctx context.Context, server string, tools []*mcp.Tool) []*mcp.Tool {
	if g.icpt == nil {
		return tools
	}
	return g.icpt.Visible(ctx, server, tools)
}

// hooked reports whether interceptors apply to a call of server's tool.
func (g *Gateway) hooked(server, tool string) bool {
	return g.icpt != nil && g.icpt.Applies(server, tool)
}

// runHooks runs the interceptor chain around next and returns the result,
// the audit's account of what interceptors did, and an error as the agent
// sees it (an interceptor's failure names the interceptor).
func (g *Gateway) runHooks(ctx context.Context, c *intercept.Call, next intercept.Next) (json.RawMessage, string, error) {
	res, trace, passed, err := g.icpt.Call(ctx, c, next)
	telemetry.Decisions(ctx, trace)
	telemetry.Passes(ctx, passed)
	if err != nil {
		var wire *jsonrpc.Error
		if !errors.As(err, &wire) {
			err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
	}
	return res, strings.Join(trace, ","), err
}

// callToolRawHooked is the path of a raw call (Send, or callTool
// with the agent's params) that interceptors apply to. params are the
// call's params as forwarded (the agent's, with the routed name and the
// gateway's progress token); args are the agent's arguments. Of what the
// chain leaves, only the arguments, when an interceptor changed them, are
// set in params: every other member goes on as the agent sent it.
func (g *Gateway) callToolRawHooked(ctx context.Context, fc *call, up RawCaller, r route, exported string,
	args, params json.RawMessage) (json.RawMessage, string, error) {
	server := r.up.Name()
	c := &intercept.Call{Server: server, Tool: r.name, ExportedTool: exported, Session: fc.sessionID(), Arguments: args}
	return g.runHooks(ctx, c, func(ctx context.Context, out json.RawMessage) (json.RawMessage, error) {
		sent, err := withHookedArgs(params, args, out)
		if err != nil {
			return nil, err
		}
		res, err := g.callRaw(ctx, fc, up, "tools/call", sent)
		if err == nil && (len(res) == 0 || res[0] != '{') {
			err = errors.New("tools/call result is not an object")
		}
		if err != nil {
			return nil, serverError(server, err)
		}
		return res, nil
	})
}

// withHookedArgs returns params with the arguments the interceptor chain
// left (out) in place of the agent's (args), and params untouched when the
// chain changed nothing, so that every other member goes on as sent.
func withHookedArgs(params, args, out json.RawMessage) (json.RawMessage, error) {
	if bytes.Equal(out, args) {
		return params, nil
	}
	if len(out) == 0 {
		out = json.RawMessage("{}")
	}
	return rawjson.SetMember(params, "arguments", out)
}

// callToolHooked is callTool's path for a call interceptors apply to: the
// server's result goes through the chain as JSON and comes back typed.
func (g *Gateway) callToolHooked(ctx context.Context, req *mcp.CallToolRequest, r route, args json.RawMessage,
	call func(ctx context.Context, args any) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, string, error) {
	c := &intercept.Call{Server: r.up.Name(), Tool: r.name, ExportedTool: req.Params.Name, Arguments: args}
	if req.Session != nil {
		c.Session = req.Session.ID()
	}
	raw, trace, err := g.runHooks(ctx, c, func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		var a any
		if len(args) > 0 {
			a = args
		}
		res, err := call(ctx, a)
		if err != nil {
			return nil, err
		}
		return json.Marshal(res)
	})
	if err != nil {
		return nil, trace, err
	}
	res := new(mcp.CallToolResult)
	if err := json.Unmarshal(raw, res); err != nil {
		return nil, trace, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "interceptors left an invalid result: " + err.Error()}
	}
	return res, trace, nil
}
