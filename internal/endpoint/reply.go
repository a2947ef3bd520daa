package endpoint

import (
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
)

// Writing the fast path's answers.

// noTakeover hides the lane's takeover from a response (offerResponse).
type noTakeover struct{ http.ResponseWriter }

// canFlush reports whether the writer under w can flush, as a stream
// needs: the lane records whole responses and cannot (the wrappers above
// it may still have a Flush method).
func canFlush(w http.ResponseWriter) bool {
	for {
		if _, ok := w.(*laneRecorder); ok {
			return false
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			_, ok := w.(http.Flusher) // net/http's own writer
			return ok
		}
		w = u.Unwrap()
	}
}

// writeError writes a JSON-RPC error response, data included, as the SDK
// path would (with status 200: the request itself was fine).
func writeError(w http.ResponseWriter, id json.RawMessage, e *jsonrpc.Error) {
	writeResponse(w, id, "error", aggregate.ErrorJSON(e))
}

// writeResult writes a JSON-RPC response with a raw result.
func writeResult(w http.ResponseWriter, id, result json.RawMessage) {
	writeResponse(w, id, "result", result)
}

// writeResponse writes a JSON-RPC response whose member ("result" or
// "error") holds raw.
func writeResponse(w http.ResponseWriter, id json.RawMessage, member string, raw json.RawMessage) {
	out := make([]byte, 0, len(raw)+len(id)+40)
	out = append(appendMessage(out, id, member, raw), '\n')
	writeWhole(w, out)
}

// appendMessage appends a JSON-RPC response whose member ("result" or
// "error") holds raw.
func appendMessage(b []byte, id json.RawMessage, member string, raw json.RawMessage) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"`...)
	b = append(b, member...)
	b = append(b, `":`...)
	b = append(b, raw...)
	return append(b, '}')
}

// writeWhole writes a complete JSON body (status 200), to the lane's
// writer when there is one (lane.go).
func writeWhole(w http.ResponseWriter, body []byte) {
	if !offerResponse(w, body) {
		writeJSON(w, http.StatusOK, body)
	}
}
