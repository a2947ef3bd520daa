package telemetry

import (
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// sameProto fails t when got is not want, showing both.
func sameProto(t *testing.T, what string, want, got proto.Message) {
	t.Helper()
	if !proto.Equal(want, got) {
		o := prototext.MarshalOptions{Multiline: true}
		t.Errorf("decoded %s differ:\nwant %s\ngot  %s", what, o.Format(want), o.Format(got))
	}
}

// The hand-written OTLP encoding (pbwire.go, otlp.go, otlpmetric.go),
// decoded with the generated protobuf types and compared whole with the
// message built field by field from the same data: every field, every
// attribute type (false, 0 and "" included: a oneof's choice is written
// even when its value is zero), lengths past one and two varint bytes.

// attrsAll are attributes of every type, zero values among them.
func attrsAll() []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.Bool("t", true), attribute.Bool("f", false),
		attribute.Int64("i", -3), attribute.Int64("zero", 0), attribute.Int64("big", 1<<40),
		attribute.Float64("x", 2.5), attribute.String("s", "é"), attribute.String("empty", ""),
		// KeyValue messages of 128 bytes ("k") and of a 128-byte
		// AnyValue ("j"): the first length that takes two bytes.
		attribute.String("k", strings.Repeat("k", 121)), attribute.String("j", strings.Repeat("j", 126)),
		attribute.String("long", strings.Repeat("l", 200)), attribute.String("longer", strings.Repeat("m", 20000)),
		attribute.BoolSlice("bs", []bool{true, false}), attribute.Int64Slice("is", []int64{0, 7}),
		attribute.Float64Slice("fs", []float64{0.5}), attribute.StringSlice("ss", []string{"a", ""}),
	}
}

func kvPB(attrs []attribute.KeyValue) []*commonpb.KeyValue {
	var out []*commonpb.KeyValue
	for _, kv := range attrs {
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: valuePB(kv.Value)})
	}
	return out
}

func valuePB(v attribute.Value) *commonpb.AnyValue {
	arr := func(vs []*commonpb.AnyValue) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
	}
	var vs []*commonpb.AnyValue
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.STRING:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.AsString()}}
	case attribute.BOOLSLICE:
		for _, e := range v.AsBoolSlice() {
			vs = append(vs, valuePB(attribute.BoolValue(e)))
		}
	case attribute.INT64SLICE:
		for _, e := range v.AsInt64Slice() {
			vs = append(vs, valuePB(attribute.Int64Value(e)))
		}
	case attribute.FLOAT64SLICE:
		for _, e := range v.AsFloat64Slice() {
			vs = append(vs, valuePB(attribute.Float64Value(e)))
		}
	case attribute.STRINGSLICE:
		for _, e := range v.AsStringSlice() {
			vs = append(vs, valuePB(attribute.StringValue(e)))
		}
	}
	return arr(vs)
}

// spanFlags takes the span's flags (field 16, newer than the generated
// types here) out of its unknown fields.
func spanFlags(t *testing.T, s *tracepb.Span) (uint32, bool) {
	t.Helper()
	b := s.ProtoReflect().GetUnknown()
	s.ProtoReflect().SetUnknown(nil)
	var flags uint32
	found := false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num != 16 || typ != protowire.Fixed32Type {
			t.Fatalf("unknown field %d (type %d) in a span", num, typ)
		}
		v, m := protowire.ConsumeFixed32(b[n:])
		if m < 0 {
			t.Fatal("bad fixed32")
		}
		flags, found, b = v, true, b[n+m:]
	}
	return flags, found
}

