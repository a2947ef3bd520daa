package aggregate

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// NewClient returns the MCP client the gateway uses to talk to server. Its
// handlers carry the server's name, so that a notification from an upstream
// updates that server's part of the merged view.
func (g *Gateway) NewClient(server string) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "mcp-gateway", Version: g.version}, &mcp.ClientOptions{
		ToolListChangedHandler: func(ctx context.Context, req *mcp.ToolListChangedRequest) {
			// Re-list off the notification goroutine: the SDK handles an
			// upstream's notifications one at a time.
			cs := req.Session
			go func() {
				if err := g.Sync(context.Background(), server, cs); err != nil {
					g.log.Warn().Err(err).Str("server", server).Msg("re-list tools after list_changed")
				}
			}()
		},
	})
}
