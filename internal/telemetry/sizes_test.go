package telemetry_test

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// Interceptor decisions reach the receiver as events of the served span,
// split at the last colon (a name may hold one), and nothing is recorded
// for a context without a served request; a pass is no event.
func TestDecisionsAreSpanEvents(t *testing.T) {
	col := fixture.NewCollector(t)
	tel, err := telemetry.New(context.Background(), telemetry.Options{Env: envOf("OTEL_EXPORTER_OTLP_ENDPOINT", col.URL)})
	if err != nil || !tel.Tracing() {
		t.Fatalf("New = %v, %v", tel, err)
	}
	telemetry.Decisions(context.Background(), []string{"x:deny"}) // no served request: nothing
	ctx, op := tel.Serve(context.Background(), telemetry.Request{Method: "tools/call", Tool: "echo"})
	telemetry.Decisions(ctx, []string{"x-tools:alpha:rewrite", "guard:deny"})
	telemetry.Passes(ctx, []string{"quiet"}) // counted only: no event
	op.End("")
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans, _ := col.Spans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	evs := spans[0].Events
	if len(evs) != 2 {
		t.Fatalf("%d events, want 2: %v", len(evs), evs)
	}
	for i, want := range []map[string]string{
		{"mcp_gateway.interceptor.name": "x-tools:alpha", "mcp_gateway.interceptor.outcome": "rewrite"},
		{"mcp_gateway.interceptor.name": "guard", "mcp_gateway.interceptor.outcome": "deny"},
	} {
		if evs[i].Name != "mcp_gateway.interceptor.decision" {
			t.Errorf("event %d named %q", i, evs[i].Name)
		}
		wantAttrs(t, evs[i].Attributes, want)
	}
}

// The size and decision metrics in /metrics: exact counts, and histogram
// buckets that are cumulative (each le bucket counts every sample at or
// below it), with samples spread over several buckets so that a
// per-bucket count would differ.
func TestSizesAndDecisionsInPrometheus(t *testing.T) {
	tel, err := telemetry.New(context.Background(), telemetry.Options{Metrics: true, Env: envOf()})
	if err != nil || tel == nil {
		t.Fatalf("New = %v, %v", tel, err)
	}
	defer tel.Shutdown(context.Background())
	items := []int{0, 3, 3, 30, 700, 6000}
	for _, n := range items {
		_, op := tel.Serve(context.Background(), telemetry.Request{Method: "tools/list"})
		op.Items(n)
		op.End("")
	}
	ctx, op := tel.Serve(context.Background(), telemetry.Request{Method: "tools/call", Tool: "t"})
	op.Bytes(100, -1) // the result unknown: not recorded
	telemetry.Decisions(ctx, []string{"g:deny"})
	telemetry.Passes(ctx, []string{"p"})
	op.End("")
	ctx, op = tel.Serve(context.Background(), telemetry.Request{Method: "tools/call", Tool: "t"})
	op.Bytes(5000, 20)
	telemetry.Decisions(ctx, []string{"g:deny", "p:replace"})
	op.End("")
	// The same interceptor, another outcome: its own series.
	ctx, op = tel.Serve(context.Background(), telemetry.Request{Method: "tools/call", Tool: "t"})
	telemetry.Decisions(ctx, []string{"g:rewrite"})
	telemetry.Passes(ctx, []string{"p", "q"})
	op.End("")
	telemetry.Passes(context.Background(), []string{"p"}) // no served request: nothing

	rec := httptest.NewRecorder()
	tel.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, rec.Body.String())
	}
	lists := fams["mcp_gateway_list_size"].GetMetric()
	if len(lists) != 1 {
		t.Fatalf("list sizes %v\n%s", lists, rec.Body.String())
	}
	h := lists[0].GetHistogram()
	if h.GetSampleCount() != uint64(len(items)) || h.GetSampleSum() != 6736 {
		t.Errorf("list sizes: count %d sum %v, want %d and 6736", h.GetSampleCount(), h.GetSampleSum(), len(items))
	}
	for _, b := range h.GetBucket() {
		var want uint64
		for _, n := range items {
			if float64(n) <= b.GetUpperBound() {
				want++
			}
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("bucket le=%v counts %d, want %d (all samples at or below it)", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	if bs := h.GetBucket(); len(bs) == 0 || !math.IsInf(bs[len(bs)-1].GetUpperBound(), 1) {
		t.Errorf("no +Inf bucket: %v", bs)
	}
	size := map[string]uint64{}
	for _, m := range fams["mcp_gateway_message_size_bytes"].GetMetric() {
		size[label(m, "mcp_method_name")+"|"+label(m, "mcp_gateway_direction")] = m.GetHistogram().GetSampleCount()
	}
	if size["tools/call|in"] != 2 || size["tools/call|out"] != 1 || len(size) != 2 {
		t.Errorf("message sizes %v, want 2 in and 1 out", size)
	}
	dec := map[string]float64{}
	for _, m := range fams["mcp_gateway_interceptor_decisions_total"].GetMetric() {
		dec[label(m, "mcp_gateway_interceptor_name")+":"+label(m, "mcp_gateway_interceptor_outcome")] = m.GetCounter().GetValue()
	}
	if dec["g:deny"] != 2 || dec["p:replace"] != 1 || dec["g:rewrite"] != 1 || dec["p:pass"] != 2 || dec["q:pass"] != 1 || len(dec) != 5 {
		t.Errorf("decisions %v, want g:deny 2, p:replace 1, g:rewrite 1, p:pass 2, q:pass 1", dec)
	}
}

// label is m's value of the label name.
func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
