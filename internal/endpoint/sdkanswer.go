package endpoint

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
)

// answerWriter sends the SDK's answer to a single request as one write.
//
// The SDK answers a request on an SSE stream: it writes each event and
// flushes it, so the answer goes out chunked, and net/http writes the
// closing chunk in a second system call once the handler returns. When the
// first event of the stream is the answer itself (the call sent nothing
// before it: no progress, no request to the agent), the stream is complete
// with that event (the SDK ends a stream once every request it carries is
// answered). Then the event is sent with a Content-Length: one write, no
// chunk framing. Anything else (a notification or request first, an event
// that does not start as the SDK writes an answer to this id) streams as
// the SDK wrote it.
type answerWriter struct {
	http.ResponseWriter
	prefix  []byte // the start of the event that answers the request
	started bool   // a write or a status went through: headers are out
}

// newAnswerWriter wraps w for the SDK's answer to the request with this
// id (as the client sent it).
func newAnswerWriter(w http.ResponseWriter, id json.RawMessage) *answerWriter {
	p := make([]byte, 0, len(answerPrefix)+len(id))
	p = append(append(p, answerPrefix...), id...)
	return &answerWriter{ResponseWriter: w, prefix: p}
}

// answerPrefix is how the SDK (go-sdk v1.8.0 writeEvent, jsonrpc2's wire
// encoding) starts an SSE event holding a JSON-RPC response, up to its id.
const answerPrefix = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"

func (w *answerWriter) WriteHeader(code int) {
	w.started = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *answerWriter) Write(p []byte) (int, error) {
	if !w.started {
		w.started = true
		if w.isAnswer(p) {
			w.Header().Set("Content-Length", strconv.Itoa(len(p)))
		}
	}
	return w.ResponseWriter.Write(p)
}

// isAnswer reports whether p is one whole SSE event answering the request.
func (w *answerWriter) isAnswer(p []byte) bool {
	rest, ok := bytes.CutPrefix(p, w.prefix)
	if !ok || !bytes.HasSuffix(rest, []byte("}\n\n")) {
		return false
	}
	return bytes.HasPrefix(rest, []byte(`,"result":`)) || bytes.HasPrefix(rest, []byte(`,"error":`))
}

// Flush and Unwrap keep SSE streaming (http.ResponseController) working.
func (w *answerWriter) Flush() {
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *answerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
