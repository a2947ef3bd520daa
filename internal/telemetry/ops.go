package telemetry

import (
	"context"
	"encoding/hex"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Attribute keys of the OpenTelemetry semantic conventions for MCP, and
// the gateway's own (mcp_gateway.*) where they say nothing.
const (
	keyMethod    = attribute.Key("mcp.method.name")
	keySession   = attribute.Key("mcp.session.id")
	keyRequestID = attribute.Key("jsonrpc.request.id")
	keyTool      = attribute.Key("gen_ai.tool.name")
	keyPrompt    = attribute.Key("gen_ai.prompt.name")
	keyOperation = attribute.Key("gen_ai.operation.name")
	keyErrorType = attribute.Key("error.type")
	keyTransport = attribute.Key("network.transport")
	keyServer    = attribute.Key("mcp_gateway.server.name")
)

// ToolError is the error.type of a tools/call whose result has isError
// set, as the conventions name it.
const ToolError = "tool_error"

// Request describes one MCP request: one the gateway serves (Serve), or
// one it forwards to a server (Forward). Every field is a name or an id,
// never a value of the request: no arguments, no URIs, no headers.
type Request struct {
	Method string
	// Tool or Prompt is the name the request targets, if any.
	Tool, Prompt string
	// Session is the MCP session id ("" for none).
	Session string
	// ID is the JSON-RPC id as sent ("" if unknown).
	ID string
	// Transport is "tcp" (HTTP) or "pipe" (stdio), for network.transport.
	Transport string
	// Traceparent and Tracestate are the W3C trace context the agent sent
	// in the request's _meta; they take precedence over a parent already
	// in the context (the HTTP header's).
	Traceparent, Tracestate string
}

// Op is one request in progress: its span and its duration's metric. A
// nil *Op (telemetry off) does nothing.
type Op struct {
	t      *Telemetry
	span   trace.Span
	start  time.Time
	client bool
	// internal: a span of the gateway's own work (a server's start),
	// which no duration metric counts.
	internal bool
	server   string
	req      Request
	// live is the in-flight count a forwarded request is in (nil
	// without metrics).
	live *liveCount
}

// maxRequestAttrs is the most attributes requestAttrs gives a span.
const maxRequestAttrs = 8

// Serve starts the server span of a request the gateway serves, a child
// of the agent's trace context (Request.Traceparent, else ctx's).
func (t *Telemetry) Serve(ctx context.Context, r Request) (context.Context, *Op) {
	if t == nil {
		return ctx, nil
	}
	info, _ := ctx.Value(httpKey{}).(*httpInfo)
	if info != nil {
		if r.ID == "" {
			r.ID = info.id
		}
		if r.Transport == "" {
			r.Transport = info.transport
		}
		if r.Traceparent == "" {
			r.Traceparent, r.Tracestate = info.traceparent, info.tracestate
		}
	}
	if r.Traceparent != "" {
		ctx = propagation.TraceContext{}.Extract(ctx, &traceCarrier{r.Traceparent, r.Tracestate})
	}
	op := &Op{t: t, req: r}
	ctx = context.WithValue(ctx, telemetryKey{}, t)
	if t.tracer != nil {
		ctx, op.span = t.tracer.Start(ctx, t.spanName(r), t.serverSpan...)
		op.setAttrs("")
		if info != nil {
			info.serve(op.span.SpanContext())
		}
	}
	op.start = startTime(op.span)
	return ctx, op
}

// startTime is span's start, the start of its duration metric too: the
// span takes its own time, and passing it one (trace.WithTimestamp)
// would cost an allocation per span. Now for a span not recorded.
func startTime(span trace.Span) time.Time {
	if ro, ok := span.(sdktrace.ReadOnlySpan); ok {
		return ro.StartTime()
	}
	return time.Now()
}

// endTime is what startTime is for the end, once span has ended.
func endTime(span trace.Span) time.Time {
	if ro, ok := span.(sdktrace.ReadOnlySpan); ok {
		if end := ro.EndTime(); !end.IsZero() {
			return end
		}
	}
	return time.Now()
}

// setAttrs gives op's span its request's attributes, if it is recorded.
// They are set after the start, not passed to it, so that a span the
// sampler drops costs no attribute slices: the samplers the OTEL_*
// variables choose from (always, never, trace id ratio, parent based) do
// not read attributes.
func (op *Op) setAttrs(server string) {
	if op.span.IsRecording() {
		// The span copies them: the slice is lent from a pool, not
		// allocated per span.
		buf := op.t.attrBufs.Get().(*[maxRequestAttrs]attribute.KeyValue)
		op.span.SetAttributes(requestAttrs(buf[:0], op.req, server)...)
		*buf = [maxRequestAttrs]attribute.KeyValue{} // no strings kept alive
		op.t.attrBufs.Put(buf)
	}
}

// traceCarrier is a propagation.TextMapCarrier of the two W3C fields,
// without the map a MapCarrier allocates per request.
type traceCarrier struct{ traceparent, tracestate string }

func (c *traceCarrier) Get(key string) string {
	switch key {
	case "traceparent":
		return c.traceparent
	case "tracestate":
		return c.tracestate
	}
	return ""
}

func (c *traceCarrier) Set(key, value string) {
	switch key {
	case "traceparent":
		c.traceparent = value
	case "tracestate":
		c.tracestate = value
	}
}

func (c *traceCarrier) Keys() []string { return []string{"traceparent", "tracestate"} }

// telemetryKey holds the Telemetry of a served request in its context, so
// that Forward finds it where the request is forwarded without every
// function in between passing it.
type telemetryKey struct{}

// Forward starts the client span of a request forwarded to server, a
// child of the served request's span in ctx; nil when ctx has no served
// request (telemetry off). Traceparent gives what the forwarded request's
// _meta carries.
func Forward(ctx context.Context, server string, r Request) (context.Context, *Op) {
	t, _ := ctx.Value(telemetryKey{}).(*Telemetry)
	if t == nil {
		return ctx, nil
	}
	op := &Op{t: t, client: true, server: server, req: r}
	if t.inst.inflight != nil {
		op.live = t.inst.inflight.of(server)
		op.live.n.Add(1)
	}
	if t.tracer != nil {
		ctx, op.span = t.tracer.Start(ctx, t.spanName(r), t.clientSpan...)
		op.setAttrs(server)
	}
	op.start = startTime(op.span)
	return ctx, op
}

// Traceparent returns the W3C trace context of op's span ("" when none is
// recorded): what a forwarded request carries in _meta so that its server
// continues the trace.
func (op *Op) Traceparent() (traceparent, tracestate string) {
	if op == nil || op.span == nil {
		return "", ""
	}
	return formatTraceparent(op.span.SpanContext())
}

// formatTraceparent writes sc as propagation.TraceContext's Inject does
// (version 00, the sampled and random flags only), without the context
// and the carrier Inject needs: one string per forwarded request.
func formatTraceparent(sc trace.SpanContext) (traceparent, tracestate string) {
	if !sc.IsValid() {
		return "", ""
	}
	tid, sid := sc.TraceID(), sc.SpanID()
	var b [55]byte
	copy(b[:], "00-")
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:], []byte{byte(sc.TraceFlags() & (trace.FlagsSampled | trace.FlagsRandom))})
	return string(b[:]), sc.TraceState().String()
}

