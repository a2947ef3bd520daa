package aggregate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	fastjson "github.com/segmentio/encoding/json"

	"github.com/mcp-gateway/mcp-gateway/internal/jsonlimit"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// listTools lists every tool of an upstream, all pages: with raw requests
// when the upstream takes them (raw != nil), else through the SDK client.
// rawTools holds each tool as the server listed it, by name, when the raw
// listing is the one used (nil otherwise).
func listTools(ctx context.Context, cs *mcp.ClientSession, caps *mcp.ServerCapabilities, raw RoundTrip) (tools []*mcp.Tool, rawTools map[string]json.RawMessage, err error) {
	if caps.Tools == nil {
		return nil, nil, nil
	}
	sdk := func(ctx context.Context) (toolListing, error) {
		tools, err := collect(cs.Tools(ctx, nil), "tools")
		return toolListing{tools: tools}, err
	}
	if raw == nil {
		l, err := sdk(ctx)
		return l.tools, nil, err
	}
	l, err := firstListing(ctx, rawListPatience, func(ctx context.Context) (toolListing, bool) {
		tools, rawTools, ok := listToolsRaw(ctx, raw)
		return toolListing{tools, rawTools}, ok
	}, sdk)
	return l.tools, l.raw, err
}

// toolListing is a server's tools, with their raw forms when listed raw.
type toolListing struct {
	tools []*mcp.Tool
	raw   map[string]json.RawMessage
}

// rawListPatience is how long a raw listing runs alone. A server that does
// not answer requests with string ids (JSON-RPC requires it to) would hold
// its start until the handshake timeout, and one that takes long to list
// would be asked twice in a row: after this, the SDK client lists too, and
// the first complete listing wins.
const rawListPatience = 5 * time.Second

// firstListing runs the raw listing, and the SDK's if the raw one declines,
// or alongside it once patience has passed; it returns the first complete
// listing (the SDK's outcome when the raw one declines) and ends the other.
func firstListing[L any](ctx context.Context, patience time.Duration,
	raw func(context.Context) (L, bool), sdk func(context.Context) (L, error)) (L, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the listing still running, upstream too (notifications/cancelled)
	type listing struct {
		tools L
		ok    bool
		err   error
	}
	rawc := make(chan listing, 1)
	go func() {
		tools, ok := raw(ctx)
		rawc <- listing{tools: tools, ok: ok}
	}()
	var sdkc chan listing // nil, never ready, until the SDK client lists
	startSDK := func() {
		if sdkc == nil {
			sdkc = make(chan listing, 1)
			go func() {
				tools, err := sdk(ctx)
				sdkc <- listing{tools: tools, err: err}
			}()
		}
	}
	patient := time.NewTimer(patience)
	defer patient.Stop()
	for {
		select {
		case l := <-rawc:
			if l.ok {
				return l.tools, nil
			}
			rawc = nil // declined: the SDK client's listing decides
			startSDK()
		case <-patient.C:
			startSDK()
		case l := <-sdkc:
			return l.tools, l.err
		}
	}
}

// RoundTrip sends one request with raw JSON params on an upstream's
// connection and returns the raw result (supervisor.RoundTrip, for stdio
// servers: the same type, declared here so that aggregate does not depend
// on supervisor).
type RoundTrip = func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)

// rawTool is a tool as listed, its schemas kept as the bytes the server
// sent: the outer fields shadow the embedded Tool's of the same name.
type rawTool struct {
	mcp.Tool
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
}

