package aggregate

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/rawjson"
)

// StatelessRevision is the first protocol revision without initialize: its
// requests carry the client's version and capabilities in _meta, and every
// result must say its resultType. Versions compare as strings (dates).
const StatelessRevision = statelessRevision

// metaProtocolVersion is the _meta key by which a request claims its
// protocol version (the revision's envelope).
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// ClaimedVersion returns the protocol version a request's params claim in
// _meta; claimed is false when they claim none. Both edges (HTTP and stdio)
// tell the eras apart by it, as the SDKs do: no claim means 2025 era. Every
// request passes here, so a byte search for the key comes first, and the
// members are found by scanning, without decoding the params.
func ClaimedVersion(params json.RawMessage) (version string, claimed bool) {
	if !bytes.Contains(params, []byte(metaProtocolVersion)) {
		return "", false
	}
	meta, ok, err := rawjson.MemberValue(params, "_meta")
	if err != nil || !ok {
		return "", false // the SDK answers malformed params
	}
	raw, ok, err := rawjson.MemberValue(meta, metaProtocolVersion)
	if err != nil || !ok {
		return "", false
	}
	if json.Unmarshal(raw, &version) != nil {
		return "", true // not a string: no version the gateway speaks
	}
	return version, true
}

// UnsupportedVersion is -32022 with the versions of both eras, newest
// first, as the revision's versioning page asks: the client picks one.
func UnsupportedVersion(requested string) *jsonrpc.Error {
	data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: mcp.SupportedProtocolVersions(), Requested: requested})
	return &jsonrpc.Error{
		Code: mcp.CodeUnsupportedProtocolVersion,
		Message: fmt.Sprintf("protocol version %q is not supported; supported: %s (stateless, no initialize) and the 2025 era (initialize)",
			requested, StatelessRevision),
		Data: data,
	}
}