// Event adds a named event to op's span (a retry, an interceptor's
// decision): names and short codes only, never values.
func (op *Op) Event(name string, attrs ...attribute.KeyValue) {
	if op == nil || op.span == nil {
		return
	}
	op.span.AddEvent(name, trace.WithAttributes(attrs...))
}

// End ends op: errType is "" for success, else its error.type (see
// ErrorType, ToolError).
func (op *Op) End(errType string) {
	if op == nil {
		return
	}
	var end time.Time
	if op.span != nil {
		if errType != "" {
			op.span.SetAttributes(keyErrorType.String(errType))
			// The description is the type, not the message: a message
			// may quote the request's values.
			op.span.SetStatus(codes.Error, errType)
		}
		op.span.End()
		end = endTime(op.span)
	} else {
		end = time.Now()
	}
	inst := &op.t.inst
	if inst.server == nil || op.internal {
		return // no metrics
	}
	attrs := op.t.attrSet(op.req, op.server, errType)
	secs := end.Sub(op.start).Seconds()
	ctx := context.Background()
	if op.client {
		inst.client.Record(ctx, secs, attrs.rec...)
		if op.live != nil {
			op.live.n.Add(-1)
		}
		return
	}
	inst.server.Record(ctx, secs, attrs.rec...)
}

