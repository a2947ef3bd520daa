package endpoint

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
)

// TestAuditLogLine: the audit line of a call says how it ended at the
// level an operator filters on (a failed call is a warning naming its
// code), and carries the interceptors and the trace only when there are
// some: an empty trace_id would lead nowhere.
func TestAuditLogLine(t *testing.T) {
	line := func(r aggregate.CallRecord) map[string]any {
		t.Helper()
		var buf bytes.Buffer
		AuditLog(zerolog.New(&buf))(r)
		var m map[string]any
		if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
			t.Fatalf("audit line %q: %v", buf.String(), err)
		}
		return m
	}
	base := aggregate.CallRecord{Session: "S", Server: "a", Tool: "echo", Duration: 3 * time.Millisecond,
		Outcome: "ok", BytesIn: 10, BytesOut: 20}

	ok := line(base)
	for k, want := range map[string]any{"level": "info", "event": "call", "outcome": "ok", "session": "S",
		"server": "a", "tool": "echo", "bytes_in": 10.0, "bytes_out": 20.0, "message": "tool call"} {
		if ok[k] != want {
			t.Errorf("ok call: %s = %v, want %v (line %v)", k, ok[k], want, ok)
		}
	}
	for _, k := range []string{"error", "interceptors", "trace_id", "span_id"} {
		if _, has := ok[k]; has {
			t.Errorf("ok call without them: the line has %s (%v)", k, ok)
		}
	}

	failed := base
	failed.Outcome, failed.Error = "error", "-32603"
	if m := line(failed); m["level"] != "warn" || m["error"] != "-32603" || m["outcome"] != "error" {
		t.Errorf("failed call: %v, want a warning with error -32603", m)
	}

	full := base
	full.Interceptors, full.TraceID, full.SpanID = "guard:deny", "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	m := line(full)
	if m["interceptors"] != "guard:deny" || m["trace_id"] != full.TraceID || m["span_id"] != full.SpanID {
		t.Errorf("call with interceptors and a trace: %v", m)
	}
}
