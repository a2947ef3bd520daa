package telemetry_test

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// envOf is an OTEL_* environment for telemetry.Options.Env.
func envOf(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestOffWithoutEndpoint(t *testing.T) {
	for _, env := range []func(string) string{
		envOf(),
		envOf("OTEL_SERVICE_NAME", "x"), // naming the service turns nothing on
		envOf("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1", "OTEL_SDK_DISABLED", "true"),
		envOf("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER", "none", "OTEL_METRICS_EXPORTER", "none"),
	} {
		tel, err := telemetry.New(context.Background(), telemetry.Options{Env: env})
		if err != nil || tel != nil {
			t.Fatalf("New = %v, %v; want nil, nil (off)", tel, err)
		}
	}
	// Off is a nil *Telemetry whose hooks do nothing.
	var tel *telemetry.Telemetry
	ctx, op := tel.Serve(context.Background(), telemetry.Request{Method: "tools/call"})
	if op != nil || telemetry.Serving(ctx) {
		t.Fatal("a nil Telemetry started an operation")
	}
	op.End("x")
	if _, op := telemetry.Forward(ctx, "a", telemetry.Request{Method: "tools/call"}); op != nil {
		t.Fatal("Forward without a served request started an operation")
	}
}

func TestUnsupportedConfigFails(t *testing.T) {
	for env, want := range map[string]string{
		"OTEL_EXPORTER_OTLP_PROTOCOL=grpc":               `OTEL_EXPORTER_OTLP_PROTOCOL="grpc" is not supported`,
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json":   `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="http/json" is not supported`,
		"OTEL_EXPORTER_OTLP_COMPRESSION=zstd":            `want gzip or none`,
		"OTEL_TRACES_EXPORTER=console":                   `this gateway exports otlp or none`,
		"OTEL_EXPORTER_OTLP_HEADERS=novalue":             `want key=value pairs`,
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=localhost:1": `want an http:// or https:// URL`,
	} {
		k, v, _ := strings.Cut(env, "=")
		tel, err := telemetry.New(context.Background(), telemetry.Options{
			Env: envOf("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318", k, v)})
		if !errors.Is(err, telemetry.ErrConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: New = %v, %v; want an ErrConfig saying %q", env, tel, err, want)
		}
	}
}

// agentTrace is the trace context an agent sends.
const (
	agentTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	agentSpanID  = "00f067aa0ba902b7"
)

// One served request and one forwarded, exported over OTLP/HTTP to a
// receiver decoding the generated protobuf types: names, kinds, parents,
// attributes, status, resource.
func TestSpansReachTheReceiver(t *testing.T) {
	col := fixture.NewCollector(t)
	t.Setenv("OTEL_SERVICE_NAME", "gw-under-test")
	tel, err := telemetry.New(context.Background(), telemetry.Options{Version: "1.2.3",
		Env: envOf("OTEL_EXPORTER_OTLP_ENDPOINT", col.URL, "OTEL_EXPORTER_OTLP_COMPRESSION", "gzip",
			"OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=a%20b")})
	if err != nil || tel == nil || !tel.Tracing() {
		t.Fatalf("New = %v, %v", tel, err)
	}
	ctx := tel.WithRequest(context.Background(), "7", "", "", "tcp")
	ctx, served := tel.Serve(ctx, telemetry.Request{Method: "tools/call", Tool: "echo", Session: "s1",
		Traceparent: "00-" + agentTraceID + "-" + agentSpanID + "-01"})
	_, fwd := telemetry.Forward(ctx, "fixture-a", telemetry.Request{Method: "tools/call", Tool: "echo_up"})
	tp, _ := fwd.Traceparent()
	fwd.End(telemetry.ToolError)
	served.End("")
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans, _ := col.Spans()
	if len(spans) != 2 {
		t.Fatalf("%d spans received, want 2 (errors: %v)", len(spans), col.Errors())
	}
	byName := map[string]*tracepb.Span{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	srv, cli := byName["tools/call echo"], byName["tools/call echo_up"]
	if srv == nil || cli == nil {
		t.Fatalf("span names %q, %q", spans[0].Name, spans[1].Name)
	}
	if hex.EncodeToString(srv.TraceId) != agentTraceID || hex.EncodeToString(srv.ParentSpanId) != agentSpanID {
		t.Errorf("served span in trace %x under %x, want the agent's %s under %s", srv.TraceId, srv.ParentSpanId, agentTraceID, agentSpanID)
	}
	if srv.Kind != tracepb.Span_SPAN_KIND_SERVER || cli.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("kinds %v, %v", srv.Kind, cli.Kind)
	}
	if hex.EncodeToString(cli.TraceId) != agentTraceID || string(cli.ParentSpanId) != string(srv.SpanId) {
		t.Errorf("forwarded span under %x, want the served span %x", cli.ParentSpanId, srv.SpanId)
	}
	if want := "00-" + agentTraceID + "-" + hex.EncodeToString(cli.SpanId) + "-01"; tp != want {
		t.Errorf("traceparent for the server %q, want %q", tp, want)
	}
	wantAttrs(t, srv.Attributes, map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo",
		"mcp.session.id": "s1", "jsonrpc.request.id": "7", "network.transport": "tcp", "gen_ai.operation.name": "execute_tool"})
	wantAttrs(t, cli.Attributes, map[string]string{"mcp_gateway.server.name": "fixture-a", "error.type": "tool_error"})
	if cli.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || srv.Status.GetCode() != tracepb.Status_STATUS_CODE_UNSET {
		t.Errorf("status %v, %v", cli.Status, srv.Status)
	}
	if srv.EndTimeUnixNano < srv.StartTimeUnixNano || srv.StartTimeUnixNano == 0 {
		t.Errorf("served span from %d to %d", srv.StartTimeUnixNano, srv.EndTimeUnixNano)
	}
	res := col.Resources()
	wantAttrs(t, res[0].Resource.Attributes, map[string]string{"service.name": "gw-under-test", "service.version": "1.2.3"})
}

