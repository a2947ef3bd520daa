package aggregate

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// handle answers the requests the merged server answers itself and passes
// the rest to next, the SDK's own handling.
func (g *Gateway) handle(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	switch r := req.(type) {
	case *mcp.ListToolsRequest:
		return g.listToolsOfView(r)
	case *mcp.CallToolRequest:
		return g.callToolOfView(ctx, r)
	case *mcp.ListPromptsRequest:
		return g.listPrompts(r)
	case *mcp.GetPromptRequest:
		return g.getPrompt(ctx, r)
	case *mcp.ListResourcesRequest:
		return g.listResources(r)
	case *mcp.ListResourceTemplatesRequest:
		return g.listResourceTemplates(r)
	case *mcp.ReadResourceRequest:
		return g.readResource(ctx, r)
	case *mcp.CompleteRequest:
		return g.complete(ctx, r)
	}
	res, err := next(ctx, method, req)
	if err == nil {
		res = g.advertise(res)
		if method == "logging/setLevel" {
			g.pushLogLevel(ctx, req)
		}
	}
	return res, err
}
