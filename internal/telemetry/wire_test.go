package telemetry

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestTraceparentAsInject: formatTraceparent, which writes a forwarded
// request's _meta.traceparent by hand, writes what the SDK's W3C
// propagator injects, for every flag byte, with and without a tracestate,
// and nothing for an invalid span context.
func TestTraceparentAsInject(t *testing.T) {
	ts, err := trace.ParseTraceState("vendor=v1,other=v2")
	if err != nil {
		t.Fatal(err)
	}
	tid, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	sid, _ := trace.SpanIDFromHex("b7ad6b7169203331")
	var scs []trace.SpanContext
	for flags := range 256 {
		for _, state := range []trace.TraceState{{}, ts} {
			scs = append(scs, trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid,
				TraceFlags: trace.TraceFlags(flags), TraceState: state}))
		}
	}
	scs = append(scs, trace.SpanContext{}, trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid}))
	for _, sc := range scs {
		want := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), want)
		tp, state := formatTraceparent(sc)
		if tp != want["traceparent"] || state != want["tracestate"] {
			t.Fatalf("flags %02x: wrote %q %q, Inject %q %q", byte(sc.TraceFlags()), tp, state,
				want["traceparent"], want["tracestate"])
		}
	}
}

// TestExportReusesItsBuffer: the span exporter writes each batch into the
// previous batch's array; a batch smaller than the one before must be
// sent alone, with nothing of the earlier one after it. A receiver
// decoding the generated OTLP types gets each span exactly once, in
// three posts.
func TestExportReusesItsBuffer(t *testing.T) {
	col := fixture.NewCollector(t)
	exp := &spanExporter{out: &otlpHTTP{url: col.URL + "/v1/traces", shown: col.URL, client: newHTTPClient(10 * time.Second)}}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tracer := tp.Tracer("test")
	names := []string{strings.Repeat("long-", 40), "short", "mid-" + strings.Repeat("x", 20)}
	for i, name := range names {
		_, span := tracer.Start(context.Background(), name)
		if i == 0 {
			span.SetAttributes(attribute.String("padding", strings.Repeat("p", 300)))
		}
		span.End()
	}
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if errs := col.Errors(); len(errs) > 0 {
		t.Fatalf("the receiver refused: %v", errs)
	}
	spans, _ := col.Spans()
	var got []string
	for _, s := range spans {
		got = append(got, s.Name)
	}
	if !slices.Equal(got, names) || len(col.Bodies()) != len(names) {
		t.Errorf("received %q in %d posts, want %q in %d", got, len(col.Bodies()), names, len(names))
	}
}

// TestErrorTypeOfNoError: a call that succeeded costs ErrorType nothing
// (it runs on every forwarded call with telemetry on).
func TestErrorTypeOfNoError(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = ErrorType(nil) }); n != 0 {
		t.Errorf("ErrorType(nil) allocates %v times", n)
	}
}

// TestPostIsDoneWithTheBody: once a receiver that reads the whole body has
// answered, post reports the transport done with the payload (the
// transport closes a body before it flushes its end, so before the
// receiver can have read it all), so that the exporter reuses the array for
// its next payload. A post that got this wrong would allocate every batch
// afresh, or write into an array the transport still reads.
func TestPostIsDoneWithTheBody(t *testing.T) {
	col := fixture.NewCollector(t)
	o := &otlpHTTP{url: col.URL + "/v1/traces", shown: col.URL, client: newHTTPClient(10 * time.Second)}
	for _, gz := range []bool{false, true} {
		o.gzip = gz
		// One empty ResourceSpans: a valid, empty export.
		done, err := o.post(context.Background(), []byte{0x0a, 0x00})
		if err != nil || !done {
			t.Errorf("gzip %v: post = done %v, %v; want done, no error", gz, done, err)
		}
	}
	if errs := col.Errors(); len(errs) > 0 {
		t.Fatalf("the receiver refused: %v", errs)
	}
}
