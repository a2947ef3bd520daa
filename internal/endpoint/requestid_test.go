package endpoint

import (
	"context"
	"io"
	"net/http"
	"slices"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// TestSDKPathSpanRequestID: a single request the SDK serves (on a 2025-era
// session's handler: initialize, two logging/setLevel; a 2026-era
// tools/call on the stateless handler) is traced with its own JSON-RPC id
// as jsonrpc.request.id, as the fast path's spans are, and a notification
// with none: the SDK hands its handlers no id, so the endpoint passes it.
// Without it an operator could not find the span of a request an agent
// reports by its id; with the session's first id on every span, as the
// initialize request's context once gave them, they would find the wrong
// one. The counters show the requests took the SDK's path.
func TestSDKPathSpanRequestID(t *testing.T) {
	col := fixture.NewCollector(t)
	ctx := context.Background()
	tel, err := telemetry.New(ctx, telemetry.Options{Env: col.Env})
	if err != nil {
		t.Fatal(err)
	}
	set := testSettings(t, 0)
	set.Telemetry = tel
	url, token, e := inProcessGatewayOf(t, set, io.Discard, fixtureSpec("a", fixture.Options{Name: "a", Tools: []string{"echo"}}))

	s := newRawSession(t, url, token)
	sdkBefore, fastBefore := e.sdk.served.Load(), e.fast.lists.Load()+e.fast.forwarded.Load()
	for _, id := range []string{`"lvl-1"`, `72`} {
		if status, _, r := s.post(`{"jsonrpc":"2.0","id":` + id + `,"method":"logging/setLevel","params":{"level":"info"}}`); status != http.StatusOK || len(r) != 1 || r[0].Error != nil {
			t.Fatalf("logging/setLevel: %d %+v", status, r)
		}
	}
	if e.sdk.served.Load() != sdkBefore+2 || e.fast.lists.Load()+e.fast.forwarded.Load() != fastBefore {
		t.Fatalf("logging/setLevel did not take the SDK's path (SDK %d -> %d, fast path %d -> %d)",
			sdkBefore, e.sdk.served.Load(), fastBefore, e.fast.lists.Load()+e.fast.forwarded.Load())
	}

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
	for _, c := range []struct {
		method string
		ids    []string
	}{
		{"initialize", []string{"0"}},
		{"notifications/initialized", []string{""}}, // a notification has none
		{"logging/setLevel", []string{"lvl-1", "72"}},
		{"tools/call", []string{"7201"}},
	} {
		var ids []string
		for _, s := range spans {
			if m, _ := attr(s, "mcp.method.name"); m != c.method || s.Kind != tracepb.Span_SPAN_KIND_SERVER {
				continue
			}
			id, _ := attr(s, "jsonrpc.request.id")
			ids = append(ids, id)
		}
		if !slices.Equal(ids, c.ids) {
			t.Errorf("server spans of %s have request ids %q, want %q", c.method, ids, c.ids)
		}
	}
}
