package endpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	fastjson "github.com/segmentio/encoding/json"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/jsonlimit"
)

// rpcGuard stands in front of the SDK's streamable HTTP handler and makes
// every refusal of a POST a JSON-RPC error with the right code:
//
//   - it reads the body itself, within the body size and time limits (413,
//     408), so a client cannot hold memory or a connection with a body;
//   - it answers malformed JSON with -32700 and messages that are not
//     JSON-RPC 2.0 with -32600 (the SDK says "malformed payload" in plain
//     text for both, and takes {"id":1.5} for id 1 and {"id":2} for a
//     response);
//   - it tells the protocol eras apart (era.go): a 2026-era request is
//     marked Stateless and needs no session; a version neither era has
//     gets -32022;
//   - it answers a 2025-era POST without Mcp-Session-Id that is not an
//     initialize request with 400 and -32000 (codeNoSession), as the
//     transport spec asks and the TypeScript SDK's server does;
//   - it turns the SDK's remaining plain-text 400s (unknown method, missing
//     params, id on a notification, ...) into JSON-RPC error bodies with
//     the request's id. Besides the code, this keeps clients working: the Go
//     SDK client treats a 4xx with a JSON-RPC error body as that call's
//     failure, but a plain-text 4xx as a broken connection.
//
// The checked message travels on in the request's context (messageOf), so
// the handlers after the guard need not parse the body again. Methods,
// sessions and everything after the envelope stay the SDK's. GET and DELETE
// pass through untouched.
type rpcGuard struct {
	limits Limits
	next   http.Handler
}

func (g rpcGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		g.next.ServeHTTP(w, r)
		return
	}
	body, err := g.limits.readBody(w, r)
	switch {
	case errors.Is(err, errBodyTooLarge):
		g.limits.refuseBody(w, r)
		return
	case errors.Is(err, errBodyTimeout):
		writeRPCError(w, http.StatusRequestTimeout, nil, jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("request body not received within %s (--body-timeout)", g.limits.withDefaults().BodyTimeout))
		return
	case err != nil:
		// The client went away mid-body; nobody reads the answer.
		writeRPCError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, err.Error())
		return
	}
	r.Body = http.NoBody
	if len(body) > 0 {
		r.Body = readCloser{bytes.NewReader(body)}
	}
	r.ContentLength = int64(len(body))
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		g.next.ServeHTTP(w, r) // the SDK answers 415
		return
	}
	msg, rpcErr := checkEnvelope(body)
	if rpcErr != nil {
		writeRPCError(w, http.StatusBadRequest, msg.ID, rpcErr.Code, rpcErr.Message)
		return
	}
	stateless, refusal := eraOf(r.Header, msg) // era.go
	if refusal != nil {
		writeErrorObject(w, http.StatusBadRequest, msg.ID, refusal)
		return
	}
	msg.Stateless = stateless
	if !stateless && r.Header.Get(sessionIDHeader) == "" && msg.Method != "initialize" {
		// The SDK would open a throwaway session for it and answer 200 with
		// an error of code 0 ("invalid during session initialization"), or
		// 202 for a notification that then goes nowhere.
		var id json.RawMessage // a response's id is not one of the client's requests
		if msg.Method != "" {
			id = msg.ID
		}
		writeRPCError(w, http.StatusBadRequest, id, codeNoSession,
			"Bad Request: Mcp-Session-Id header required (only initialize starts a session)")
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), rpcMessageKey{}, msg))
	rw := &rpcErrorWriter{ResponseWriter: w, id: msg.ID}
	g.next.ServeHTTP(rw, r)
	rw.finish()
}

// rpcMessage is a POST's body as checked by rpcGuard.
type rpcMessage struct {
	// ID is the id of a single request or response, nil for a
	// notification or a batch.
	ID     json.RawMessage
	Method string          // of a single request or notification
	Params json.RawMessage // of a single request or notification
	// Batch is the number of messages of a batch, 0 for a single message.
	Batch int
	// Calls is the number of requests (messages with a method and an id)
	// in the body: what the session will have in flight for it.
	Calls int
	// Subs are the resource subscriptions the body asks to make or end.
	Subs []subChange
	// Elems are the messages of a batch, in order, each with its Raw
	// bytes; nil for a single message.
	Elems []*rpcMessage
	// Raw is a batch element as sent (nil for a single message, whose
	// bytes are the body).
	Raw json.RawMessage
	// Stateless marks a 2026-era request (era.go): served without a
	// session by the stateless handler.
	Stateless bool
}

// subChange is a resources/subscribe (On) or resources/unsubscribe.
type subChange struct {
	URI string
	On  bool
}

// clientTraffic reports whether the message carries no request of the
// agent's: a notification or a response is traffic of the client library
// (notifications/initialized, cancellations, answers to the gateway's
// requests), not the agent using the session.
func (m *rpcMessage) clientTraffic() bool { return m.ID == nil }

type rpcMessageKey struct{}