func wantAttrs(t *testing.T, attrs []*commonpb.KeyValue, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, kv := range attrs {
		got[kv.Key] = kv.Value.GetStringValue()
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("attribute %s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}

// /metrics parses with Prometheus' own text parser, and its histogram
// counts exactly the operations ended.
func TestPrometheusText(t *testing.T) {
	tel, err := telemetry.New(context.Background(), telemetry.Options{Metrics: true, Env: envOf()})
	if err != nil || tel == nil {
		t.Fatalf("New = %v, %v", tel, err)
	}
	defer tel.Shutdown(context.Background())
	if err := tel.Observe(func() int { return 3 }, func() []telemetry.ServerState {
		return []telemetry.ServerState{{Name: "a", State: "ready", Restarts: 2}}
	}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		ctx, op := tel.Serve(context.Background(), telemetry.Request{Method: "tools/call", Tool: `we"ird`})
		_, fwd := telemetry.Forward(ctx, "a", telemetry.Request{Method: "tools/call", Tool: "x"})
		fwd.End("")
		errType := ""
		if i == 0 {
			errType = "-32602"
		}
		op.End(errType)
	}
	rec := httptest.NewRecorder()
	tel.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, rec.Body.String())
	}
	count := map[string]uint64{}
	for _, m := range fams["mcp_server_operation_duration_seconds"].GetMetric() {
		key := ""
		for _, l := range m.GetLabel() {
			key += l.GetName() + "=" + l.GetValue() + ";"
		}
		count[key] = m.GetHistogram().GetSampleCount()
	}
	want := map[string]uint64{
		`gen_ai_tool_name=we"ird;mcp_method_name=tools/call;`:                   4,
		`error_type=-32602;gen_ai_tool_name=we"ird;mcp_method_name=tools/call;`: 1,
	}
	if len(count) != len(want) {
		t.Errorf("served durations %v, want %v", count, want)
	}
	for k, v := range want {
		if count[k] != v {
			t.Errorf("served durations %v, want %v", count, want)
		}
	}
	if c := fams["mcp_client_operation_duration_seconds"].GetMetric(); len(c) != 1 || c[0].GetHistogram().GetSampleCount() != 5 {
		t.Errorf("forwarded durations %v", c)
	}
	if g := fams["mcp_gateway_sessions_open"].GetMetric(); len(g) != 1 || g[0].GetGauge().GetValue() != 3 {
		t.Errorf("sessions open %v", g)
	}
	if c := fams["mcp_gateway_server_restarts_total"].GetMetric(); len(c) != 1 || c[0].GetCounter().GetValue() != 2 {
		t.Errorf("restarts %v", c)
	}
	if g := fams["mcp_gateway_calls_in_flight"].GetMetric(); len(g) != 1 || g[0].GetGauge().GetValue() != 0 {
		t.Errorf("in flight %v", g)
	}
	// Two calls forwarded to a and one to b, not answered yet; then ended.
	ctx, op := tel.Serve(context.Background(), telemetry.Request{Method: "tools/call", Tool: "x"})
	var open []*telemetry.Op
	for _, server := range []string{"a", "b", "a"} {
		_, fwd := telemetry.Forward(ctx, server, telemetry.Request{Method: "tools/call", Tool: "x"})
		open = append(open, fwd)
	}
	if got := inFlight(t, tel); got["a"] != 2 || got["b"] != 1 || len(got) != 2 {
		t.Errorf("in flight during the calls: %v, want a=2 b=1", got)
	}
	for _, fwd := range open {
		fwd.End("")
	}
	op.End("")
	if got := inFlight(t, tel); got["a"] != 0 || got["b"] != 0 || len(got) != 2 {
		t.Errorf("in flight after the calls: %v, want a=0 b=0", got)
	}
}

// inFlight is /metrics' mcp_gateway_calls_in_flight by server.
func inFlight(t *testing.T, tel *telemetry.Telemetry) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	tel.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, rec.Body.String())
	}
	got := map[string]float64{}
	for _, m := range fams["mcp_gateway_calls_in_flight"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "mcp_gateway_server_name" {
				got[l.GetValue()] = m.GetGauge().GetValue()
			}
		}
	}
	return got
}

