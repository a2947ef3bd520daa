package aggregate_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// The gateway's lines written outside a request's context but about one
// carry that request's trace ids: checked against the spans a real OTLP
// receiver gets.

// tracing is telemetry exporting traces to a receiver of the test's.
func tracing(t *testing.T) (*telemetry.Telemetry, *fixture.Collector) {
	t.Helper()
	col := fixture.NewCollector(t)
	tel, err := telemetry.New(context.Background(), telemetry.Options{Env: col.Env})
	if err != nil || !tel.Tracing() {
		t.Fatalf("telemetry.New = %v, %v", tel, err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel, col
}

// servedSpan is the served span of trace traceID named name, once the
// receiver has it (spans are exported in batches: after Shutdown here).
func servedSpan(t *testing.T, col *fixture.Collector, traceID, name string) *tracepb.Span {
	t.Helper()
	spans, _ := col.Spans()
	for _, s := range spans {
		if hex.EncodeToString(s.TraceId) == traceID && s.Kind == tracepb.Span_SPAN_KIND_SERVER && s.Name == name {
			return s
		}
	}
	t.Fatalf("no served span %q in trace %s among %d spans (errors %v)", name, traceID, len(spans), col.Errors())
	return nil
}

// logLine is the last line of log holding msg, decoded.
func logLine(t *testing.T, log, msg string) map[string]any {
	t.Helper()
	var line map[string]any
	for l := range strings.Lines(log) {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["message"] == msg {
			line = m
		}
	}
	if line == nil {
		t.Fatalf("no line %q in the log:\n%s", msg, log)
	}
	return line
}

// wantIDs checks that line carries span's trace and span ids.
func wantIDs(t *testing.T, line map[string]any, span *tracepb.Span) {
	t.Helper()
	if line["trace_id"] != hex.EncodeToString(span.TraceId) || line["span_id"] != hex.EncodeToString(span.SpanId) {
		t.Errorf("line %v: trace_id %v span_id %v, want the served span's %x %x", line["message"], line["trace_id"],
			line["span_id"], span.TraceId, span.SpanId)
	}
}

// TestRelistLogTraced: a server that announces tools/list_changed during
// an agent's call, and then fails the re-list, leaves a warning with that
// call's trace ids (the re-list runs on a goroutine of its own, outside
// the call's context); one it announces outside any call, a warning
// without any.
func TestRelistLogTraced(t *testing.T) {
	tel, col := tracing(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "grower", Version: "1"}, nil)
	var failing atomic.Bool
	listed := make(chan struct{}, 1) // a tools/list reached the server while failing
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" && failing.Load() {
				select {
				case listed <- struct{}{}:
				default:
				}
				return nil, errors.New("listing is broken")
			}
			return next(ctx, method, req)
		}
	})
	noop := func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	}
	// grow adds a tool (tools/list_changed) and returns only once the
	// gateway's re-list has reached the server: the call is in flight
	// when the gateway takes in the announcement.
	mcp.AddTool(srv, &mcp.Tool{Name: "grow"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		failing.Store(true)
		mcp.AddTool(srv, &mcp.Tool{Name: "grown"}, noop)
		select {
		case <-listed:
		case <-ctx.Done():
		}
		return &mcp.CallToolResult{}, nil, nil
	})
	url, _, log := memGatewayOpts(t, map[string]*mcp.Server{"grower": srv}, aggregate.Options{Telemetry: tel})
	agent := connect(t, url, nil)
	const agentTrace = "5af7651916cd43dd8448eb211c80319b"
	if _, err := agent.CallTool(ctxT(t), &mcp.CallToolParams{Name: "grow",
		Meta: mcp.Meta{"traceparent": "00-" + agentTrace + "-b7ad6b7169203331-01"}}); err != nil {
		t.Fatal(err)
	}
	const msg = "re-list after list_changed"
	waitFor(t, "the failed re-list to be logged", func() bool { return strings.Contains(log.String(), msg) })
	during := logLine(t, log.String(), msg)

	// Outside any call: no trace to lead to.
	before := strings.Count(log.String(), msg)
	mcp.AddTool(srv, &mcp.Tool{Name: "later"}, noop)
	waitFor(t, "the second failed re-list to be logged", func() bool { return strings.Count(log.String(), msg) > before })
	if outside := logLine(t, log.String(), msg); outside["trace_id"] != nil || outside["span_id"] != nil {
		t.Errorf("the re-list outside any call has trace ids: %v", outside)
	}

	if err := tel.Shutdown(context.Background()); err != nil { // exports what is buffered
		t.Fatal(err)
	}
	wantIDs(t, during, servedSpan(t, col, agentTrace, "tools/call grow"))
}

// TestRoutingGuessLogTraced: a server's request while calls of two
// agents are in flight to it is routed to the latest caller, and the line
// saying so (written on the server's reader, outside any request's
// context) carries the trace ids of the call it was routed to.
func TestRoutingGuessLogTraced(t *testing.T) {
	tel, col := tracing(t)
	url, log, _ := startGatewayOpts(t, map[string]fixture.Options{"a": {}}, aggregate.Options{Telemetry: tel})
	asked, release := make(chan struct{}), make(chan struct{})
	first := connect(t, url, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			close(asked)
			select { // hold the first call in flight until the second was routed
			case <-release:
			case <-ctx.Done():
			}
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	second := connect(t, url, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "mine"}}, nil
		},
	})
	const firstTrace, secondTrace = "6af7651916cd43dd8448eb211c80319c", "7af7651916cd43dd8448eb211c80319d"
	meta := func(trace string) mcp.Meta { return mcp.Meta{"traceparent": "00-" + trace + "-b7ad6b7169203331-01"} }
	firstDone := make(chan error, 1)
	go func() {
		_, err := first.CallTool(ctxT(t), &mcp.CallToolParams{Name: "elicit", Arguments: map[string]any{"message": "proceed?"},
			Meta: meta(firstTrace)})
		firstDone <- err
	}()
	select {
	case <-asked:
	case err := <-firstDone:
		t.Fatalf("the first call ended before its elicitation reached the agent: %v", err)
	}
	res, err := second.CallTool(ctxT(t), &mcp.CallToolParams{Name: "sample", Arguments: map[string]any{"prompt": "p"},
		Meta: meta(secondTrace)})
	close(release)
	if err != nil || textOf(t, res) != "model said: mine" {
		t.Fatalf("the second agent's sample call: %+v %v", res, err)
	}
	if err := <-firstDone; err != nil {
		t.Fatalf("the first agent's elicit call: %v", err)
	}
	line := logLine(t, log.String(), "several sessions call this server; routing to the latest caller")
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, line, servedSpan(t, col, secondTrace, "tools/call sample"))
}