// messageOf returns the message rpcGuard checked, or nil for a request that
// did not pass through it with a JSON-RPC body.
func messageOf(r *http.Request) *rpcMessage {
	m, _ := r.Context().Value(rpcMessageKey{}).(*rpcMessage)
	return m
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// checkEnvelope checks that body is one JSON-RPC 2.0 message, or a batch of
// them, as JSON-RPC 2.0 defines them, and returns what it read of a single
// message. On error the message holds the id to answer with, if valid.
func checkEnvelope(body []byte) (*rpcMessage, *jsonrpc.Error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return &rpcMessage{}, &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "parse error: empty body"}
	}
	if trimmed[0] != '[' {
		return checkMessage(trimmed)
	}
	var batch []json.RawMessage
	if err := json.Unmarshal(trimmed, &batch); err != nil {
		return &rpcMessage{}, parseError(trimmed)
	}
	if len(batch) == 0 {
		return &rpcMessage{}, invalidRequest("empty batch")
	}
	all := &rpcMessage{Batch: len(batch), Elems: make([]*rpcMessage, 0, len(batch))}
	for i, m := range batch {
		msg, err := checkMessage(m)
		if err == nil && msg.Method == "initialize" {
			err = invalidRequest("initialize cannot be part of a batch")
		}
		if err != nil {
			err.Message = fmt.Sprintf("batch element %d: %s", i, err.Message)
			return msg, err
		}
		msg.Raw = m
		all.Elems = append(all.Elems, msg)
		all.Calls += msg.Calls
		all.Subs = append(all.Subs, msg.Subs...)
	}
	return all, nil
}

// parseError explains why body is not JSON, or, when it is JSON of the wrong
// shape, that it is not a JSON-RPC message.
func parseError(body []byte) *jsonrpc.Error {
	var v json.RawMessage
	if err := json.Unmarshal(body, &v); err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "parse error: " + err.Error()}
	}
	return invalidRequest("a JSON-RPC message is an object")
}

// wireMessage is the envelope of one JSON-RPC message; a member that is
// absent stays nil.
type wireMessage struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// checkMessage checks one message: a request or notification (method, and
// an id for a request), or a response to a request of the gateway (id, and
// result or error).
//
// It decodes with the JSON package the SDK itself uses: member names match
// exactly, as JSON-RPC requires (encoding/json would take "JSONRPC" for
// "jsonrpc"), and the members are not copied out of the body; every request
// passes here, so its cost is paid on every call.
func checkMessage(raw json.RawMessage) (*rpcMessage, *jsonrpc.Error) {
	msg := &rpcMessage{}
	if len(raw) == 0 || raw[0] != '{' {
		if !json.Valid(raw) {
			return msg, parseError(raw)
		}
		return msg, invalidRequest("a JSON-RPC message is an object")
	}
	if !jsonlimit.DepthWithin(raw, jsonlimit.MaxDepth) {
		return msg, invalidRequest(fmt.Sprintf("JSON nested deeper than %d levels", jsonlimit.MaxDepth))
	}
	var m wireMessage
	if rest, err := fastjson.Parse(raw, &m, fastjson.ZeroCopy|fastjson.DontMatchCaseInsensitiveStructFields); err != nil || len(rest) != 0 {
		return msg, parseError(raw)
	}
	if !bytes.Equal(m.JSONRPC, []byte(`"2.0"`)) {
		var version string
		if json.Unmarshal(m.JSONRPC, &version) != nil || version != "2.0" {
			return msg, invalidRequest(`"jsonrpc" must be "2.0"`)
		}
	}
	if m.ID != nil {
		if !validID(m.ID) {
			return msg, invalidRequest(`"id" must be a string or an integer`)
		}
		if len(m.ID) > maxIDBytes {
			return msg, invalidRequest(fmt.Sprintf(`"id" longer than %d bytes`, maxIDBytes))
		}
		msg.ID = m.ID
	}
	if m.Method != nil {
		if method, ok := plainString(m.Method); ok {
			msg.Method = method
		} else if json.Unmarshal(m.Method, &msg.Method) != nil {
			return msg, invalidRequest(`"method" must be a string`)
		}
		msg.Params = m.Params
		if msg.ID != nil {
			msg.Calls = 1
		}
		return msg, checkKept(msg, len(raw))
	}
	if m.ID == nil || (m.Result != nil) == (m.Error != nil) {
		return msg, invalidRequest(`neither a request (no "method") nor a response (an "id" and one of "result" or "error")`)
	}
	return msg, nil
}

// What a session keeps of the messages it is sent is bounded by size here,
// so that it does not depend on what a client sends: the id of a request
// (the SDK keeps a subscription's), all of initialize (the SDK keeps its
// params for the session's life), a subscription's URI and a log level.
const (
	maxIDBytes         = 1 << 10
	maxInitializeBytes = 64 << 10
	maxURIBytes        = 4 << 10
)

