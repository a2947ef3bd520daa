// Package rawjson edits JSON objects as bytes: it replaces, adds or
// deletes top-level members and leaves every other byte as it was.
//
// The gateway relays what servers and agents send as the bytes they sent.
// Decoding into Go types and encoding again would drop members the types
// do not know (a tool's execution), add zero values (idempotentHint, ttlMs)
// and sort map keys (an elicitation form's fields). Routing still has to
// change a few members (the routed tool or prompt name, a server's URI, a
// progress token of the gateway's, a log message's logger), so it changes
// those, member by member:
//
//	params, err := rawjson.SetString(params, "name", routed)
//	meta, err := rawjson.SetString(meta, "progressToken", mine)
//	params, err = rawjson.SetMember(params, "_meta", meta)
//	meta, err = rawjson.DeleteMembers(meta, "io.modelcontextprotocol/clientInfo")
//
// These run on every forwarded request that needs a rewrite, so they read
// the object with a scanner of their own (scan.go) instead of
// encoding/json's Decoder, and leave what the scanner does not take (a key
// written with escapes, invalid JSON, nesting deeper than it follows) to a
// Decoder-based slow path (slow.go), whose answer and error are theirs. A
// fuzz target (FuzzRawJSON) holds both to what the edits promise, read
// back with encoding/json (not to a second implementation of the edits):
// the member set, every other byte kept, and an error exactly when
// encoding/json reads no object.
//
// EncodeList and ItemsOf build and read one page of an MCP list result.
//
// The package is a leaf: pure functions over bytes, importing only the
// standard library, safe for concurrent use.
package rawjson
