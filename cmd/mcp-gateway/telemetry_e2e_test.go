package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// headerRT adds a header to every request (a planted secret).
type headerRT struct {
	name, value string
	base        http.RoundTripper
}

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return h.base.RoundTrip(r)
}

// TestTelemetryEndToEnd runs the real gateway with OTLP pointed at a
// receiver decoding the OTLP protobuf types, and --metrics: a Go SDK
// client's calls with the agent's traceparent in _meta give one trace (the
// agent's span, the gateway's server span, its client span per forwarded
// request), the stdio and the url server each get the gateway's client
// span as the parent in their request's _meta, a failing call has
// error.type, /metrics parses, counts exactly the calls made and refuses a
// request without the token, a restart shows in it and as a span, the audit
// line carries the call's trace and span ids, and no planted secret
// (argument, result, header, env value) appears in any span, metric or log
// line.
func TestTelemetryEndToEnd(t *testing.T) {
	col := fixture.NewCollector(t)
	stamp := fmt.Sprint(time.Now().UnixNano())
	secretArg, secretHdr, secretEnv := "arg-secret-"+stamp, "hdr-secret-"+stamp, "env-secret-"+stamp
	remoteKey := "rk-" + stamp
	rem := fixture.StartRemote(t, fixture.RemoteOptions{Token: remoteKey, Name: "weather"})
	sb := newTestbox(t)
	sb.env = append(sb.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+col.URL, "OTEL_BSP_SCHEDULE_DELAY=50",
		"OTEL_METRIC_EXPORT_INTERVAL=200", "OTEL_SERVICE_NAME=gw-e2e", "WEATHER_REMOTE_KEY="+remoteKey)
	cfg := mcpConfig(t, map[string]any{
		"local": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "local", Verbatim: true}),
			"env": map[string]string{"LOCAL_API_KEY": secretEnv}},
		"weather": map[string]any{"url": rem.URL(),
			"headers": map[string]string{"Authorization": "Bearer ${WEATHER_REMOTE_KEY}"}},
	})
	// An interceptor that denies local's echo with long arguments: its
	// decision shows as an event of the call's span and in a counter; the
	// echo call it lets through, in the counter alone.
	icpt := filepath.Join(sb.dir, "interceptors.json")
	if err := os.WriteFile(icpt, []byte(`{"interceptors":[{"name":"short-args","type":"sizeGuard",`+
		`"servers":["local"],"tools":["echo"],"maxArgumentBytes":200}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	metricsPort := freePort(t)
	if r := sb.launch(cfg, "--metrics", "--metrics-listen", fmt.Sprintf("127.0.0.1:%d", metricsPort),
		"--interceptors", icpt); r.code != 0 {
		t.Fatalf("launch exited %d\nstdout: %s\nstderr: %s\nlog:\n%s", r.code, r.stdout, r.stderr, sb.log())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: sb.url() + "/mcp",
		HTTPClient: &http.Client{Transport: headerRT{"X-Api-Key", secretHdr, fixture.Bearer(sb.token, http.DefaultTransport)}}}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, sb.log())
	}
	defer cs.Close()

	const agentTrace, agentSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args,
			Meta: mcp.Meta{"traceparent": "00-" + agentTrace + "-" + agentSpan + "-01"}})
		if err != nil {
			t.Fatalf("call %s: %v\nlog:\n%s", name, err, sb.log())
		}
		return res
	}
	call("echo", map[string]any{"text": secretArg})
	if res := call("fail", map[string]any{"message": secretArg}); !res.IsError {
		t.Fatal("fail did not fail")
	}
	call("weather_echo", map[string]any{"text": secretArg})
	remoteParent := rem.Traceparent()
	// What the stdio server read: the echo call's _meta.
	seen := call(fixture.ParamsSeenTool, map[string]any{"method": "tools/call"})
	var params []struct {
		Name string `json:"name"`
		Meta struct {
			Traceparent string `json:"traceparent"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal([]byte(text(t, seen)), &params); err != nil || len(params) == 0 {
		t.Fatalf("params seen %q: %v", text(t, seen), err)
	}
	localParent := params[0].Meta.Traceparent

	// The spans: each call's server span and the client span of its
	// forward, in the agent's trace.
	// params_seen too: its client span is in the agent's trace, and is
	// checked against its served span, which may come in a later batch.
	want := []string{"tools/call echo", "tools/call fail", "tools/call weather_echo", "tools/call params_seen"}
	var spans []*tracepb.Span
	deadline := time.After(60 * time.Second)
	for {
		var changed <-chan struct{}
		spans, changed = col.Spans()
		if countNamed(spans, want) {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("spans received: %v (refused: %v)\nlog:\n%s", spanNames(spans), col.Errors(), sb.log())
		}
	}
	byID := map[string]*tracepb.Span{}
	for _, s := range spans {
		byID[string(s.SpanId)] = s
	}
	attr := func(s *tracepb.Span, key string) string {
		for _, kv := range s.Attributes {
			if kv.Key == key {
				return kv.Value.GetStringValue()
			}
		}
		return ""
	}
	servedBy := map[string]*tracepb.Span{}
	clientOf := map[string]*tracepb.Span{} // by the served span's tool
	for _, s := range spans {
		if hex.EncodeToString(s.TraceId) != agentTrace {
			continue
		}
		switch s.Kind {
		case tracepb.Span_SPAN_KIND_SERVER:
			if hex.EncodeToString(s.ParentSpanId) != agentSpan {
				t.Errorf("served span %q under %x, want the agent's span %s", s.Name, s.ParentSpanId, agentSpan)
			}
			servedBy[attr(s, "gen_ai.tool.name")] = s
		case tracepb.Span_SPAN_KIND_CLIENT:
			parent := byID[string(s.ParentSpanId)]
			if parent == nil || parent.Kind != tracepb.Span_SPAN_KIND_SERVER {
				t.Errorf("client span %q has no served span as its parent", s.Name)
				continue
			}
			clientOf[attr(parent, "gen_ai.tool.name")] = s
		}
	}
	for tool, server := range map[string]string{"echo": "local", "fail": "local", "weather_echo": "weather"} {
		s, c := servedBy[tool], clientOf[tool]
		if s == nil || c == nil {
			t.Fatalf("%s: served span %v, client span %v (spans %v)", tool, s != nil, c != nil, spanNames(spans))
		}
		if attr(s, "mcp.method.name") != "tools/call" || attr(s, "mcp.session.id") != cs.ID() || attr(s, "jsonrpc.request.id") == "" {
			t.Errorf("%s: served span attributes %v", tool, s.Attributes)
		}
		if attr(c, "mcp_gateway.server.name") != server {
			t.Errorf("%s: client span's server %q, want %q", tool, attr(c, "mcp_gateway.server.name"), server)
		}
	}
	if got := attr(servedBy["fail"], "error.type"); got != "tool_error" {
		t.Errorf("the failing call's error.type %q, want tool_error", got)
	}
	if got := attr(servedBy["echo"], "error.type"); got != "" {
		t.Errorf("the echo call has error.type %q", got)
	}
	// The servers' parents: the gateway's client spans.
	if want := "00-" + agentTrace + "-" + hex.EncodeToString(clientOf["echo"].SpanId) + "-01"; localParent != want {
		t.Errorf("the stdio server read traceparent %q, want the gateway's client span %q", localParent, want)
	}
	if want := "00-" + agentTrace + "-" + hex.EncodeToString(clientOf["weather_echo"].SpanId) + "-01"; remoteParent != want {
		t.Errorf("the url server read traceparent %q, want the gateway's client span %q", remoteParent, want)
	}

	// The audit line of the echo call leads to its served span (audit
	// lines are written in batches: wait for it).
	type auditLine struct {
		Event, Tool string
		TraceID     string `json:"trace_id"`
		SpanID      string `json:"span_id"`
	}
	var echoAudit *auditLine
	pollUntil(t, 30*time.Second, "echo's audit line", func() bool {
		for _, line := range strings.Split(sb.log(), "\n") {
			var rec auditLine
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Event == "call" && rec.Tool == "echo" {
				echoAudit = &rec
				return true
			}
		}
		return false
	})
	if echoAudit.TraceID != agentTrace || echoAudit.SpanID != hex.EncodeToString(servedBy["echo"].SpanId) {
		t.Errorf("echo's audit line: trace %q span %q, want %s and the served span %x", echoAudit.TraceID,
			echoAudit.SpanID, agentTrace, servedBy["echo"].SpanId)
	}

	// A denied call: an event on its served span, in its own trace.
	const deniedTrace = "1af7651916cd43dd8448eb211c80319d"
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": strings.Repeat("x", 300)},
		Meta: mcp.Meta{"traceparent": "00-" + deniedTrace + "-" + agentSpan + "-01"}})
	if err != nil || !res.IsError || !strings.Contains(text(t, res), `denied by interceptor "short-args"`) {
		t.Fatalf("long echo: %v %v, want a denial", res, err)
	}
	deniedSpan := func(spans []*tracepb.Span) *tracepb.Span {
		for _, s := range spans {
			if hex.EncodeToString(s.TraceId) == deniedTrace && s.Kind == tracepb.Span_SPAN_KIND_SERVER {
				return s
			}
		}
		return nil
	}
	deniedDeadline := time.After(60 * time.Second)
	var denied *tracepb.Span
	for denied == nil {
		spans, changed := col.Spans()
		if denied = deniedSpan(spans); denied != nil {
			break
		}
		select {
		case <-changed:
		case <-deniedDeadline:
			t.Fatalf("no span of the denied call among %v", spanNames(spans))
		}
	}
	if evs := denied.Events; len(evs) != 1 || evs[0].Name != "mcp_gateway.interceptor.decision" {
		t.Errorf("denied call's span events %v, want one interceptor decision", evs)
	} else {
		got := map[string]string{}
		for _, kv := range evs[0].Attributes {
			got[kv.Key] = kv.Value.GetStringValue()
		}
		if got["mcp_gateway.interceptor.name"] != "short-args" || got["mcp_gateway.interceptor.outcome"] != "deny" {
			t.Errorf("decision event attributes %v", got)
		}
	}
	if servedBy["echo"] != nil && len(servedBy["echo"].Events) != 0 {
		t.Errorf("the allowed echo call's span has events %v", servedBy["echo"].Events)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}

	// /metrics: the token, the text format, exact counts.
	resp, err := http.Get(sb.url() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /metrics without the token: %d, want 401", resp.StatusCode)
	}
	fams, body := scrape(t, sb)
	// The scraper's listener: the same page, without the token.
	resp, err = http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(plain), "mcp_server_operation_duration_seconds_count") {
		t.Errorf("GET /metrics on --metrics-listen: %d\n%s", resp.StatusCode, plain)
	}
	served := histCounts(fams["mcp_server_operation_duration_seconds"])
	for key, n := range map[string]uint64{
		"tools/call|echo|":           1,
		"tools/call|fail|tool_error": 1,
		"tools/call|weather_echo|":   1,
		"tools/call|params_seen|":    1,
	} {
		if served[key] != n {
			t.Errorf("served %s: %d, want %d (all %v)", key, served[key], n, served)
		}
	}
	decisions := map[string]float64{}
	for _, m := range fams["mcp_gateway_interceptor_decisions_total"].GetMetric() {
		decisions[label(m, "mcp_gateway_interceptor_name")+":"+label(m, "mcp_gateway_interceptor_outcome")] = m.GetCounter().GetValue()
	}
	// The one echo call it let through is a pass; local's other tools
	// (fail, params_seen) are out of its scope and weather's not its.
	if len(decisions) != 2 || decisions["short-args:deny"] != 1 || decisions["short-args:pass"] != 1 {
		t.Errorf("interceptor decisions %v, want short-args:deny 1, short-args:pass 1", decisions)
	}
	if l := fams["mcp_gateway_list_size"].GetMetric(); len(l) != 1 || label(l[0], "mcp_method_name") != "tools/list" ||
		l[0].GetHistogram().GetSampleCount() != 1 || l[0].GetHistogram().GetSampleSum() != float64(len(tools.Tools)) {
		t.Errorf("list sizes %v, want one tools/list of %d", l, len(tools.Tools))
	}
	sizes := map[string]uint64{}
	for _, m := range fams["mcp_gateway_message_size_bytes"].GetMetric() {
		sizes[label(m, "mcp_method_name")+"|"+label(m, "mcp_gateway_direction")] = m.GetHistogram().GetSampleCount()
	}
	// Five calls so far on the raw path, each with params and a result.
	if sizes["tools/call|in"] != 5 || sizes["tools/call|out"] != 5 {
		t.Errorf("message sizes %v, want 5 in and 5 out for tools/call", sizes)
	}
	// A 2026-era agent (the Go SDK client's first choice) has no session.
	open := 1.0
	if cs.ID() == "" {
		open = 0
	}
	if g := fams["mcp_gateway_sessions_open"].GetMetric(); len(g) != 1 || g[0].GetGauge().GetValue() != open {
		t.Errorf("sessions open: %v", g)
	}

	// A restart shows in the restarts counter.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "crash", Arguments: map[string]any{"code": 3}}); err == nil {
		t.Fatal("crash call succeeded")
	}
	pollUntil(t, 60*time.Second, "local's restart in /metrics", func() bool {
		fams, _ := scrape(t, sb)
		for _, m := range fams["mcp_gateway_server_restarts_total"].GetMetric() {
			if label(m, "mcp_gateway_server_name") == "local" && m.GetCounter().GetValue() == 1 {
				return true
			}
		}
		return false
	})

	// ... and as a span of local's restart.
	restartSpan := func(spans []*tracepb.Span) bool {
		for _, s := range spans {
			if s.Name == "mcp_gateway server start" && attr(s, "mcp_gateway.server.name") == "local" {
				for _, kv := range s.Attributes {
					if kv.Key == "mcp_gateway.server.restart" && kv.Value.GetBoolValue() {
						return true
					}
				}
			}
		}
		return false
	}
	restartDeadline := time.After(60 * time.Second)
	for {
		spans, changed := col.Spans()
		if restartSpan(spans) {
			break
		}
		select {
		case <-changed:
		case <-restartDeadline:
			t.Fatalf("no span of local's restart among %v", spanNames(spans))
		}
	}

	// Flush (the gateway exports what it holds as it stops), then look
	// for the planted secrets everywhere.
	sb.stop()
	everything := []string{body, sb.log()}
	for _, b := range col.Bodies() {
		everything = append(everything, string(b))
	}
	for i, text := range everything {
		for _, secret := range []string{secretArg, secretHdr, secretEnv, sb.token, remoteKey} {
			if strings.Contains(text, secret) {
				t.Errorf("output %d (of %d: /metrics, log, OTLP payloads) holds a planted secret %.10s...", i, len(everything), secret)
			}
		}
	}
	if errs := col.Errors(); len(errs) > 0 {
		t.Errorf("the receiver refused: %v", errs)
	}
}