// listToolsRaw lists tools as the SDK client does, without what a gateway
// does not need: the client decodes every schema into maps and encodes it
// again to check x-mcp-header annotations, a third of the gateway's CPU
// from launch to ready at 64 servers; here a schema stays the
// bytes the server sent (and is served so). It reports false, having
// changed nothing, for anything it does not take exactly as the SDK client
// would (see rawListable), or that fails in any way. The caller then lists
// through the SDK, which owns the outcome.
func listToolsRaw(ctx context.Context, raw RoundTrip) ([]*mcp.Tool, map[string]json.RawMessage, bool) {
	var tools []*mcp.Tool
	var rawTools map[string]json.RawMessage
	seen := make(map[string]bool) // cursors: a server that loops would never end
	cursor := ""
	for {
		params := json.RawMessage(`{}`)
		if cursor != "" {
			b, err := json.Marshal(struct {
				Cursor string `json:"cursor"`
			}{cursor})
			if err != nil {
				return nil, nil, false
			}
			params = b
		}
		res, err := raw(ctx, "tools/list", params)
		if err != nil || !rawListable(res) {
			return nil, nil, false
		}
		// Decoded as the SDK client decodes a result, the tools' schemas
		// aside: a member of the wrong type anywhere declines. Each tool
		// keeps the bytes the server sent too: that is what agents get.
		var page struct {
			mcp.ListToolsResult
			Tools []*listedTool `json:"tools"`
		}
		if rest, err := fastjson.Parse(res, &page, fastjson.DontMatchCaseInsensitiveStructFields); err != nil || len(bytes.TrimSpace(rest)) != 0 {
			return nil, nil, false
		}
		if rawTools == nil {
			rawTools = make(map[string]json.RawMessage, len(page.Tools))
		}
		for _, lt := range page.Tools {
			if lt == nil { // "tools":[null]: the SDK client drops it too
				continue
			}
			t := &lt.Tool
			t.InputSchema, t.OutputSchema = schema(lt.InputSchema), schema(lt.OutputSchema)
			tools = append(tools, t)
			rawTools[t.Name] = lt.raw
		}
		if page.NextCursor == "" {
			return tools, rawTools, true
		}
		if seen[page.NextCursor] {
			return nil, nil, false
		}
		seen[page.NextCursor] = true
		cursor = page.NextCursor
	}
}

// listedTool is one tool of a listing, decoded (rawTool) and as the bytes
// the server sent, in one pass over the page.
type listedTool struct {
	rawTool
	raw json.RawMessage
}

// UnmarshalJSON keeps b, which the page's decoder passes as a slice of the
// listing (the listing is the caller's to keep: listToolsRaw's result
// holds it), and decodes it as the page's decoder would.
func (lt *listedTool) UnmarshalJSON(b []byte) error {
	rest, err := fastjson.Parse(b, &lt.rawTool, fastjson.DontMatchCaseInsensitiveStructFields)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return errors.New("data after a tool")
	}
	lt.raw = b
	return nil
}

// rawListable reports whether a tools/list result can be kept as bytes with
// the same outcome as the SDK client's decoding into Go values: valid UTF-8
// (decoding would replace bad bytes, and strict clients refuse them), nested
// no deeper than the SDK decodes, no number a float64 cannot hold (the SDK
// client fails such a listing), no x-mcp-header key (the client drops
// tools whose annotation is invalid), spelled out or with \u escapes, and
// no lone surrogate escape.
func rawListable(res []byte) bool {
	return utf8.Valid(res) && jsonlimit.DepthWithin(res, jsonlimit.MaxDepth) &&
		!bytes.Contains(res, []byte("x-mcp-header")) && !escapesChangeMeaning(res) && numbersFitFloat64(res)
}

// escapesChangeMeaning reports whether res has a \u escape that decoding
// would treat specially: one of a character of "x-mcp-header" (only such an
// escape can spell that key other than literally: no other JSON escape gives
// a letter or '-'), or a surrogate that is not half of a pair (decoding gives
// U+FFFD; passed on as sent, strict clients refuse the page). Other escapes
// (Python's json.dumps writes every non-ASCII character so) do not count.
func escapesChangeMeaning(res []byte) bool {
	escape := func(i int) (rune, bool) { // the \uXXXX at res[i:], if any
		if i+6 > len(res) || res[i] != '\\' || res[i+1] != 'u' {
			return 0, false
		}
		r, err := strconv.ParseUint(string(res[i+2:i+6]), 16, 16)
		return rune(r), err == nil
	}
	for i := 0; ; {
		j := bytes.Index(res[i:], []byte(`\u`))
		if j < 0 {
			return false
		}
		i += j
		r, ok := escape(i)
		switch {
		case !ok || strings.ContainsRune("x-mcp-header", r):
			return true
		case 0xD800 <= r && r < 0xDC00: // high surrogate: a low one must follow
			if lo, ok := escape(i + 6); !ok || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 12
		case 0xDC00 <= r && r <= 0xDFFF: // a low surrogate without its high one
			return true
		default:
			i += 6
		}
	}
}