func TestEncodeSpans(t *testing.T) {
	tid := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	ts, _ := trace.ParseTraceState("k=v")
	sc := func(sid byte, remote bool, flags trace.TraceFlags) trace.SpanContext {
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{sid, 1}, TraceFlags: flags,
			TraceState: ts, Remote: remote})
	}
	resA := resource.NewWithAttributes("https://schema/a", attribute.String("service.name", "a"))
	resB := resource.NewSchemaless(attribute.String("service.name", "b"))
	scope1 := instrumentation.Scope{Name: "s1", Version: "1.0", SchemaURL: "https://schema/s1"}
	scope2 := instrumentation.Scope{Name: "s2"}
	start := time.Unix(1700000000, 123)
	stubs := tracetest.SpanStubs{
		{Name: "full", SpanContext: sc(1, false, trace.FlagsSampled), Parent: sc(2, true, trace.FlagsSampled),
			SpanKind: trace.SpanKindServer, StartTime: start, EndTime: start.Add(time.Second), Attributes: attrsAll(),
			Events: []sdktrace.Event{{Name: "ev", Time: start.Add(time.Millisecond), Attributes: attrsAll()[:3]}},
			Links:  []sdktrace.Link{{SpanContext: sc(3, false, 0), Attributes: attrsAll()[4:6]}},
			Status: sdktrace.Status{Code: codes.Error, Description: "-32602"}, DroppedAttributes: 1, DroppedEvents: 2,
			DroppedLinks: 300, Resource: resA, InstrumentationScope: scope1},
		{Name: "ok", SpanContext: sc(4, false, 0), Parent: sc(1, false, trace.FlagsSampled), SpanKind: trace.SpanKindClient,
			StartTime: start, EndTime: start, Status: sdktrace.Status{Code: codes.Ok}, Resource: resA, InstrumentationScope: scope2},
		{Name: "root", SpanContext: sc(5, false, trace.FlagsSampled), SpanKind: trace.SpanKindInternal,
			StartTime: start, EndTime: start, Resource: resB, InstrumentationScope: scope1},
		{Name: "second in s1", SpanContext: sc(6, false, 0), StartTime: start, EndTime: start, Resource: resA,
			InstrumentationScope: scope1},
	}
	var got tracepb.TracesData
	if err := proto.Unmarshal(encodeSpans(nil, stubs.Snapshots()), &got); err != nil {
		t.Fatal(err)
	}
	ids := func(c trace.SpanContext) ([]byte, []byte) {
		tid, sid := c.TraceID(), c.SpanID()
		return tid[:], sid[:]
	}
	spanPB := func(s tracetest.SpanStub) *tracepb.Span {
		tidb, sidb := ids(s.SpanContext)
		out := &tracepb.Span{TraceId: tidb, SpanId: sidb, TraceState: "k=v", Name: s.Name,
			Kind:              tracepb.Span_SpanKind(s.SpanKind),
			StartTimeUnixNano: uint64(s.StartTime.UnixNano()), EndTimeUnixNano: uint64(s.EndTime.UnixNano()),
			Attributes: kvPB(s.Attributes), DroppedAttributesCount: uint32(s.DroppedAttributes),
			DroppedEventsCount: uint32(s.DroppedEvents), DroppedLinksCount: uint32(s.DroppedLinks),
			Status: &tracepb.Status{Message: s.Status.Description}}
		if s.Parent.IsValid() {
			_, out.ParentSpanId = ids(s.Parent)
		}
		for _, e := range s.Events {
			out.Events = append(out.Events, &tracepb.Span_Event{TimeUnixNano: uint64(e.Time.UnixNano()), Name: e.Name,
				Attributes: kvPB(e.Attributes)})
		}
		for _, l := range s.Links {
			ltid, lsid := ids(l.SpanContext)
			out.Links = append(out.Links, &tracepb.Span_Link{TraceId: ltid, SpanId: lsid, TraceState: "k=v",
				Attributes: kvPB(l.Attributes)})
		}
		switch s.Status.Code {
		case codes.Ok:
			out.Status.Code = tracepb.Status_STATUS_CODE_OK
		case codes.Error:
			out.Status.Code = tracepb.Status_STATUS_CODE_ERROR
		default:
			out.Status = nil // an unset status is an empty message, left out
		}
		return out
	}
	scopePB := func(s instrumentation.Scope) *commonpb.InstrumentationScope {
		return &commonpb.InstrumentationScope{Name: s.Name, Version: s.Version}
	}
	want := &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{
		{Resource: &resourcepb.Resource{Attributes: kvPB(resA.Attributes())}, SchemaUrl: "https://schema/a",
			ScopeSpans: []*tracepb.ScopeSpans{
				{Scope: scopePB(scope1), SchemaUrl: scope1.SchemaURL, Spans: []*tracepb.Span{spanPB(stubs[0]), spanPB(stubs[3])}},
				{Scope: scopePB(scope2), Spans: []*tracepb.Span{spanPB(stubs[1])}},
			}},
		{Resource: &resourcepb.Resource{Attributes: kvPB(resB.Attributes())},
			ScopeSpans: []*tracepb.ScopeSpans{{Scope: scopePB(scope1), SchemaUrl: scope1.SchemaURL, Spans: []*tracepb.Span{spanPB(stubs[2])}}}},
	}}
	// Flags: the W3C flags, bit 8 (the parent's remoteness is known) and
	// bit 9 (the parent is remote).
	wantFlags := map[string]uint32{"full": 1 | 1<<8 | 1<<9, "ok": 1 << 8, "root": 1 | 1<<8, "second in s1": 1 << 8}
	for _, rs := range got.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				if f, ok := spanFlags(t, s); !ok || f != wantFlags[s.Name] {
					t.Errorf("span %q flags %#x (present %v), want %#x", s.Name, f, ok, wantFlags[s.Name])
				}
			}
		}
	}
	sameProto(t, "spans", want, &got)
}

