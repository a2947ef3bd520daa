package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTypeScriptV2ClientStateless: the TypeScript SDK v2 client pinned to 2026-07-28 uses the gateway over HTTP
// (no session: every request carries its own _meta) and in stdio mode (a connection opened with server/discover) with two 2025-era servers behind it, server-everything and
// the TS v2 server (test/ts/v2server.mjs, both over stdio): it lists tools, prompts, resources and templates,
// calls, gets a prompt, reads a resource and completes an argument, each result carrying what the revision
// requires (the client refuses a result without resultType); a call's progress arrives, its log messages only
// when the request asked for a log level, and, over HTTP, a call the client abandons (closing its stream) ends
// upstream.
func TestTypeScriptV2ClientStateless(t *testing.T) {
	ts := tsHarness(t)
	everything := npmServer(t, ts, "mcp-server-everything")
	cfg := mcpConfig(t, map[string]any{
		"everything": map[string]any{"runCmd": "'" + everything + "' stdio"},
		"v2":         map[string]any{"runCmd": "node '" + filepath.Join(ts, "v2server.mjs") + "'"},
	})
	sb := newTestbox(t)
	sb.mustLaunch(cfg)
	url := sb.url() + "/mcp"
	runOn := func(t *testing.T, stdio bool, steps string, extra ...string) []v2Line {
		t.Helper()
		args := append([]string{"--mode=2026-07-28", "--steps=" + steps}, extra...)
		if stdio {
			args = append(append(args, "--"), gatewayStdioArgs(t.TempDir(), cfg)...)
		} else {
			args = append(args, "--token="+sb.token, url)
		}
		lines := runV2Client(t, ts, args...)
		if c := lines[0]; c.Error != nil || c.Era != "modern" || c.ProtocolVersion != "2026-07-28" {
			t.Fatalf("connect: %+v; want the 2026 era", c)
		}
		return lines[1:]
	}
	for _, stdio := range []bool{false, true} {
		name := "http"
		if stdio {
			name = "stdio"
		}
		t.Run(name, func(t *testing.T) {
			run := func(steps string, extra ...string) []v2Line {
				t.Helper()
				return runOn(t, stdio, steps, extra...)
			}
			statelessListsAndCalls(t, run)
			statelessProgressAndLogging(t, run)
		})
	}

	t.Run("http/cancel-by-closing", func(t *testing.T) {
		// The client gives up after 2 s and aborts the request: the stream closes, and the gateway must end
		// the upstream call, which would otherwise run for 10 minutes.
		lines := runOn(t, false, `[{"op":"tools/call","name":"slow","arguments":{"ms":600000}}]`, "--timeout=2000")
		if len(lines) != 1 || lines[0].Error == nil {
			t.Fatalf("slow: %+v; want the client's timeout", lines)
		}
		deadline := time.Now().Add(60 * time.Second)
		for !slowEnded(sb.log()) {
			if time.Now().After(deadline) {
				t.Fatalf("the upstream call of the abandoned request did not end within 60s; log:\n%s", sb.log())
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// statelessListsAndCalls: lists, calls of both servers, a prompt, a read and a completion, each result with the
// gateway's serverInfo.
func statelessListsAndCalls(t *testing.T, run func(steps string, extra ...string) []v2Line) {
	t.Run("lists-and-calls", func(t *testing.T) {
		lines := run(`[{"op":"tools/list"},{"op":"prompts/list"},{"op":"resources/list"},{"op":"resources/templates/list"},` +
			`{"op":"tools/call","name":"echo","arguments":{"message":"stateless"}},` +
			`{"op":"tools/call","name":"v2_echo","arguments":{"text":"stateless v2"}},` +
			`{"op":"prompts/get","name":"greet","arguments":{"name":"era"}},` +
			`{"op":"resources/read","uri":"demo://resource/static/document/architecture.md"},` +
			`{"op":"completion/complete","ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"al"}}]`)
		for _, l := range lines {
			if l.Error != nil {
				t.Errorf("%s: %s (code %v)", l.Op, l.Error.Message, l.Error.Code)
			}
		}
		if len(lines) != 9 {
			t.Fatalf("got %d step lines, want 9: %+v", len(lines), lines)
		}
		if !slices.Contains(lines[0].Tools, "echo") || !slices.Contains(lines[0].Tools, "v2_echo") || !slices.Contains(lines[0].Tools, "ask") {
			t.Errorf("tools/list: %v; want both servers' tools (v2server's echo renamed v2_echo)", lines[0].Tools)
		}
		if !slices.Contains(lines[1].Prompts, "greet") || !slices.Contains(lines[1].Prompts, "simple-prompt") {
			t.Errorf("prompts/list: %v", lines[1].Prompts)
		}
		if !slices.Contains(lines[2].Resources, "v2://counter") || !slices.Contains(lines[2].Resources, "demo://resource/static/document/architecture.md") {
			t.Errorf("resources/list: %v", lines[2].Resources)
		}
		if !slices.Contains(lines[3].Templates, "v2://item/{id}") {
			t.Errorf("resources/templates/list: %v", lines[3].Templates)
		}
		for i, want := range map[int]string{4: "Echo: stateless", 5: "stateless v2", 6: "Hello, era!", 7: "Architecture", 8: "albert"} {
			if !strings.Contains(string(lines[i].Result), want) {
				t.Errorf("%s: %s; want %q in it", lines[i].Op, lines[i].Result, want)
			}
		}
		for _, i := range []int{4, 5, 6, 7, 8} {
			if !strings.Contains(string(lines[i].Result), `"io.modelcontextprotocol/serverInfo":{"name":"mcp-gateway"`) {
				t.Errorf("%s: %.300s; want the gateway's serverInfo in _meta", lines[i].Op, lines[i].Result)
			}
		}
	})
}

// statelessProgressAndLogging: a call's progress arrives; its log messages only when the request carries a
// log level.
func statelessProgressAndLogging(t *testing.T, run func(steps string, extra ...string) []v2Line) {
	t.Run("progress-and-logging", func(t *testing.T) {
		lines := run(`[{"op":"tools/call","name":"progress","arguments":{"steps":3},"progress":true},` +
			`{"op":"logging/setLevel","level":"info"},` +
			`{"op":"tools/call","name":"progress","arguments":{"steps":3},"progress":true}]`)
		if len(lines) != 3 {
			t.Fatalf("got %d step lines, want 3: %+v", len(lines), lines)
		}
		messages := func(l v2Line) int {
			n := 0
			for _, m := range l.Notifications {
				if m.Method == "notifications/message" {
					n++
				}
			}
			return n
		}
		for _, i := range []int{0, 2} {
			if l := lines[i]; l.Error != nil || len(l.Progress) != 3 || !strings.Contains(string(l.Result), "done 3") {
				t.Errorf("progress call %d: %+v (%s); want 3 progress notifications and 'done 3'", i, l, l.Result)
			}
		}
		if n := messages(lines[0]); n != 0 {
			t.Errorf("a request without a log level got %d log messages, want none", n)
		}
		if n := messages(lines[2]); n != 3 {
			t.Errorf("a request with logLevel info got %d log messages, want 3 (one per step)", n)
		}
	})
}

// slowEnded reports whether the gateway's audit log has the end of a call of v2server's slow tool.
func slowEnded(log string) bool {
	for _, line := range strings.Split(log, "\n") {
		var rec struct {
			Event, Server, Tool, Outcome string
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Event == "call" && rec.Server == "v2" && rec.Tool == "slow" {
			return true
		}
	}
	return false
}

// TestTypeScriptV2ClientStatelessTo2026Server: a 2026-era agent (the TS v2 client pinned to 2026-07-28, over HTTP)
// through the gateway to a server that speaks only 2026-07-28 (v2server --legacy=reject): lists, calls and reads
// arrive, each result naming the gateway in _meta (the agent's server), not the server behind it, and the server's
// input requests (form and URL elicitation, sampling, roots) go to the agent and its answers back, both eras
// 2026 end to end (the multi-round-trip relay).
func TestTypeScriptV2ClientStatelessTo2026Server(t *testing.T) {
	ts := tsHarness(t)
	cfg := mcpConfig(t, map[string]any{"v2only": map[string]any{"runCmd": "node '" + filepath.Join(ts, "v2server.mjs") + "' --legacy=reject"}})
	sb := newTestbox(t)
	sb.mustLaunch(cfg)
	lines := runV2Client(t, ts, "--mode=2026-07-28", "--token="+sb.token,
		`--steps=[{"op":"tools/list"},{"op":"tools/call","name":"echo","arguments":{"text":"to a 2026 server"}},{"op":"resources/read","uri":"v2://counter"},`+
			`{"op":"tools/call","name":"ask","arguments":{"kinds":["form","url","sampling","roots"]}}]`,
		sb.url()+"/mcp")
	if len(lines) != 5 || lines[0].Era != "modern" {
		t.Fatalf("v2client: %+v; want connect on the 2026 era and 4 steps", lines)
	}
	// The server's InputRequiredResult reaches the agent as sent, and the agent's retry (inputResponses and the
	// requestState, which v2server checks byte for byte) reaches the server: the result holds the four answers.
	for _, want := range []string{`\"name\":\"v2client\"`, `\"url\":{\"action\":\"accept\"`, "sampled by v2client", "file:///tmp/v2client-root"} {
		if !strings.Contains(string(lines[4].Result), want) {
			t.Errorf("ask: %s; want %s in it", lines[4].Result, want)
		}
	}
	for _, l := range lines[1:] {
		if l.Error != nil {
			t.Errorf("%s: %s (code %v)", l.Op, l.Error.Message, l.Error.Code)
		}
	}
	if !slices.Contains(lines[1].Tools, "echo") {
		t.Errorf("tools/list: %v", lines[1].Tools)
	}
	for _, l := range lines[2:] {
		if !strings.Contains(string(l.Result), `"io.modelcontextprotocol/serverInfo":{"name":"mcp-gateway"`) {
			t.Errorf("%s: %.300s; want the gateway's serverInfo in _meta", l.Op, l.Result)
		}
	}
	if !strings.Contains(string(lines[2].Result), "to a 2026 server") {
		t.Errorf("tools/call echo: %s", lines[2].Result)
	}
}
