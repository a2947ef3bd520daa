package stdioserve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// statelessRevision is the first protocol revision without initialize: its
// requests carry the client's version and capabilities in _meta, and every
// result must say its resultType.
const statelessRevision = "2026-07-28"

// metaProtocolVersion is the _meta key that makes a request a
// stateless-revision one.
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// claimedVersion returns the protocol version a request's params claim in
// _meta; claimed is false when they claim none (a cheap look first: every
// request passes here).
func claimedVersion(params json.RawMessage) (version string, claimed bool) {
	if !bytes.Contains(params, []byte(metaProtocolVersion)) {
		return "", false
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return "", false // the SDK answers malformed params
	}
	raw, ok := p.Meta[metaProtocolVersion]
	if !ok {
		return "", false
	}
	if json.Unmarshal(raw, &version) != nil {
		return "", true
	}
	return version, true
}

// isStateless reports whether req is a 2026-era request (the envelope rule).
func isStateless(req *jsonrpc.Request) bool {
	v, ok := claimedVersion(req.Params)
	return ok && v >= statelessRevision
}

// statelessRefusal is the answer to a call whose _meta claims a protocol
// version neither era has (1900-01-01 included, which the SDK would take
// for a 2025-era request and serve): -32022 naming every version served,
// both eras', newest first. nil: not such a call.
func statelessRefusal(req *jsonrpc.Request) *jsonrpc.Response {
	if !req.IsCall() {
		return nil
	}
	version, claimed := claimedVersion(req.Params)
	if !claimed || slices.Contains(mcp.SupportedProtocolVersions(), version) {
		return nil
	}
	data, err := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: mcp.SupportedProtocolVersions(), Requested: version})
	if err != nil {
		return nil
	}
	return &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{
		Code:    mcp.CodeUnsupportedProtocolVersion,
		Message: fmt.Sprintf("protocol version %q is not supported; supported: 2026-07-28 (no initialize) and the 2025 era (initialize)", version),
		Data:    data,
	}}
}

// SupportsProtocolVersion implements mcp.ProtocolVersionSupporter: stdio
// mode serves every version the SDK knows, both eras (server/discover lists
// them all).
func (t *Transport) SupportsProtocolVersion(version string) bool {
	return slices.Contains(mcp.SupportedProtocolVersions(), version)
}