// numbersFitFloat64 reports whether every number in res (outside strings)
// parses as a float64, as decoding into an interface needs. Only numbers
// with an exponent or hundreds of digits can fail.
func numbersFitFloat64(res []byte) bool {
	for i := 0; i < len(res); i++ {
		switch c := res[i]; {
		case c == '"':
			if i = stringEnd(res, i); i < 0 {
				return true // unterminated: decoding refuses it anyway
			}
		case c == '-' || '0' <= c && c <= '9':
			j := i
			for j < len(res) && strings.IndexByte("+-.eE0123456789", res[j]) >= 0 {
				j++
			}
			if tok := res[i:j]; bytes.ContainsAny(tok, "eE") || len(tok) > 300 {
				if _, err := strconv.ParseFloat(string(tok), 64); err != nil {
					return false
				}
			}
			i = j - 1
		}
	}
	return true
}

// stringEnd returns the index of the quote that ends the JSON string
// opening at res[open], or -1 if it does not end: the next quote not
// escaped, i.e. not preceded by an odd run of backslashes. It jumps from
// quote to quote instead of looking at every byte: a listing is mostly
// strings.
func stringEnd(res []byte, open int) int {
	for j := open + 1; ; j++ {
		k := bytes.IndexByte(res[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		n := 0
		for b := j - 1; b > open && res[b] == '\\'; b-- {
			n++
		}
		if n%2 == 0 {
			return j
		}
	}
}

// schema is a listed schema as Tool holds it: nil when absent or null, as
// decoding into an interface gives, else its bytes.
func schema(raw json.RawMessage) any {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	return raw
}

func (g *Gateway) listTools(req *mcp.ListToolsRequest) (mcp.Result, error) {
	cursor := ""
	if req.Params != nil {
		cursor = req.Params.Cursor
	}
	page, err := g.ToolsPage(cursor)
	if err != nil {
		return nil, err
	}
	return &rawResult{raw: page}, nil
}

func (g *Gateway) callTool(ctx context.Context, req *mcp.CallToolRequest) (mcp.Result, error) {
	p := req.Params
	if p == nil {
		return nil, invalidParams("missing params")
	}
	g.mu.RLock()
	r, ok := g.tools.routes[p.Name]
	g.mu.RUnlock()
	if !ok {
		return nil, invalidParams("unknown tool %q", p.Name)
	}
	var args any
	if a := bytes.TrimSpace(p.Arguments); len(a) > 0 && !bytes.Equal(a, []byte("null")) {
		if a[0] != '{' {
			return nil, invalidParams("tool %q: arguments must be a JSON object", p.Name)
		}
		args = json.RawMessage(a)
	}
	began := time.Now()
	call, done := g.calls.begin(ctx, req.Session, r.up.Name())
	defer done()
	ctx = call.ctx // ends when the server goes quiet (callTimer)
	if rc, ok := r.up.(RawCaller); ok {
		// The params as the agent sent them, as the fast path forwards them.
		if raw := rawParams(req); raw != nil {
			if res, trace, sent, err := g.callToolAgentParams(ctx, req, rc, r, call, raw, args); sent {
				if g.audit != nil {
					rec := g.record(req, r.up.Name(), began, res, err)
					if g.tel != nil {
						rec.TraceID, rec.SpanID = telemetry.IDs(ctx)
					}
					rec.Interceptors = trace
					g.audit(rec)
				}
				if err != nil {
					return nil, call.expired(err)
				}
				return res, nil
			}
		}
	}
	meta := g.progress.forward(p.Meta, call)
	var upErr error // the upstream's error as it came, for settle
	defer func() { settle(upErr, func() { g.progress.release(meta) }) }()
	sdkCall := func(ctx context.Context, args any) (*mcp.CallToolResult, error) {
		var res *mcp.CallToolResult
		err := r.up.Do(ctx, func(cs *mcp.ClientSession) error {
			var err error
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Meta: meta, Name: r.name, Arguments: args,
				RequestState: p.RequestState, InputResponses: p.InputResponses})
			return err
		})
		if err != nil {
			return nil, serverError(r.up.Name(), err)
		}
		return res, nil
	}
	var res mcp.Result
	var err error
	var trace string
	if g.hooked(r.up.Name(), r.name) {
		a, _ := args.(json.RawMessage)
		var typed *mcp.CallToolResult
		if typed, trace, err = g.callToolHooked(ctx, req, r, a, sdkCall); err == nil {
			res = typed
		}
	} else {
		// The server's result bytes, as the fast path relays them. A
		// 2026-era retry of the server's own input request carries its
		// state and the answers: they go on (the raw path sends them as
		// the agent wrote them).
		params := &mcp.CallToolParams{Meta: meta, Name: r.name, Arguments: args,
			RequestState: p.RequestState, InputResponses: p.InputResponses}
		res, err = g.forward(ctx, call, r.up, "tools/call", params, func(ctx context.Context, cs *mcp.ClientSession) (mcp.Result, error) {
			return cs.CallTool(ctx, params)
		})
		if err != nil {
			upErr = err
			err = serverError(r.up.Name(), err)
		}
	}
	err = call.expired(err)
	if g.audit != nil {
		rec := g.record(req, r.up.Name(), began, res, err)
		if g.tel != nil {
			rec.TraceID, rec.SpanID = telemetry.IDs(ctx)
		}
		rec.Interceptors = trace
		g.audit(rec)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// callToolAgentParams is callTool for a call whose params came as the agent
// sent them (raw), to a server that takes raw requests: they go on as
// sent, renamed and with the gateway's progress token, and the result
// comes back as the server's bytes, through the interceptors if any apply.
// sent is false, having sent nothing, when the params cannot be rewritten.
func (g *Gateway) callToolAgentParams(ctx context.Context, req *mcp.CallToolRequest, up RawCaller, r route, c *call,
	raw json.RawMessage, args any) (res mcp.Result, trace string, sent bool, err error) {
	// The routed name is set even when it is the agent's: whatever the
	// server's decoder makes of odd params (a key spelled twice, escaped),
	// the tool it reads is the one the gateway routed and its interceptors
	// saw.
	setName := func(b json.RawMessage) (json.RawMessage, error) { return rename(b, r.name) }
	params, release, err := g.agentParams(raw, c, setName)
	if err != nil {
		return nil, "", false, nil
	}
	var upErr error // the upstream's error as it came, for settle
	defer func() { settle(upErr, release) }()
	var b json.RawMessage
	if g.hooked(r.up.Name(), r.name) {
		a, _ := args.(json.RawMessage)
		b, trace, err = g.callToolRawHooked(ctx, c, up, r, req.Params.Name, a, params)
	} else {
		b, err = g.callRaw(ctx, c, up, "tools/call", params)
		upErr = err
		if err == nil && (len(b) == 0 || b[0] != '{') {
			err = fmt.Errorf("tools/call result is not an object: %.40s", b)
		}
		if err != nil {
			err = serverError(r.up.Name(), err)
		}
	}
	if err != nil {
		return nil, trace, true, err
	}
	return &rawResult{raw: b}, trace, true, nil
}

func (g *Gateway) record(req *mcp.CallToolRequest, server string, began time.Time, result mcp.Result, err error) CallRecord {
	rec := CallRecord{
		Server:   server,
		Tool:     req.Params.Name,
		Duration: time.Since(began),
		BytesIn:  len(req.Params.Arguments),
		Outcome:  "ok",
	}
	if req.Session != nil {
		rec.Session = req.Session.ID()
	}
	if err != nil {
		// Only the code: an upstream's error message may quote the
		// arguments, and the audit log never holds values.
		rec.Outcome, rec.Error = "error", errorCode(err)
		return rec
	}
	switch res := result.(type) {
	case *mcp.CallToolResult:
		if res.IsError {
			rec.Outcome = "tool_error"
		}
		rec.BytesOut = payloadBytes(res)
	case *rawResult: // as the fast path counts it
		if isErrorResult(res.raw) {
			rec.Outcome = "tool_error"
		}
		rec.BytesOut = len(res.raw)
	}
	return rec
}

// payloadBytes is the size of a result's payload: its text, binary data (as
// sent, base64) and structured content. It is counted rather than measured
// by re-encoding the result, which cost a quarter of the gateway's CPU per
// call; the JSON framing around the payload is not included.
func payloadBytes(res *mcp.CallToolResult) int {
	n := 0
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			n += len(c.Text)
		case *mcp.ImageContent:
			n += base64Len(len(c.Data))
		case *mcp.AudioContent:
			n += base64Len(len(c.Data))
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				n += len(c.Resource.Text) + base64Len(len(c.Resource.Blob))
			}
		case *mcp.ResourceLink:
			n += len(c.URI)
		}
	}
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			n += len(b)
		}
	}
	return n
}

func base64Len(n int) int { return (n + 2) / 3 * 4 }

// errorCode is what the audit log says of a failed call: only the code, as
// an upstream's error message may quote the arguments.
func errorCode(err error) string {
	var wire *jsonrpc.Error
	if errors.As(err, &wire) {
		return fmt.Sprintf("code %d", wire.Code)
	}
	return "internal error"
}
