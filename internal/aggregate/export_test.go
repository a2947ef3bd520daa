package aggregate

import "github.com/modelcontextprotocol/go-sdk/mcp"

// UpstreamLogLevel is the level the gateway last set on the servers that
// log (for tests of the package's own, outside it).
func (g *Gateway) UpstreamLogLevel() mcp.LoggingLevel {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.upLevel
}

// Subscribed returns the server's original URIs the gateway would
// subscribe again after the server restarts.
func (g *Gateway) Subscribed(server string) []string { return g.subs.of(server) }
