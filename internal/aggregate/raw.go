package aggregate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/rawjson"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// RawCaller is an Upstream that can also forward a request as raw JSON and
// return the raw result (*supervisor.Server for stdio servers).
type RawCaller interface {
	CallRaw(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// ErrNeedsSession is returned by the raw path (Send,
// RequestStream) for a request it leaves to the SDK's session machinery;
// nothing was sent upstream.
var ErrNeedsSession = errors.New("aggregate: the call needs the session's own stream")

// hasProgressToken is a quick look for a progress token in params; the
// call itself decodes _meta.
func hasProgressToken(params json.RawMessage) bool {
	return bytes.Contains(params, []byte("progressToken")) || bytes.Contains(params, []byte(`\u`))
}

// CallRecord describes one forwarded tool call for the audit log.
type CallRecord struct {
	Session  string        // downstream MCP session id ("" for stdio)
	Server   string        // upstream server name
	Tool     string        // the name the agent called
	Duration time.Duration // from receipt to result
	Outcome  string        // "ok", "tool_error" (isError result) or "error"
	Error    string        // for "error": the JSON-RPC code, never the message (it may quote values)
	BytesIn  int           // size of the arguments as received
	BytesOut int           // size of the result's payload (see payloadBytes)
	// Interceptors says which interceptors denied, changed or failed the
	// call, in order: "name:action" joined by commas ("" for none).
	Interceptors string
	// TraceID and SpanID are the call's served span, when it is traced
	// ("" otherwise), so that an audit line leads to its trace.
	TraceID, SpanID string
}

// auditRaw records a call of the raw path.
func (g *Gateway) auditRaw(ctx context.Context, ss *mcp.ServerSession, server, tool string, began time.Time, bytesIn int, res json.RawMessage, err error, trace string) {
	if g.audit == nil {
		return
	}
	rec := CallRecord{Server: server, Tool: tool, Duration: time.Since(began),
		BytesIn: bytesIn, BytesOut: len(res), Outcome: "ok", Interceptors: trace}
	if ss != nil { // none for a 2026-era request (SendStateless), as on the SDK path
		rec.Session = ss.ID()
	}
	if g.tel != nil {
		rec.TraceID, rec.SpanID = telemetry.IDs(ctx)
	}
	switch {
	case err != nil:
		rec.Outcome, rec.Error = "error", errorCode(err)
	case isErrorResult(res):
		rec.Outcome = "tool_error"
	}
	g.audit(rec)
}

// RawEligible reports whether requests of session ss may be answered
// outside the SDK (the raw path: Route, then Send), as far as the session
// decides. The caller answers the agent on the request's own HTTP response
// (or stdio line), so without a stream of its own (stream false) it takes
// only requests during which the server cannot need that response: not
// those of a session that set a log level (its log messages go with the
// request), of a client that offers sampling or elicitation (requests that
// belong to the call), or of a client that offers roots but has no
// standalone stream open (hasStream), where a roots/list request goes, as
// in the SDK's own JSON-response mode. With stream set, the caller sends
// the request's notifications and requests on its response itself, so
// every initialized session's requests are eligible. A caller checks it
// before setting anything up: a request it refuses takes the SDK's path.
func (g *Gateway) RawEligible(ss *mcp.ServerSession, hasStream, stream bool) bool {
	return g.rawEligible(ss, hasStream, stream)
}

// rawEligible reports whether nothing the server may send during a call
// needs the call's own stream to reach this session (see RawEligible).
//
// With stream set, the caller sends the call's notifications and requests
// on the call's stream itself, so every initialized session's calls are.
func (g *Gateway) rawEligible(ss *mcp.ServerSession, hasStream, stream bool) bool {
	ip := ss.InitializeParams()
	if ip == nil {
		return false
	}
	if stream {
		return true
	}
	if caps := ip.Capabilities; caps != nil {
		if caps.Sampling != nil || caps.Elicitation != nil {
			return false
		}
		if caps.RootsV2 != nil && !hasStream {
			return false
		}
	}
	g.mu.RLock()
	_, logs := g.levels[ss]
	g.mu.RUnlock()
	return !logs
}

// withProgressToken returns params with _meta's progressToken set to mine,
// every other byte as sent.
func withProgressToken(params, meta json.RawMessage, mine string) (json.RawMessage, error) {
	m, err := rawjson.SetString(meta, progressKey, mine)
	if err != nil {
		return nil, err
	}
	return rawjson.SetMember(params, "_meta", m)
}

// isErrorResult reports whether a raw CallToolResult has isError set.
func isErrorResult(res json.RawMessage) bool {
	if !bytes.Contains(res, []byte(`"isError"`)) {
		return false
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(res, &r) == nil && r.IsError
}

// rename returns params with "name" set to name, every other byte as sent.
func rename(params json.RawMessage, name string) (json.RawMessage, error) {
	return rawjson.SetString(params, "name", name)
}

// forward sends a request to up and returns its result: as the bytes the
// server sent when up takes raw requests (RawCaller), so that the agent
// gets them as the server wrote them, else through the SDK client (sdk).
// params are the request's params as the gateway forwards them (routing
// applied).
func (g *Gateway) forward(ctx context.Context, c *call, up Upstream, method string, params any, sdk func(context.Context, *mcp.ClientSession) (mcp.Result, error)) (mcp.Result, error) {
	rc, ok := up.(RawCaller)
	if !ok {
		var res mcp.Result
		err := up.Do(ctx, func(cs *mcp.ClientSession) error {
			var err error
			res, err = sdk(ctx, cs)
			return err
		})
		return res, err
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("%s params: %w", method, err)
	}
	res, err := g.callRaw(ctx, c, rc, method, b)
	if err != nil {
		return nil, err
	}
	if len(res) == 0 || res[0] != '{' {
		return nil, fmt.Errorf("%s result is not an object: %.40s", method, res)
	}
	return &rawResult{raw: res}, nil
}
