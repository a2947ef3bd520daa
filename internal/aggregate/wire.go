package aggregate

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What the gateway relays stays the bytes the server or agent sent: Go SDK
// types would drop members they do not know (a tool's execution), add zero
// values (idempotentHint, ttlMs) and sort map keys (an elicitation form's
// fields). Only what routing needs is rewritten, member by member, with
// rawjson.SetMember.

// rawResult is a result the SDK server sends as the bytes it holds: the
// embedded ResultBase makes it an mcp.Result, and the SDK encodes results
// with encoding/json, which calls MarshalJSON (and compacts the bytes).
type rawResult struct {
	mcp.ResultBase
	raw json.RawMessage
	// stateless marks a result for a 2026-era agent (era.go): encoded with
	// resultType and with ResultBase's _meta (the SDK's serverInfo).
	stateless bool
	hint      *cacheHint // the caching hints of a stateless cacheable result (cache.go)
}

func (r *rawResult) MarshalJSON() ([]byte, error) {
	if r.stateless {
		return stamp(r.raw, r.Meta, r.hint), nil
	}
	return r.raw, nil
}

// ErrorJSON encodes a JSON-RPC error object for the transports that write
// answers themselves (the HTTP fast path, stdio mode's raw path), with its
// data when the data encodes, else code and message alone: an answer must
// go out whatever the error holds.
func ErrorJSON(e *jsonrpc.Error) json.RawMessage {
	b, err := json.Marshal(e)
	if err != nil {
		b, _ = json.Marshal(&jsonrpc.Error{Code: e.Code, Message: e.Message})
	}
	return b
}
