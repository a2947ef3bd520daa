package endpoint

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// TestDroppedNotificationsLogTraced: the warning that a fast-path call's
// notifications were dropped (its agent stopped reading its stream) is
// written after the call's span ended, outside its context, and still
// carries the trace and span ids of the call's served span, as a real
// OTLP receiver gets it: for a 2025-era session's call and for a 2026-era
// call without a session.
func TestDroppedNotificationsLogTraced(t *testing.T) {
	col := fixture.NewCollector(t)
	tel, err := telemetry.New(context.Background(), telemetry.Options{Env: col.Env})
	if err != nil || !tel.Tracing() {
		t.Fatalf("telemetry.New = %v, %v", tel, err)
	}
	defer tel.Shutdown(context.Background())
	set := testSettings(t, 16)
	set.Limits.WriteTimeout = 10 * time.Minute
	set.Telemetry = tel
	logs := &syncBuffer{}
	url, token, _ := inProcessGatewayOf(t, set, logs, fixtureSpec("fx", fixture.Options{Tools: []string{"echo", "log", "progress"}}))

	// stall sends a call that floods its agent with notifications on a
	// connection that reads nothing, waits for its result to be read from
	// the server (its audit line), then closes the connection, which ends
	// the call, and returns the warning about the notifications dropped.
	stall := func(request, warning string) map[string]any {
		t.Helper()
		audits := strings.Count(logs.String(), `"event":"call"`)
		c := dialStalled(t, url)
		if _, err := c.Write([]byte(request)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 120*time.Second, "the stalled call's result to be read from the server", func() bool {
			return strings.Count(logs.String(), `"event":"call"`) > audits
		})
		c.Close()
		waitFor(t, 30*time.Second, "the dropped notifications to be logged", func() bool {
			return strings.Contains(logs.String(), warning)
		})
		for l := range strings.Lines(logs.String()) {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && m["message"] == warning {
				return m
			}
		}
		t.Fatalf("no line %q", warning)
		return nil
	}

	const legacyTrace, statelessTrace = "8af7651916cd43dd8448eb211c80319e", "9af7651916cd43dd8448eb211c80319f"
	traceMeta := func(trace string) string { return `"traceparent":"00-` + trace + `-b7ad6b7169203331-01"` }
	session := newRawSession(t, url, token)
	if status, _, replies := session.post(`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}`); status != 200 || len(replies) != 1 || replies[0].Error != nil {
		t.Fatalf("logging/setLevel: %d %+v", status, replies)
	}
	// 512 log messages of 32 KiB: far more than the socket buffers and
	// the stream's backlog hold.
	args := fmt.Sprintf(`{"level":"info","message":%q,"count":512}`, strings.Repeat("x", 32<<10))
	legacy := stall(mcpPost(token, session.id, callBody(2, "log", args, `{`+traceMeta(legacyTrace)+`}`)),
		"notifications of a call dropped: its agent was not reading its stream")

	// A 2026-era call's agent set no log level: progress notifications
	// (about 150 bytes each as events) flood its stream instead.
	body := call2026("3", "progress", `{"steps":100000}`, `{}`, "", `,"progressToken":"p",`+traceMeta(statelessTrace))
	stateless := stall("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "+token+
		"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: "+
		aggregate.StatelessRevision+"\r\nMcp-Method: tools/call\r\nMcp-Name: progress\r\n"+
		fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body),
		"notifications of a 2026-era call dropped: its agent was not reading its stream")

	if err := tel.Shutdown(context.Background()); err != nil { // exports what is buffered
		t.Fatal(err)
	}
	spans, _ := col.Spans()
	for _, c := range []struct {
		line        map[string]any
		trace, tool string
	}{{legacy, legacyTrace, "log"}, {stateless, statelessTrace, "progress"}} {
		var served *tracepb.Span
		for _, s := range spans {
			if hex.EncodeToString(s.TraceId) == c.trace && s.Kind == tracepb.Span_SPAN_KIND_SERVER && s.Name == "tools/call "+c.tool {
				served = s
			}
		}
		if served == nil {
			t.Errorf("%s: no served span in trace %s among %d spans (errors %v)", c.tool, c.trace, len(spans), col.Errors())
			continue
		}
		if c.line["trace_id"] != c.trace || c.line["span_id"] != hex.EncodeToString(served.SpanId) {
			t.Errorf("%s: the warning has trace_id %v span_id %v, want %s and the served span %x", c.tool,
				c.line["trace_id"], c.line["span_id"], c.trace, served.SpanId)
		}
	}
}
