package telemetry

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// recording is a Telemetry whose spans end in memory, synchronously,
// and whose metrics a manual reader collects: the SDK's own parts, with
// New's exporters left out.
func recording(t *testing.T) (*Telemetry, *tracetest.InMemoryExporter) {
	t.Helper()
	spans := tracetest.NewInMemoryExporter()
	tel := &Telemetry{tp: sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)), reader: sdkmetric.NewManualReader()}
	tel.tracer = tel.tp.Tracer(scopeName)
	// As New sets them up for traces.
	tel.serverSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}
	tel.clientSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}
	tel.attrBufs.New = func() any { return new([maxRequestAttrs]attribute.KeyValue) }
	tel.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	var err error
	if tel.inst, err = newInstruments(tel.mp.Meter(scopeName)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel, spans
}

func attrMap(kvs []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

func sameMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

const (
	headerParent = "00-11111111111111111111111111111111-2222222222222222-01"
	metaParent   = "00-33333333333333333333333333333333-4444444444444444-01"
)

// What a transport notes (WithRequest) fills what the request leaves
// empty, never what it says: the id (a JSON string id unquoted), the
// transport, and the header's trace context as the parent when _meta has
// none.
func TestServeTakesTheTransportsNotes(t *testing.T) {
	tel, spans := recording(t)
	for _, c := range []struct {
		id, wantID, traceparent, wantTrace string
		req                                Request
	}{
		{id: `"abc"`, wantID: "abc", traceparent: headerParent, wantTrace: "11111111111111111111111111111111"},
		{id: `7`, wantID: "7", req: Request{Traceparent: metaParent}, traceparent: headerParent, wantTrace: "33333333333333333333333333333333"},
		{id: `"`, wantID: `"`, req: Request{ID: "own", Transport: "pipe"}},
	} {
		spans.Reset()
		ctx := tel.WithRequest(context.Background(), c.id, c.traceparent, "k=v", "tcp")
		c.req.Method = "ping"
		_, op := tel.Serve(ctx, c.req)
		op.End("")
		got := spans.GetSpans()
		if len(got) != 1 {
			t.Fatalf("%d spans", len(got))
		}
		attrs := attrMap(got[0].Attributes)
		wantID, wantTransport := c.wantID, "tcp"
		if c.req.ID != "" {
			wantID, wantTransport = c.req.ID, c.req.Transport
		}
		if attrs["jsonrpc.request.id"] != wantID || attrs["network.transport"] != wantTransport {
			t.Errorf("id %q: attributes %v, want id %q over %s", c.id, attrs, wantID, wantTransport)
		}
		if c.wantTrace != "" {
			if got := got[0].SpanContext.TraceID().String(); got != c.wantTrace {
				t.Errorf("id %q: trace %s, want %s", c.id, got, c.wantTrace)
			}
			if got := got[0].SpanContext.TraceState().String(); c.req.Traceparent == "" && got != "k=v" {
				t.Errorf("id %q: tracestate %q, want the header's", c.id, got)
			}
		} else if got[0].Parent.IsValid() {
			t.Errorf("id %q: a parent %v from nowhere", c.id, got[0].Parent)
		}
	}
	if ctx := (*Telemetry)(nil).WithRequest(context.Background(), "1", "", "", "tcp"); ctx.Value(httpKey{}) != nil {
		t.Error("a nil Telemetry noted the request")
	}
}

// Spans are named and attributed after the conventions: the target in
// the name, each attribute only when known; a forwarded request's span
// is a client span with the server; End marks errors by their type; an
// event reaches the span.
func TestSpanNamesAndAttributes(t *testing.T) {
	tel, spans := recording(t)
	ctx, served := tel.Serve(context.Background(), Request{Method: "prompts/get", Prompt: "greet", Session: "s"})
	_, fwd := Forward(ctx, "srv", Request{Method: "tools/call", Tool: "echo", ID: "9"})
	fwd.Event("mcp_gateway.retry", attribute.Int("n", 2))
	if tp, _ := fwd.Traceparent(); tp == "" {
		t.Error("no traceparent for a recorded span")
	}
	fwd.End("-32602")
	served.End("")
	_, bare := tel.Serve(context.Background(), Request{Method: "ping"})
	bare.End("")
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans.GetSpans().Snapshots() {
		byName[s.Name()] = s
	}
	want := map[string]map[string]string{
		"prompts/get greet": {"mcp.method.name": "prompts/get", "gen_ai.prompt.name": "greet", "mcp.session.id": "s"},
		"tools/call echo": {"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool",
			"jsonrpc.request.id": "9", "mcp_gateway.server.name": "srv", "error.type": "-32602"},
		"ping": {"mcp.method.name": "ping"},
	}
	for name, w := range want {
		s := byName[name]
		if s == nil {
			t.Fatalf("no span %q among %v", name, byName)
		}
		if got := attrMap(s.Attributes()); !sameMap(got, w) {
			t.Errorf("span %q: attributes %v, want %v", name, got, w)
		}
	}
	cli := byName["tools/call echo"]
	if cli.SpanKind() != trace.SpanKindClient || cli.Status().Description != "-32602" || cli.Parent().SpanID() != byName["prompts/get greet"].SpanContext().SpanID() {
		t.Errorf("forwarded span: kind %v, status %+v, parent %v", cli.SpanKind(), cli.Status(), cli.Parent())
	}
	if evs := cli.Events(); len(evs) != 1 || evs[0].Name != "mcp_gateway.retry" {
		t.Errorf("events %+v", evs)
	}
	var nilOp *Op
	nilOp.Event("x")
	if tp, ts := nilOp.Traceparent(); tp != "" || ts != "" {
		t.Error("a nil Op has a traceparent")
	}
}

func TestErrorType(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{fmt.Errorf("call: %w", &jsonrpc.Error{Code: -32602, Message: "bad"}), "-32602"},
		{fmt.Errorf("call: %w", context.Canceled), "cancelled"},
		{fmt.Errorf("call: %w", context.DeadlineExceeded), "timeout"},
		{errors.New("quoting a value"), "_OTHER"},
	} {
		if got := ErrorType(c.err); got != c.want {
			t.Errorf("ErrorType(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// durations counts the samples of the duration histograms by their
// attributes.
func durations(t *testing.T, tel *Telemetry) map[string]uint64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[float64])
			if !ok || (m.Name != "mcp.server.operation.duration" && m.Name != "mcp.client.operation.duration") {
				continue
			}
			for _, dp := range h.DataPoints {
				out[m.Name+" "+fmt.Sprint(attrMap(dp.Attributes.ToSlice()))] += dp.Count
			}
		}
	}
	return out
}

