package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
)

// listenLine is a v2client.mjs line of the listen test: with the acknowledged filter and the notifications' params.
type listenLine struct {
	Op      string   `json:"op"`
	Era     string   `json:"era"`
	Tools   []string `json:"tools"`
	Honored *struct {
		ToolsListChanged      bool     `json:"toolsListChanged"`
		ResourceSubscriptions []string `json:"resourceSubscriptions"`
	} `json:"honored"`
	Notifications []struct {
		Method string `json:"method"`
		Params struct {
			URI  string                     `json:"uri"`
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	} `json:"notifications"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// TestListenTypeScriptClient: the TypeScript SDK v2 client pinned to 2026-07-28 opens one subscriptions/listen
// through the gateway (over HTTP, and in stdio mode) in front of a 2025-era server (server-everything) and a
// 2026-only one (v2server --legacy=reject). The gateway acknowledges the merged tool list's changes and both
// servers' resources; a resource update of the 2026 server (its touch tool), the 2025 server's simulated
// updates (toggle-subscriber-updates) and the 2026 server's tool list change (its add_tool tool) each reach the
// client with the listen's subscriptionId, and the new tool is listed. A 2025-era client (the same client in its
// legacy mode) subscribes to the 2026 server's resource with resources/subscribe and hears of its update.
func TestListenTypeScriptClient(t *testing.T) {
	ts := tsHarness(t)
	everything := npmServer(t, ts, "mcp-server-everything")
	cfg := mcpConfig(t, map[string]any{
		"everything": map[string]any{"runCmd": "'" + everything + "' stdio"},
		"v2only":     map[string]any{"runCmd": "node '" + filepath.Join(ts, "v2server.mjs") + "' --legacy=reject"},
	})
	const doc = "demo://resource/static/document/architecture.md"
	steps := `[{"op":"listen","filter":{"toolsListChanged":true,"resourceSubscriptions":["v2://counter","` + doc + `"]}},` +
		`{"op":"tools/call","name":"touch","arguments":{"uri":"v2://counter"}},` +
		`{"op":"wait","method":"notifications/resources/updated"},` +
		`{"op":"tools/call","name":"toggle-subscriber-updates","arguments":{}},` +
		`{"op":"wait","method":"notifications/resources/updated"},` +
		`{"op":"tools/call","name":"add_tool","arguments":{"name":"added_at_run_time"}},` +
		`{"op":"wait","method":"notifications/tools/list_changed"},` +
		`{"op":"tools/list"}]`
	sb := newTestbox(t)
	sb.mustLaunch(cfg)
	for _, stdio := range []bool{false, true} {
		name := "http"
		if stdio {
			name = "stdio"
		}
		// run runs v2client with args against the gateway over this
		// subtest's transport.
		run := func(t *testing.T, args ...string) []listenLine {
			t.Helper()
			if stdio {
				args = append(append(args, "--"), gatewayStdioArgs(t.TempDir(), cfg)...)
			} else {
				args = append(args, "--token="+sb.token, sb.url()+"/mcp")
			}
			return v2ClientLines(t, ts, args, func(b []byte) (listenLine, error) {
				var l listenLine
				return l, json.Unmarshal(b, &l)
			})
		}
		t.Run(name, func(t *testing.T) {
			lines := run(t, "--mode=2026-07-28", "--steps="+steps)
			if len(lines) != 9 || lines[0].Era != "modern" {
				t.Fatalf("v2client: %+v; want connect on the 2026 era and 8 steps", lines)
			}
			for _, l := range lines[1:] {
				if l.Error != nil {
					t.Errorf("%s: %s", l.Op, l.Error.Message)
				}
			}
			if h := lines[1].Honored; h == nil || !h.ToolsListChanged || !slices.Equal(h.ResourceSubscriptions, []string{"v2://counter", doc}) {
				t.Errorf("listen acknowledged %+v; want toolsListChanged and both resources", h)
			}
			updated := map[string]bool{}
			listChanged := false
			for _, l := range lines[2:] {
				for _, n := range l.Notifications {
					if id := string(n.Params.Meta["io.modelcontextprotocol/subscriptionId"]); id != `"listen:0"` {
						t.Errorf("%s (%s): subscriptionId %s, want the listen's \"listen:0\"", n.Method, n.Params.URI, id)
					}
					switch n.Method {
					case "notifications/resources/updated":
						updated[n.Params.URI] = true
					case "notifications/tools/list_changed":
						listChanged = true
					}
				}
			}
			if !updated["v2://counter"] || !updated[doc] {
				t.Errorf("resources/updated for %v; want v2://counter (the 2026 server's) and %s (the 2025 server's)", updated, doc)
			}
			if !listChanged {
				t.Error("no tools/list_changed after the 2026 server added a tool")
			}
			if !slices.Contains(lines[8].Tools, "added_at_run_time") {
				t.Errorf("tools/list after the change: %v; want added_at_run_time", lines[8].Tools)
			}
		})
		// A 2025-era client's resources/subscribe to the 2026 server's resource becomes a listen of the gateway's
		// own there: the server has no resources/subscribe.
		t.Run(name+"/2025-client", func(t *testing.T) {
			lines := run(t, "--mode=legacy", `--steps=[{"op":"subscribe","uri":"v2://counter"},`+
				`{"op":"tools/call","name":"touch","arguments":{"uri":"v2://counter"}},{"op":"wait","method":"notifications/resources/updated"}]`)
			if len(lines) != 4 || lines[0].Era != "legacy" {
				t.Fatalf("v2client: %+v; want connect on the 2025 era and 3 steps", lines)
			}
			for _, l := range lines[1:] {
				if l.Error != nil {
					t.Errorf("%s: %s", l.Op, l.Error.Message)
				}
			}
		})
	}
}
