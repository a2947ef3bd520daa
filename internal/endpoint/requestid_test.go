package endpoint

import (
	"context"
	"io"
	"net/http"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// TestSDKPathSpanRequestID: a single request the SDK serves (a 2026-era
// tools/call on the stateless handler) is traced with its JSON-RPC id as
// jsonrpc.request.id, as the fast path's spans are: the SDK hands its
// handlers no id, so the endpoint puts it in the HTTP request's context.
// Without it an operator could not find the span of a request an agent
// reports by its id. The counter shows the request took the SDK's path.
func TestSDKPathSpanRequestID(t *testing.T) {
	col := fixture.NewCollector(t)
	ctx := context.Background()
	tel, err := telemetry.New(ctx, telemetry.Options{Env: func(k string) string {
		if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			return col.URL
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	set := testSettings(t, 0)
	set.Telemetry = tel
	url, token, e := inProcessGatewayOf(t, set, io.Discard, fixtureSpec("a", fixture.Options{Name: "a", Tools: []string{"echo"}}))

	e.fast.sdkOnly.Store(true)
	stateless := e.fast.stateless.Load()
	status, _, msgs := statelessMessages(t, &http.Client{}, url, token, call2026("7201", "echo", `{"text":"span"}`, `{}`, "", ""), "echo", nil)
	if status != http.StatusOK || len(msgs) == 0 {
		t.Fatalf("2026-era tools/call: %d %q", status, msgs)
	}
	if e.fast.stateless.Load() != stateless {
		t.Fatal("the 2026-era tools/call took the fast path; want the SDK's stateless handler")
	}

	if err := tel.Shutdown(ctx); err != nil { // exports what is buffered
		t.Fatal(err)
	}
	spans, _ := col.Spans()
	attr := func(s *tracepb.Span, key string) (string, bool) {
		for _, kv := range s.Attributes {
			if kv.Key == key {
				v, ok := kv.Value.Value.(*commonpb.AnyValue_StringValue)
				return v.StringValue, ok
			}
		}
		return "", false
	}
	for _, c := range []struct{ method, id string }{{"tools/call", "7201"}} {
		var ids []string
		for _, s := range spans {
			if m, _ := attr(s, "mcp.method.name"); m != c.method || s.Kind != tracepb.Span_SPAN_KIND_SERVER {
				continue
			}
			id, _ := attr(s, "jsonrpc.request.id")
			ids = append(ids, id)
		}
		if len(ids) != 1 || ids[0] != c.id {
			t.Errorf("server spans of %s have request ids %q, want one span with %q", c.method, ids, c.id)
		}
	}
}
