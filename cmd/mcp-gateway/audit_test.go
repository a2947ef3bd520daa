package main

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// auditLine is one "tool call" line of the log.
type auditLine struct {
	Event    string   `json:"event"`
	Level    string   `json:"level"`
	Message  string   `json:"message"`
	Session  string   `json:"session"`
	Server   string   `json:"server"`
	Tool     string   `json:"tool"`
	Duration *float64 `json:"duration"`
	Outcome  string   `json:"outcome"`
	Error    string   `json:"error"`
	BytesIn  *int     `json:"bytes_in"`
	BytesOut *int     `json:"bytes_out"`
}

func auditLines(t *testing.T, log string) []auditLine {
	t.Helper()
	var out []auditLine
	for _, line := range strings.Split(log, "\n") {
		var a auditLine
		if json.Unmarshal([]byte(line), &a) == nil && a.Event == "call" {
			out = append(out, a)
		}
	}
	return out
}

// TestAuditLog: every forwarded call leaves one structured line (session,
// server, tool, duration, outcome, bytes in and out) and no argument or
// result value reaches the log.
func TestAuditLog(t *testing.T) {
	sb := newTestbox(t)
	sb.mustLaunch(mcpConfig(t, map[string]any{
		"alpha": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Tools: []string{"echo", "fail", "crash"}})},
		"beta":  map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Tools: []string{"echo"}})},
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := sb.connect(ctx, nil)
	nonce := strconv.FormatInt(time.Now().UnixNano(), 36)
	type call struct {
		tool    string
		args    map[string]any
		server  string
		outcome string
	}
	calls := []call{
		{"echo", map[string]any{"text": "arg-value-" + nonce}, "alpha", "ok"},
		{"beta_echo", map[string]any{"text": "other-value-" + nonce}, "beta", "ok"},
		{"fail", map[string]any{"message": "fail-value-" + nonce}, "alpha", "tool_error"},
		{"crash", map[string]any{"code": 7}, "alpha", "error"},
	}
	for _, c := range calls {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if (err != nil) != (c.outcome == "error") || (err == nil && res.IsError != (c.outcome == "tool_error")) {
			t.Fatalf("%s: %v %v", c.tool, res, err)
		}
	}
	// Calls the gateway refuses itself are not forwarded: no line.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{"x": "unknown-value-" + nonce}}); err == nil {
		t.Fatal("unknown tool succeeded")
	}
	var lines []auditLine
	pollUntil(t, 30*time.Second, "an audit line per call", func() bool {
		lines = auditLines(t, sb.log())
		return len(lines) >= len(calls)
	})
	if len(lines) != len(calls) {
		t.Fatalf("%d audit lines for %d forwarded calls: %+v", len(lines), len(calls), lines)
	}
	for i, c := range calls {
		a := lines[i]
		args, _ := json.Marshal(c.args)
		if a.Session == "" || a.Session != cs.ID() || a.Server != c.server || a.Tool != c.tool || a.Outcome != c.outcome ||
			a.Duration == nil || *a.Duration < 0 || a.BytesIn == nil || *a.BytesIn != len(args) || a.BytesOut == nil || a.Message != "tool call" {
			t.Errorf("audit line %d = %+v; want session %s, server %s, tool %s, outcome %s, %d bytes in", i, a, cs.ID(), c.server, c.tool, c.outcome, len(args))
		}
		if c.outcome == "error" {
			if a.Level != "warn" || a.Error != "code -32603" {
				t.Errorf("error line %+v; want level warn and the JSON-RPC code only (messages may quote values)", a)
			}
		} else if a.BytesOut == nil || *a.BytesOut <= 0 || a.Level != "info" {
			t.Errorf("line %+v; want info with bytes out", a)
		}
	}
	if strings.Contains(sb.log(), nonce) {
		t.Error("an argument or result value reached the log")
	}
}
