package endpoint

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// The fast path of a 2026-era tools/call: the request carries everything
// (the envelope in _meta, the revision's headers), so it needs no session,
// and what the SDK's stateless handler does for it (a session and a
// JSON-RPC connection for the one request, the request decoded into the
// SDK's types, the answer framed as SSE) costs three to four times the
// call itself. Here the headers are checked as the SDK checks them, the
// call is read, routed and sent by the aggregate (RouteStateless,
// SendStateless), and the answer is plain JSON (or an SSE stream once the
// call's progress needs one), the message the SDK path would send.
//
// Anything but the plain case goes to the SDK's stateless handler
// unchanged, which then owns it, its errors included: a header that
// disagrees with the body (-32020), an envelope the SDK refuses (-32602),
// an unknown tool, a retry with requestState, a request that sets a log
// level, the search view's tools. On the lane, where nothing can stream, a
// call with a progress token is handed back to net/http.

// Headers of a 2026-era request that name what its body holds.
const (
	methodHeader = "Mcp-Method"
	nameHeader   = "Mcp-Name"
)

// serveStateless answers a 2026-era POST and reports true, or reports
// false having written nothing.
func (f *fastPath) serveStateless(w http.ResponseWriter, r *http.Request, msg *rpcMessage) bool {
	if f.sdkOnly.Load() || msg.Batch > 0 || len(msg.ID) == 0 || msg.Method != "tools/call" || !acceptsJSON(r) || foreignHost(r) {
		return false
	}
	h := r.Header
	// The SDK's validateMcpHeaders; Mcp-Name and the version are the
	// aggregate's to compare with the body, as it reads the body.
	if h.Get(methodHeader) != msg.Method || f.e.agg.ViewOwns(h, msg.Method, msg.Params) {
		return false
	}
	streams := canFlush(w)
	call, ok := f.e.agg.RouteStateless(msg.Params, h.Get(protocolVersionHeader), h.Get(nameHeader), streams)
	if !ok {
		return false
	}
	ctx := r.Context()
	if t := f.e.opts.Telemetry; t.Tracing() {
		ctx = t.WithRequest(ctx, string(msg.ID), h.Get("traceparent"), h.Get("tracestate"), "tcp")
	}
	var stream *eventStream
	var notify aggregate.Notify
	if streams {
		// The call's progress goes on this response, which becomes an
		// SSE stream at the first notification.
		stream = &eventStream{w: w, needed: call.MayStream()}
		notify = stream.send
	}
	res, err := f.e.agg.SendStateless(ctx, &call, notify)
	if errors.Is(err, aggregate.ErrNeedsSession) {
		if stream != nil {
			stream.close() // never started: nothing was sent
		}
		return false // nothing written: the SDK path's
	}
	f.forwarded.Add(1)
	f.stateless.Add(1)
	if stream != nil && stream.close() {
		if n := stream.droppedCount(); n > 0 {
			f.e.log.Warn().Ctx(telemetry.Served(ctx)).Int("dropped", n).
				Msg("notifications of a 2026-era call dropped: its agent was not reading its stream")
		}
		switch {
		case r.Context().Err() != nil: // the agent closed the stream: the call was cancelled
		case err != nil:
			b, _ := json.Marshal(callError(ctx, r, err))
			stream.final(msg.ID, "error", b)
		default:
			stream.final(msg.ID, "result", res)
		}
		return true
	}
	if r.Context().Err() != nil {
		// The agent went away, which cancelled the call (upstream too):
		// nobody reads an answer, but one is written, so that the lane
		// does not take the request for declined.
		noAnswer(w)
		return true
	}
	if stream != nil && stream.needed {
		w = noTakeover{w} // see fastPath.call
	}
	if err != nil {
		wire := callError(ctx, r, err)
		if status := errorStatus(wire); status != http.StatusOK {
			writeErrorObject(w, status, msg.ID, wire)
		} else {
			writeError(w, msg.ID, wire)
		}
		return true
	}
	writeResult(w, msg.ID, res)
	return true
}

// errorStatus is the HTTP status of a 2026-era request's error answer, as
// the revision has it and the SDK's handler sends it (extractErrorStatus):
// 404 for an unknown method, 400 for invalid params, an unsupported
// version or a capability the client did not declare, 200 for the rest.
func errorStatus(e *jsonrpc.Error) int {
	switch e.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities:
		return http.StatusBadRequest
	}
	return http.StatusOK
}