// A server's start is a span and no duration; the durations' attributes
// are the low-cardinality ones only.
func TestDurationsAttributes(t *testing.T) {
	tel, spans := recording(t)
	_, start := tel.ServerStart(context.Background(), "srv", true)
	start.End("")
	if s := spans.GetSpans(); len(s) != 1 || s[0].Name != "mcp_gateway server start" || s[0].Parent.IsValid() {
		t.Errorf("server start spans %v", s)
	}
	ctx, op := tel.Serve(context.Background(), Request{Method: "tools/call", Tool: "t", Session: "s", ID: "1"})
	_, fwd := Forward(ctx, "srv", Request{Method: "prompts/get", Prompt: "p", ID: "2"})
	fwd.End("timeout")
	op.End("")
	want := map[string]uint64{
		"mcp.server.operation.duration map[gen_ai.tool.name:t mcp.method.name:tools/call]":                                                   1,
		"mcp.client.operation.duration map[error.type:timeout gen_ai.prompt.name:p mcp.method.name:prompts/get mcp_gateway.server.name:srv]": 1,
	}
	if got := durations(t, tel); !equalCounts(got, want) {
		t.Errorf("durations %v, want %v", got, want)
	}
}

func equalCounts(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// The cache of attribute sets stops at maxCachedSets; sets past it are
// built each time.
func TestAttrSetCacheBound(t *testing.T) {
	tel, _ := recording(t)
	for i := range maxCachedSets + 5 {
		if set := tel.attrSet(Request{Method: "tools/call", Tool: fmt.Sprint(i)}, "", ""); set == nil {
			t.Fatalf("no set %d", i)
		}
	}
	if n := tel.setCount.Load(); n != maxCachedSets {
		t.Errorf("%d sets cached, want %d", n, maxCachedSets)
	}
	tel.attrSet(Request{Method: "tools/call", Tool: "0"}, "", "") // cached already: not counted again
	if n := tel.setCount.Load(); n != maxCachedSets {
		t.Errorf("%d sets cached after a hit, want %d", n, maxCachedSets)
	}
}

// A size of 0 is a size (an empty params object is not "unknown"); a
// decision without an outcome is no decision.
func TestSizesEdges(t *testing.T) {
	tel, spans := recording(t)
	ctx, op := tel.Serve(context.Background(), Request{Method: "tools/call"})
	op.Bytes(0, 0)
	Decisions(ctx, []string{"no-outcome", "g:deny"})
	op.End("")
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					counts[m.Name+" "+fmt.Sprint(attrMap(dp.Attributes.ToSlice()))] += dp.Count
				}
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					counts[m.Name+" "+fmt.Sprint(attrMap(dp.Attributes.ToSlice()))] += uint64(dp.Value)
				}
			}
		}
	}
	for k, v := range map[string]uint64{
		"mcp_gateway.message.size map[mcp.method.name:tools/call mcp_gateway.direction:in]":                          1,
		"mcp_gateway.message.size map[mcp.method.name:tools/call mcp_gateway.direction:out]":                         1,
		"mcp_gateway.interceptor.decisions map[mcp_gateway.interceptor.name:g mcp_gateway.interceptor.outcome:deny]": 1,
	} {
		if counts[k] != v {
			t.Errorf("%s: %d, want %d (all: %v)", k, counts[k], v, counts)
		}
	}
	if n := len(counts); n != 4 { // and the served duration
		t.Errorf("%d series, want 4: %v", n, counts)
	}
	if evs := spans.GetSpans()[0].Events; len(evs) != 1 {
		t.Errorf("decision events %v, want g:deny only", evs)
	}
}