// logLevels are the levels logging/setLevel may set (RFC 5424 severities,
// as MCP defines them).
func logLevels() []string {
	return []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}
}

// checkKept refuses a request whose content a session would keep beyond
// the bounds above, and records the subscriptions it changes. size is the
// message's length.
func checkKept(msg *rpcMessage, size int) *jsonrpc.Error {
	switch msg.Method {
	case "initialize":
		if size > maxInitializeBytes {
			return invalidRequest(fmt.Sprintf("initialize larger than %d bytes", maxInitializeBytes))
		}
	case "logging/setLevel":
		if v, _ := aggregate.ClaimedVersion(msg.Params); v >= aggregate.StatelessRevision {
			return nil // removed in that revision: the stateless handler answers 404 (era.go)
		}
		var p struct {
			Level string `json:"level"`
		}
		// Decoded as encoding/json decodes it (member names matched
		// without regard to case), with the SDK's faster decoder.
		if fastjson.Unmarshal(msg.Params, &p) == nil && !slices.Contains(logLevels(), p.Level) {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid params: level must be one of %s", strings.Join(logLevels(), ", "))}
		}
	case "resources/subscribe", "resources/unsubscribe":
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(msg.Params, &p) != nil {
			return nil // the SDK says what is wrong
		}
		if len(p.URI) > maxURIBytes {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid params: uri longer than %d bytes", maxURIBytes)}
		}
		msg.Subs = []subChange{{URI: p.URI, On: msg.Method == "resources/subscribe"}}
	}
	return nil
}

// validID reports whether raw is an id the gateway can answer with as sent:
// a string or an integer. MCP forbids null ids; a fraction would be
// truncated by the SDK and the answer would carry another id.
func validID(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return false
	}
	switch raw[0] {
	case '"':
		if _, ok := plainString(raw); ok {
			return true
		}
		var s string
		return json.Unmarshal(raw, &s) == nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		_, err := strconv.ParseInt(string(raw), 10, 64)
		return err == nil
	}
	return false
}

// plainString returns the value of raw when raw is a JSON string of
// printable ASCII without escapes (every method name, most ids), which
// decodes to the bytes between its quotes; ok is false for any other
// string, which encoding/json decodes (escapes, other bytes).
func plainString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	for _, c := range body {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return "", false
		}
	}
	return string(body), true
}

// codeNoSession is the JSON-RPC code of a POST that needs a session and
// names none: -32000, the first implementation-defined server error, as the
// TypeScript SDK's servers answer it.
const codeNoSession = -32000

func invalidRequest(msg string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: " + msg}
}

// writeRPCError writes a JSON-RPC error response with an HTTP status: the
// form the MCP transport allows for input the server does not accept. A nil
// id is written as null.
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int64, msg string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	body, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: msg}})
	if err != nil { // cannot happen: id was validated
		body = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`)
	}
	h := w.Header()
	h.Del("Content-Length")
	h.Del("X-Content-Type-Options")
	h.Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// rpcErrorWriter passes the SDK's responses through, except a plain-text
// 400, which it holds back and rewrites as a JSON-RPC error on finish.
type rpcErrorWriter struct {
	http.ResponseWriter
	id      json.RawMessage
	started bool          // a response went through
	held    *bytes.Buffer // the plain-text 400 being held back
}

// maxHeldError bounds the plain-text message kept from the SDK.
const maxHeldError = 4 << 10

func (w *rpcErrorWriter) WriteHeader(code int) {
	if !w.started && w.held == nil && code == http.StatusBadRequest &&
		strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.held = new(bytes.Buffer)
		return
	}
	if w.held == nil {
		w.started = true
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *rpcErrorWriter) Write(b []byte) (int, error) {
	if w.held != nil {
		if room := maxHeldError - w.held.Len(); room > 0 {
			w.held.Write(b[:min(len(b), room)])
		}
		return len(b), nil
	}
	w.started = true
	return w.ResponseWriter.Write(b)
}

// Flush and Unwrap keep SSE streaming (http.ResponseController) working.
func (w *rpcErrorWriter) Flush() {
	if w.held == nil {
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

func (w *rpcErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes the held-back error, if any.
func (w *rpcErrorWriter) finish() {
	if w.held == nil {
		return
	}
	msg := strings.TrimSpace(w.held.String())
	writeRPCError(w.ResponseWriter, http.StatusBadRequest, w.id, sdkErrorCode(msg), msg)
}

// sdkErrorCode maps the SDK's plain-text refusals (go-sdk v1.8.0
// mcp.checkRequest and servePOST; TestProtocolErrors pins them) to JSON-RPC
// codes.
func sdkErrorCode(msg string) int64 {
	switch {
	case strings.Contains(msg, "JSON RPC not handled"):
		return jsonrpc.CodeMethodNotFound
	case strings.Contains(msg, `missing required "params"`):
		return jsonrpc.CodeInvalidParams
	default:
		return jsonrpc.CodeInvalidRequest
	}
}
