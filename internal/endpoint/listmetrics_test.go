package endpoint

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// TestFastPathListsRecordTheirSize: a tools/list answered from the
// aggregate's pages, alone or in a batch, records how many tools its page
// holds in mcp_gateway.list.size, page by page, as the SDK path does, and
// its duration as a served request; a ping records a duration only.
func TestFastPathListsRecordTheirSize(t *testing.T) {
	for _, batch := range []bool{false, true} {
		name := map[bool]string{false: "alone", true: "batch"}[batch]
		t.Run(name, func(t *testing.T) { testFastPathListSizes(t, batch) })
	}
}

func testFastPathListSizes(t *testing.T, batch bool) {
	tel, err := telemetry.New(context.Background(), telemetry.Options{Metrics: true, Env: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	set := testSettings(t, 16)
	set.Telemetry, set.PageSize = tel, 2
	url, token, e := inProcessGatewayOf(t, set, io.Discard,
		fixtureSpec("a", fixture.Options{Name: "a", Tools: []string{"echo", "fail", "sleep"}}))
	s := newRawSessionAt(t, url, token, "2025-03-26", `{}`)

	before := e.fast.lists.Load()
	first := s.result(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	next := rawMember(t, first, "nextCursor")
	second := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":` + next + `}}`
	ping := `{"jsonrpc":"2.0","id":3,"method":"ping"}`
	if batch {
		status, _, out := postBatch(t, s, nil, "2025-03-26", "["+second+","+ping+"]")
		if status != http.StatusOK || len(out) != 2 {
			t.Fatalf("batch: %d %s", status, out)
		}
	} else {
		s.result(second)
		s.result(ping)
	}
	if n := e.fast.lists.Load() - before; n != 3 {
		t.Fatalf("the fast path answered %d of the two lists and the ping, want all 3", n)
	}

	fams := scrapeMetrics(t, url, token)
	var lists []string
	for _, m := range fams["mcp_gateway_list_size"].GetMetric() {
		method := labelOf(m, "mcp_method_name")
		h := m.GetHistogram()
		lists = append(lists, method)
		if method != "tools/list" || h.GetSampleCount() != 2 || h.GetSampleSum() != 3 {
			t.Errorf("list size of %s: %d pages holding %v items, want tools/list: 2 pages holding 3 (2 and 1)",
				method, h.GetSampleCount(), h.GetSampleSum())
		}
	}
	if len(lists) != 1 {
		t.Errorf("list sizes recorded for %v, want tools/list alone", lists)
	}
	served := map[string]uint64{}
	for _, m := range fams["mcp_server_operation_duration_seconds"].GetMetric() {
		served[labelOf(m, "mcp_method_name")] += m.GetHistogram().GetSampleCount()
	}
	if served["tools/list"] != 2 || served["ping"] != 1 {
		t.Errorf("served durations %v, want tools/list 2 and ping 1", served)
	}
}

// scrapeMetrics reads the gateway's /metrics with the token, parsed as
// Prometheus does.
func scrapeMetrics(t *testing.T, url, token string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(url, "/mcp")+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	return fams
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
