package aggregate

import (
	"context"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// TestTracedStartsAndRequests: with traces on, a server's start is a span
// of its own, and a request the SDK path serves (a tool called by an agent
// over the Go SDK client) is a server span named for its tool, as the
// collector receives them.
func TestTracedStartsAndRequests(t *testing.T) {
	col := fixture.NewCollector(t)
	ctx := context.Background()
	tel, err := telemetry.New(ctx, telemetry.Options{Env: col.Env})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := memGatewayWith(t, Options{Telemetry: tel})
	agent := connectAgent(t, ctx, g)
	if _, err := agent.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}); err != nil {
		t.Fatal(err)
	}
	if err := tel.Shutdown(ctx); err != nil { // exports what is buffered
		t.Fatal(err)
	}
	spans, _ := col.Spans()
	has := func(name string, kind tracepb.Span_SpanKind) bool {
		return slices.ContainsFunc(spans, func(s *tracepb.Span) bool { return s.Name == name && s.Kind == kind })
	}
	var names []string
	for _, s := range spans {
		names = append(names, s.Name+" ("+s.Kind.String()+")")
	}
	if !has("mcp_gateway server start", tracepb.Span_SPAN_KIND_INTERNAL) {
		t.Errorf("no span of the server's start in %v", names)
	}
	if !has("tools/call echo", tracepb.Span_SPAN_KIND_SERVER) {
		t.Errorf("no server span of the agent's call in %v", names)
	}
}