// The metrics exported over OTLP decode as MetricsData.
func TestMetricsReachTheReceiver(t *testing.T) {
	col := fixture.NewCollector(t)
	tel, err := telemetry.New(context.Background(), telemetry.Options{
		Env: envOf("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", col.URL+"/v1/metrics", "OTEL_METRIC_EXPORT_INTERVAL", "3600000")})
	if err != nil || tel == nil || tel.Tracing() {
		t.Fatalf("New = %v, %v (want metrics without traces)", tel, err)
	}
	_, op := tel.Serve(context.Background(), telemetry.Request{Method: "prompts/get", Prompt: "p"})
	op.End("")
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mds, _ := col.Metrics()
	found := false
	for _, md := range mds {
		for _, rm := range md.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if m.Name == "mcp.server.operation.duration" && m.Unit == "s" {
						dps := m.GetHistogram().GetDataPoints()
						if len(dps) != 1 || dps[0].Count != 1 || len(dps[0].BucketCounts) != len(dps[0].ExplicitBounds)+1 {
							t.Errorf("data points %v", dps)
						}
						found = true
					}
				}
			}
		}
	}
	if !found {
		t.Fatalf("no mcp.server.operation.duration among %d payloads (errors %v)", len(mds), col.Errors())
	}
}

// An export that fails names the receiver without its password.
func TestExportErrorHidesThePassword(t *testing.T) {
	ln := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusServiceUnavailable)
	}))
	defer ln.Close()
	u := strings.Replace(ln.URL, "http://", "http://user:pw-s3cret@", 1)
	tel, err := telemetry.New(context.Background(), telemetry.Options{Env: envOf("OTEL_EXPORTER_OTLP_ENDPOINT", u)})
	if err != nil {
		t.Fatal(err)
	}
	_, op := tel.Serve(context.Background(), telemetry.Request{Method: "ping"})
	op.End("")
	err = tel.Shutdown(context.Background())
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("Shutdown after a refused export: %v, want the 503", err)
	}
	if strings.Contains(err.Error(), "pw-s3cret") {
		t.Errorf("the export error shows the password: %v", err)
	}
}
