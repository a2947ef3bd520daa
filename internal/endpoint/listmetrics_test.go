package endpoint

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// TestFastPathListsRecordTheirSize: a tools/list answered from the
// aggregate's pages records how many tools its page holds in
// mcp_gateway.list.size, page by page, as the SDK path does; a ping
// records none.
func TestFastPathListsRecordTheirSize(t *testing.T) {
	tel, err := telemetry.New(context.Background(), telemetry.Options{Metrics: true, Env: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	set := testSettings(t, 16)
	set.Telemetry, set.PageSize = tel, 2
	url, token, e := inProcessGatewayOf(t, set, io.Discard,
		fixtureSpec("a", fixture.Options{Name: "a", Tools: []string{"echo", "fail", "sleep"}}))
	s := newRawSession(t, url, token)

	before := e.fast.lists.Load()
	first := s.result(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	next := rawMember(t, first, "nextCursor")
	s.result(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":` + next + `}}`)
	s.result(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	if n := e.fast.lists.Load() - before; n != 3 {
		t.Fatalf("the fast path answered %d of the two lists and the ping, want all 3", n)
	}

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
	var lists []string
	for _, m := range fams["mcp_gateway_list_size"].GetMetric() {
		method := ""
		for _, l := range m.GetLabel() {
			if l.GetName() == "mcp_method_name" {
				method = l.GetValue()
			}
		}
		h := m.GetHistogram()
		lists = append(lists, method)
		if method != "tools/list" || h.GetSampleCount() != 2 || h.GetSampleSum() != 3 {
			t.Errorf("list size of %s: %d pages holding %v items, want tools/list: 2 pages holding 3 (2 and 1)",
				method, h.GetSampleCount(), h.GetSampleSum())
		}
	}
	if len(lists) != 1 {
		t.Errorf("list sizes recorded for %v, want tools/list alone\n%s", lists, body)
	}
}
