package stdioserve

import (
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
)

// Stdio mode serves both protocol eras. A connection that opens with
// initialize is a 2025-era one, as before; one that opens with a
// server/discover naming 2026-07-28 in its _meta is a 2026-era one (the
// TypeScript SDK's serveStdio model): every request carries its _meta, the
// SDK's session takes the client's version and capabilities from the
// discover, and the aggregate stamps each result for the revision
// (resultType, serverInfo, caching hints). A 2026-era request never takes
// the raw path (rawpath.go), whose answers are the server's bytes as they
// came: it goes through the SDK, where the aggregate stamps it.

// isStateless reports whether req is a 2026-era request (the envelope rule).
func isStateless(req *jsonrpc.Request) bool {
	v, ok := aggregate.ClaimedVersion(req.Params)
	return ok && v >= aggregate.StatelessRevision
}

// statelessRefusal is the answer to a call whose _meta claims a protocol
// version neither era has (1900-01-01 included, which the SDK would take
// for a 2025-era request and serve): -32022 naming every version served,
// both eras', newest first. nil: not such a call.
func statelessRefusal(req *jsonrpc.Request) *jsonrpc.Response {
	if !req.IsCall() {
		return nil
	}
	version, claimed := aggregate.ClaimedVersion(req.Params)
	if !claimed || slices.Contains(mcp.SupportedProtocolVersions(), version) {
		return nil
	}
	return &jsonrpc.Response{ID: req.ID, Error: aggregate.UnsupportedVersion(version)}
}

// SupportsProtocolVersion implements mcp.ProtocolVersionSupporter: stdio
// mode serves every version the SDK knows, both eras (server/discover lists
// them all).
func (t *Transport) SupportsProtocolVersion(version string) bool {
	return slices.Contains(mcp.SupportedProtocolVersions(), version)
}
