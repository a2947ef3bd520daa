package stdioserve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// statelessRevision is the first protocol revision without initialize: its
// requests carry the client's version and capabilities in _meta, and every
// result must say its resultType.
const statelessRevision = "2026-07-28"

// metaProtocolVersion is the _meta key that makes a request a
// stateless-revision one.
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// SupportsProtocolVersion implements mcp.ProtocolVersionSupporter. Stdio mode
// serves the 2025 era only: the SDK would serve a stateless request, but the
// gateway's answers (the raw path's above all) lack what that revision
// requires, so a client that believed server/discover would fail on every
// result. With this the SDK's server/discover lists only the 2025-era
// versions, and a client that probes falls back to initialize.
func (t *Transport) SupportsProtocolVersion(version string) bool {
	return version < statelessRevision && slices.Contains(mcp.SupportedProtocolVersions(), version)
}

// legacyVersions are the versions stdio mode serves, newest first.
func legacyVersions() []string {
	return slices.DeleteFunc(mcp.SupportedProtocolVersions(), func(v string) bool { return v >= statelessRevision })
}

// statelessRefusal is the answer to a call made in the stateless revision
// or a later one, which stdio mode does not serve: -32022 naming the versions
// it does, as the SDK's stateful HTTP server answers. server/discover is let
// through (the SDK answers it with the versions SupportsProtocolVersion
// allows: the way a client learns to fall back). nil: not such a call.
func statelessRefusal(req *jsonrpc.Request) *jsonrpc.Response {
	if !req.IsCall() || req.Method == "server/discover" || !bytes.Contains(req.Params, []byte(metaProtocolVersion)) {
		return nil
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return nil // the SDK answers malformed params
	}
	var version string
	if json.Unmarshal(p.Meta[metaProtocolVersion], &version) != nil || version < statelessRevision {
		return nil
	}
	data, err := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: legacyVersions(), Requested: version})
	if err != nil {
		return nil
	}
	return &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{
		Code:    mcp.CodeUnsupportedProtocolVersion,
		Message: fmt.Sprintf("protocol version %q is not served in stdio mode; initialize with one of the supported versions", version),
		Data:    data,
	}}
}