// countNamed reports whether spans hold a served span of each name and a
// client span (named after the server's tool) for each.
func countNamed(spans []*tracepb.Span, names []string) bool {
	served, clients := map[string]bool{}, 0
	for _, s := range spans {
		switch s.Kind {
		case tracepb.Span_SPAN_KIND_SERVER:
			served[s.Name] = true
		case tracepb.Span_SPAN_KIND_CLIENT:
			clients++
		}
	}
	for _, name := range names {
		if !served[name] {
			return false
		}
	}
	return clients >= len(names)
}

func spanNames(spans []*tracepb.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Kind.String()+":"+s.Name)
	}
	return out
}

// scrape gets /metrics with the token and parses it with Prometheus' parser.
func scrape(t *testing.T, sb *testbox) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, sb.url()+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+sb.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, b)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, b)
	}
	return fams, string(b)
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// histCounts is a histogram's sample counts by "method|tool|error.type".
func histCounts(f *dto.MetricFamily) map[string]uint64 {
	out := map[string]uint64{}
	for _, m := range f.GetMetric() {
		key := label(m, "mcp_method_name") + "|" + label(m, "gen_ai_tool_name") + "|" + label(m, "error_type")
		out[key] += m.GetHistogram().GetSampleCount()
	}
	return out
}