func TestEncodeMetrics(t *testing.T) {
	t0, t1 := time.Unix(1700000000, 5), time.Unix(1700000060, 7)
	set := attribute.NewSet(attribute.String("mcp.method.name", "tools/call"), attribute.Bool("ok", false))
	res := resource.NewWithAttributes("https://schema/r", attribute.String("service.name", "gw"))
	rm := &metricdata.ResourceMetrics{Resource: res, ScopeMetrics: []metricdata.ScopeMetrics{
		{Scope: instrumentation.Scope{Name: "gw", Version: "1", SchemaURL: "https://schema/s"}, Metrics: []metricdata.Metrics{
			{Name: "g", Description: "a gauge", Unit: "1", Data: metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{
				{Attributes: set, StartTime: t0, Time: t1, Value: -2}, {StartTime: t0, Time: t1, Value: 0}}}},
			{Name: "c", Unit: "{call}", Data: metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true,
				DataPoints: []metricdata.DataPoint[int64]{{Attributes: set, StartTime: t0, Time: t1, Value: 5}}}},
			{Name: "u", Data: metricdata.Sum[int64]{Temporality: metricdata.DeltaTemporality,
				DataPoints: []metricdata.DataPoint[int64]{{StartTime: t0, Time: t1, Value: 1}}}},
			{Name: "h", Unit: "s", Data: metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality,
				DataPoints: []metricdata.HistogramDataPoint[float64]{
					{Attributes: set, StartTime: t0, Time: t1, Count: 3, Sum: 1.5, Bounds: []float64{0.1, 1},
						BucketCounts: []uint64{1, 1, 1}, Min: metricdata.NewExtrema(0.05), Max: metricdata.NewExtrema(1.2)},
					{StartTime: t0, Time: t1, Count: 0, Bounds: []float64{0.1}, BucketCounts: []uint64{0, 0}},
				}}},
		}},
		{Scope: instrumentation.Scope{Name: "other"}},
	}}
	var got metricspb.MetricsData
	if err := proto.Unmarshal(encodeMetrics(rm), &got); err != nil {
		t.Fatal(err)
	}
	attrs := kvPB(set.ToSlice())
	f := func(v float64) *float64 { return &v }
	n0, n1 := uint64(t0.UnixNano()), uint64(t1.UnixNano())
	want := &metricspb.MetricsData{ResourceMetrics: []*metricspb.ResourceMetrics{{
		Resource: &resourcepb.Resource{Attributes: kvPB(res.Attributes())}, SchemaUrl: "https://schema/r",
		ScopeMetrics: []*metricspb.ScopeMetrics{
			{Scope: &commonpb.InstrumentationScope{Name: "gw", Version: "1"}, SchemaUrl: "https://schema/s", Metrics: []*metricspb.Metric{
				{Name: "g", Description: "a gauge", Unit: "1", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{
					{Attributes: attrs, StartTimeUnixNano: n0, TimeUnixNano: n1, Value: &metricspb.NumberDataPoint_AsInt{AsInt: -2}},
					{StartTimeUnixNano: n0, TimeUnixNano: n1, Value: &metricspb.NumberDataPoint_AsInt{AsInt: 0}}}}}},
				{Name: "c", Unit: "{call}", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{IsMonotonic: true,
					AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
					DataPoints: []*metricspb.NumberDataPoint{{Attributes: attrs, StartTimeUnixNano: n0, TimeUnixNano: n1,
						Value: &metricspb.NumberDataPoint_AsInt{AsInt: 5}}}}}},
				{Name: "u", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{
					AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA,
					DataPoints: []*metricspb.NumberDataPoint{{StartTimeUnixNano: n0, TimeUnixNano: n1,
						Value: &metricspb.NumberDataPoint_AsInt{AsInt: 1}}}}}},
				{Name: "h", Unit: "s", Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{
					AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
					DataPoints: []*metricspb.HistogramDataPoint{
						{Attributes: attrs, StartTimeUnixNano: n0, TimeUnixNano: n1, Count: 3, Sum: f(1.5),
							BucketCounts: []uint64{1, 1, 1}, ExplicitBounds: []float64{0.1, 1}, Min: f(0.05), Max: f(1.2)},
						{StartTimeUnixNano: n0, TimeUnixNano: n1, Sum: f(0), BucketCounts: []uint64{0, 0}, ExplicitBounds: []float64{0.1}},
					}}}},
			}},
			{Scope: &commonpb.InstrumentationScope{Name: "other"}},
		}}}}
	sameProto(t, "metrics", want, &got)
}