// ErrorType is the error.type of err: the JSON-RPC error code of an error
// answer, "cancelled" or "timeout" for a context's end, else "_OTHER" (the
// conventions' fallback; an error's text may quote values).
func ErrorType(err error) string {
	if err == nil {
		// Before rpcErr: errors.As takes its address, which puts it on
		// the heap, an allocation per call were it declared first.
		return ""
	}
	var rpcErr *jsonrpc.Error
	switch {
	case errors.As(err, &rpcErr):
		return strconv.FormatInt(rpcErr.Code, 10)
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "_OTHER"
}

// spanName is "{mcp.method.name} {target}" with the tool or prompt name as
// the target, as the conventions say; cached beside the attribute sets
// (the concatenation is an allocation per span otherwise).
func (t *Telemetry) spanName(r Request) string {
	target := r.Tool
	if target == "" {
		target = r.Prompt
	}
	if target == "" {
		return r.Method
	}
	key := nameKey{r.Method, target}
	if v, ok := t.sets.Load(key); ok {
		return v.(string)
	}
	name := r.Method + " " + target
	if t.setCount.Load() < maxCachedSets {
		if _, loaded := t.sets.LoadOrStore(key, name); !loaded {
			t.setCount.Add(1)
		}
	}
	return name
}

// nameKey is what a span name is made of.
type nameKey struct{ method, target string }

// requestAttrs appends a request's span attributes to attrs.
func requestAttrs(attrs []attribute.KeyValue, r Request, server string) []attribute.KeyValue {
	attrs = append(attrs, keyMethod.String(r.Method))
	if r.Session != "" {
		attrs = append(attrs, keySession.String(r.Session))
	}
	if r.ID != "" {
		attrs = append(attrs, keyRequestID.String(r.ID))
	}
	if r.Tool != "" {
		attrs = append(attrs, keyTool.String(r.Tool), keyOperation.String("execute_tool"))
	}
	if r.Prompt != "" {
		attrs = append(attrs, keyPrompt.String(r.Prompt))
	}
	if r.Transport != "" {
		attrs = append(attrs, keyTransport.String(r.Transport))
	}
	if server != "" {
		attrs = append(attrs, keyServer.String(server))
	}
	return attrs
}

// metricAttrs are a duration's attributes: low-cardinality ones only (no
// session, no request id).
func metricAttrs(r Request, server, errType string) attribute.Set {
	attrs := make([]attribute.KeyValue, 0, 5)
	if r.Method != "" {
		attrs = append(attrs, keyMethod.String(r.Method))
	}
	if r.Tool != "" {
		attrs = append(attrs, keyTool.String(r.Tool))
	}
	if r.Prompt != "" {
		attrs = append(attrs, keyPrompt.String(r.Prompt))
	}
	if server != "" {
		attrs = append(attrs, keyServer.String(server))
	}
	if errType != "" {
		attrs = append(attrs, keyErrorType.String(errType))
	}
	return attribute.NewSet(attrs...)
}

// Serving reports whether ctx is a served request's with telemetry on:
// whether Forward would start a span.
func Serving(ctx context.Context) bool {
	t, _ := ctx.Value(telemetryKey{}).(*Telemetry)
	return t != nil
}

// httpKey holds what a transport knows of a request before it is routed:
// its JSON-RPC id and the HTTP traceparent header (see WithRequest).
type httpKey struct{}

type httpInfo struct {
	id, traceparent, tracestate, transport string

	// served is the span context of the first request Serve served in
	// this context, for the transport's lines about the request written
	// after Serve returned (Served). Under mu: a transport's context may
	// reach more than one Serve (a batch), and a call's Serve may run on a
	// goroutine of its own.
	mu     sync.Mutex
	served trace.SpanContext
}

// serve notes sc as the served request's span context, unless one is.
func (h *httpInfo) serve(sc trace.SpanContext) {
	h.mu.Lock()
	if !h.served.IsValid() {
		h.served = sc
	}
	h.mu.Unlock()
}

// WithRequest notes in ctx the JSON-RPC id of the request a transport
// serves, the W3C trace context of its HTTP headers (a parent for it when
// its _meta has none) and the transport ("tcp" or "pipe"), for Serve. It
// returns ctx as it is when t is nil.
func (t *Telemetry) WithRequest(ctx context.Context, id, traceparent, tracestate, transport string) context.Context {
	if t == nil {
		return ctx
	}
	if len(id) > 1 && id[0] == '"' { // a string id as JSON: the string
		if s, err := strconv.Unquote(id); err == nil {
			id = s
		}
	}
	return context.WithValue(ctx, httpKey{}, &httpInfo{id: id, traceparent: traceparent, tracestate: tracestate, transport: transport})
}

// setKey is what a duration's attribute set is made of.
type setKey struct{ method, tool, prompt, server, errType string }

// maxCachedSets bounds the cache of attribute sets: names come from
// agents, so their number is theirs to choose.
const maxCachedSets = 4096

// attrSet is metricAttrs, cached: building a set sorts and allocates, on
// every request otherwise.
func (t *Telemetry) attrSet(r Request, server, errType string) *attrOpts {
	key := setKey{r.Method, r.Tool, r.Prompt, server, errType}
	if v, ok := t.sets.Load(key); ok {
		return v.(*attrOpts)
	}
	return t.cacheSet(key, metricAttrs(r, server, errType))
}

// attrOpts is a metric attribute set as the instruments take it: the
// option and the variadic slices built once per set, not per record (each
// would allocate twice).
type attrOpts struct {
	rec []metric.RecordOption
	add []metric.AddOption
}

// cacheSet keeps set's options under key in the cache of attribute sets,
// unless it holds maxCachedSets already, and returns them.
func (t *Telemetry) cacheSet(key any, set attribute.Set) *attrOpts {
	o := metric.WithAttributeSet(set)
	opts := &attrOpts{rec: []metric.RecordOption{o}, add: []metric.AddOption{o}}
	if t.setCount.Load() < maxCachedSets {
		v, loaded := t.sets.LoadOrStore(key, opts)
		if !loaded {
			t.setCount.Add(1)
		}
		return v.(*attrOpts)
	}
	return opts
}

// IDs are the trace and span ids (hex) of the span in ctx, "" when none
// is recorded: what a log line carries to lead to its trace.
func IDs(ctx context.Context) (traceID, spanID string) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return "", ""
	}
	return sc.TraceID().String(), sc.SpanID().String()
}

// ServerStart starts the span of a server's (re)start as the gateway
// takes it in (its tools listed, its subscriptions restored): a root span,
// restart telling a restart from the first start. Restarts are counted in
// the metrics too (Observe).
func (t *Telemetry) ServerStart(ctx context.Context, server string, restart bool) (context.Context, *Op) {
	if t == nil || t.tracer == nil {
		return ctx, nil
	}
	op := &Op{t: t, start: time.Now(), internal: true, server: server}
	ctx, op.span = t.tracer.Start(ctx, "mcp_gateway server start", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithNewRoot(), trace.WithTimestamp(op.start),
		trace.WithAttributes(keyServer.String(server), attribute.Bool("mcp_gateway.server.restart", restart)))
	return ctx, op
}