// TestTelemetryStdio: in stdio mode the served spans of a call and a list
// (and a ping, on the 2025 era that has it), exported over OTLP, carry
// their JSON-RPC ids and the pipe transport, in the agent's trace: on
// either era of the protocol.
func TestTelemetryStdio(t *testing.T) {
	for _, era := range []string{"2026", "2025"} {
		t.Run(era, func(t *testing.T) { telemetryStdio(t, era == "2025") })
	}
}

func telemetryStdio(t *testing.T, legacy bool) {
	col := fixture.NewCollector(t)
	dir := t.TempDir()
	cfg := mcpConfig(t, map[string]any{
		"local": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "local", Verbatim: true})},
	})
	cmd := exec.Command(gatewayBin, "stdio", "--config", cfg,
		"--log-file", filepath.Join(dir, "stdio.log"), "--catalog", filepath.Join(dir, "catalog.json"),
		"--servers-dir", filepath.Join(dir, "servers"))
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="+col.URL, "OTEL_BSP_SCHEDULE_DELAY=50")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "desktop-app", Version: "1"}, nil)
	var opts *mcp.ClientSessionOptions
	if legacy {
		opts = legacySession()
	}
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, opts)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { killSession(cmd.Process.Pid) })
	const agentTrace = "2af7651916cd43dd8448eb211c80319e"
	meta := mcp.Meta{"traceparent": "00-" + agentTrace + "-b7ad6b7169203331-01"}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"},
		Meta: meta}); err != nil {
		t.Fatalf("call echo: %v", err)
	}
	// A list and a ping have no params the gateway forwards: their spans
	// carry their ids all the same.
	want := []string{"tools/call echo", "tools/list"}
	if _, err := cs.ListTools(ctx, &mcp.ListToolsParams{Meta: meta}); err != nil {
		t.Fatalf("list tools: %v", err)
	}
	if legacy {
		if err := cs.Ping(ctx, &mcp.PingParams{Meta: meta}); err != nil {
			t.Fatalf("ping: %v", err)
		}
		want = append(want, "ping")
	}
	if err := cs.Close(); err != nil { // the gateway exports what it holds as it stops
		t.Errorf("close: %v", err)
	}
	served := map[string]map[string]string{} // attributes by span name
	for _, s := range func() []*tracepb.Span { s, _ := col.Spans(); return s }() {
		if hex.EncodeToString(s.TraceId) == agentTrace && s.Kind == tracepb.Span_SPAN_KIND_SERVER {
			got := map[string]string{}
			for _, kv := range s.Attributes {
				got[kv.Key] = kv.Value.GetStringValue()
			}
			served[s.Name] = got
		}
	}
	for _, name := range want {
		got := served[name]
		if got == nil {
			t.Errorf("no served span %q in the agent's trace (spans %v, errors %v)", name, served, col.Errors())
			continue
		}
		if got["jsonrpc.request.id"] == "" || got["network.transport"] != "pipe" {
			t.Errorf("%s: served span attributes %v, want a request id, pipe", name, got)
		}
	}
	if got := served["tools/call echo"]["gen_ai.tool.name"]; got != "echo" {
		t.Errorf("the call's gen_ai.tool.name %q", got)
	}
}