// The span names of tools and prompts share the attribute sets' cache and
// its bound: cached up to maxCachedSets, built each time past it, the same
// name either way.
func TestSpanNameCacheBound(t *testing.T) {
	tel, _ := recording(t)
	for i := range maxCachedSets + 5 {
		if got, want := tel.spanName(Request{Method: "tools/call", Tool: fmt.Sprint(i)}), "tools/call "+fmt.Sprint(i); got != want {
			t.Fatalf("span name %q, want %q", got, want)
		}
	}
	if n := tel.setCount.Load(); n != maxCachedSets {
		t.Errorf("%d names cached, want %d", n, maxCachedSets)
	}
	if got := tel.spanName(Request{Method: "prompts/get", Prompt: "p"}); got != "prompts/get p" {
		t.Errorf("past the bound: %q", got)
	}
}

// Served gives a transport's context the span context of the first
// request served in it, and nothing before that; WithIDsOf lends a
// context's span ids to another, and nothing when it has none.
func TestServedAndWithIDsOf(t *testing.T) {
	tel, _ := recording(t)
	ctx := tel.WithRequest(context.Background(), "7", "", "", "tcp")
	if id, _ := IDs(Served(ctx)); id != "" {
		t.Errorf("Served before any Serve: trace %s", id)
	}
	sctx, op := tel.Serve(ctx, Request{Method: "tools/call"})
	op.End("")
	_, again := tel.Serve(ctx, Request{Method: "tools/call"}) // a second request in the same context
	again.End("")
	wantTrace, wantSpan := IDs(sctx)
	if tid, sid := IDs(Served(ctx)); tid != wantTrace || sid != wantSpan || tid == "" {
		t.Errorf("Served: %s %s, want the first served span's %s %s", tid, sid, wantTrace, wantSpan)
	}
	if got := Served(context.Background()); got != context.Background() {
		t.Error("Served made a context of one no transport noted")
	}
	base := context.Background()
	if got := WithIDsOf(base, context.Background()); got != base {
		t.Error("WithIDsOf of a context without a span made a new context")
	}
	if tid, sid := IDs(WithIDsOf(base, sctx)); tid != wantTrace || sid != wantSpan {
		t.Errorf("WithIDsOf: %s %s, want %s %s", tid, sid, wantTrace, wantSpan)
	}
}