// TestTelemetryTypeScript: the TypeScript SDK client sends a traceparent in
// a call's _meta; the gateway's served span is its child, the forwarded
// call's client span the served span's, and the server reads that client
// span as its parent in _meta: one trace from the agent to the server, for
// a stdio server and for a url server alike.
func TestTelemetryTypeScript(t *testing.T) {
	ts := tsHarness(t)
	col := fixture.NewCollector(t)
	rem := fixture.StartRemote(t, fixture.RemoteOptions{Token: "rk-ts", Name: "weather"})
	sb := newTestbox(t)
	sb.env = append(sb.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+col.URL, "OTEL_BSP_SCHEDULE_DELAY=50", "WEATHER_REMOTE_KEY=rk-ts")
	sb.mustLaunch(mcpConfig(t, map[string]any{
		"local": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "local", Verbatim: true})},
		"weather": map[string]any{"url": rem.URL(),
			"headers": map[string]string{"Authorization": "Bearer ${WEATHER_REMOTE_KEY}"}},
	}))
	node := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("node", append([]string{filepath.Join(ts, "client.mjs"), sb.url() + "/mcp", sb.token}, args...)...)
		cmd.Dir = ts
		out, err := cmd.Output()
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("client.mjs %v: %v\n%s\nlog:\n%s", args, err, ee.Stderr, sb.log())
		} else if err != nil {
			t.Fatalf("client.mjs %v: %v", args, err)
		}
		return string(out)
	}
	// localParent is the traceparent the stdio server read in the last
	// tools/call's _meta.
	localParent := func() string {
		t.Helper()
		var seen struct {
			Result struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(node(fixture.ParamsSeenTool, `{"method":"tools/call"}`)), &seen); err != nil || len(seen.Result.Content) != 1 {
			t.Fatalf("params_seen: %v %+v", err, seen)
		}
		var params []struct {
			Meta struct {
				Traceparent string `json:"traceparent"`
			} `json:"_meta"`
		}
		if err := json.Unmarshal([]byte(seen.Result.Content[0].Text), &params); err != nil || len(params) == 0 {
			t.Fatalf("params seen %q: %v", seen.Result.Content[0].Text, err)
		}
		return params[0].Meta.Traceparent
	}
	for _, c := range []struct {
		server, tool, agentTrace, agentSpan string
		read                                func() string
	}{
		{"local", "echo", "3af7651916cd43dd8448eb211c80319f", "c7ad6b7169203331", localParent},
		{"weather", "weather_echo", "4bf8762a27de54ee9559fc322d91420a", "d8be7c827a314442", rem.Traceparent},
	} {
		node(c.tool, `{"text":"hi"}`, `--meta={"traceparent":"00-`+c.agentTrace+`-`+c.agentSpan+`-01"}`)
		read := c.read()
		var served, client *tracepb.Span
		deadline := time.After(60 * time.Second)
		for served == nil || client == nil {
			spans, changed := col.Spans()
			for _, s := range spans {
				if hex.EncodeToString(s.TraceId) != c.agentTrace {
					continue
				}
				switch s.Kind {
				case tracepb.Span_SPAN_KIND_SERVER:
					served = s
				case tracepb.Span_SPAN_KIND_CLIENT:
					client = s
				}
			}
			if served != nil && client != nil {
				break
			}
			select {
			case <-changed:
			case <-deadline:
				t.Fatalf("%s: spans in the agent's trace: served %v, client %v (all %v)", c.server, served != nil, client != nil, spanNames(spans))
			}
		}
		if hex.EncodeToString(served.ParentSpanId) != c.agentSpan || served.Name != "tools/call "+c.tool {
			t.Errorf("%s: served span %q under %x, want tools/call %s under the agent's %s", c.server, served.Name, served.ParentSpanId, c.tool, c.agentSpan)
		}
		if string(client.ParentSpanId) != string(served.SpanId) {
			t.Errorf("%s: client span under %x, want the served span %x", c.server, client.ParentSpanId, served.SpanId)
		}
		if want := "00-" + c.agentTrace + "-" + hex.EncodeToString(client.SpanId) + "-01"; read != want {
			t.Errorf("%s: the server read traceparent %q, want the gateway's client span %q", c.server, read, want)
		}
	}
}

// TestTelemetryFastPathLists: the lists and ping a 2025-era session's
// agent gets from the fast path (answered by the gateway from its merged
// pages, not the SDK) have served spans too, in the agent's trace from
// _meta, with the session and request ids, and count in the served
// duration metric.
func TestTelemetryFastPathLists(t *testing.T) {
	col := fixture.NewCollector(t)
	sb := newTestbox(t)
	sb.env = append(sb.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+col.URL, "OTEL_BSP_SCHEDULE_DELAY=50")
	if r := sb.launch(mcpConfig(t, map[string]any{
		"local": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "local", Verbatim: true})},
	}), "--metrics"); r.code != 0 {
		t.Fatalf("launch exited %d\nstdout: %s\nstderr: %s\nlog:\n%s", r.code, r.stdout, r.stderr, sb.log())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := sb.connect(ctx, nil)
	const agentTrace = "4af7651916cd43dd8448eb211c80319a"
	meta := mcp.Meta{"traceparent": "00-" + agentTrace + "-b7ad6b7169203331-01"}
	if _, err := cs.ListTools(ctx, &mcp.ListToolsParams{Meta: meta}); err != nil {
		t.Fatalf("list tools: %v", err)
	}
	if err := cs.Ping(ctx, &mcp.PingParams{Meta: meta}); err != nil {
		t.Fatalf("ping: %v", err)
	}
	served := map[string]*tracepb.Span{}
	deadline := time.After(60 * time.Second)
	for served["tools/list"] == nil || served["ping"] == nil {
		spans, changed := col.Spans()
		for _, s := range spans {
			if hex.EncodeToString(s.TraceId) == agentTrace && s.Kind == tracepb.Span_SPAN_KIND_SERVER {
				served[s.Name] = s
			}
		}
		if served["tools/list"] != nil && served["ping"] != nil {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("served spans in the agent's trace: %v (all %v)", served, spanNames(spans))
		}
	}
	for name, s := range served {
		got := map[string]string{}
		for _, kv := range s.Attributes {
			got[kv.Key] = kv.Value.GetStringValue()
		}
		if got["mcp.session.id"] != cs.ID() || got["jsonrpc.request.id"] == "" || got["network.transport"] != "tcp" {
			t.Errorf("%s: served span attributes %v, want session %s, a request id, tcp", name, got, cs.ID())
		}
		if hex.EncodeToString(s.ParentSpanId) != "b7ad6b7169203331" {
			t.Errorf("%s: parent %x, want the agent's span", name, s.ParentSpanId)
		}
	}
	fams, _ := scrape(t, sb)
	counts := histCounts(fams["mcp_server_operation_duration_seconds"])
	if counts["tools/list||"] != 1 || counts["ping||"] != 1 {
		t.Errorf("served durations %v, want one tools/list and one ping", counts)
	}
}
