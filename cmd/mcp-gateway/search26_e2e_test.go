package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// checkSearchBasics: through cs the view lists only the gateway's two tools,
// search_tools finds alpha's echo and call_tool and a direct call run it.
// It is what a 2026-era agent, which has no session for the view to live
// in, must get as well as a 2025-era one.
func checkSearchBasics(t *testing.T, ctx context.Context, cs *mcp.ClientSession) {
	t.Helper()
	if names := toolNames(t, ctx, cs); !slices.Equal(names, []string{gatewaySearchTool, gatewayCallTool}) {
		t.Fatalf("search view lists %v, want %v", names, []string{gatewaySearchTool, gatewayCallTool})
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: gatewaySearchTool, Arguments: map[string]any{"query": "return my text unchanged"}})
	if err != nil {
		t.Fatalf("search_tools: %v", err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var f foundTools
	if err := json.Unmarshal(b, &f); err != nil || len(f.Tools) == 0 || f.Tools[0].Name != "echo" {
		t.Errorf("search for echo: %s (%v)", b, err)
	}
	for name, args := range map[string]map[string]any{
		gatewayCallTool: {"name": "echo", "arguments": map[string]any{"text": "found"}},
		"echo":          {"text": "found"},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("call %s: %v", name, err)
		}
		if got := text(t, res); got != "found" {
			t.Errorf("call %s = %q, want echo's answer", name, got)
		}
	}
}

// connect2026 connects the Go SDK's default client (which negotiates the
// 2026 era with the gateway) to url and fails unless it got that era.
func connect2026(t *testing.T, ctx context.Context, url, token string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent-2026", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: fixture.Bearer(token, http.DefaultTransport)}}, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("connect %s: protocol %s, want 2026-07-28", url, v)
	}
	return cs
}

// TestSearchView2026: agents of the stateless era get the search view:
// the Go SDK's default client over /mcp?tools=search and over
// `mcp-gateway stdio --tools search`, and the TypeScript v2 client pinned
// to 2026-07-28 over both, whose results must carry resultType (it refuses
// them otherwise).
func TestSearchView2026(t *testing.T) {
	cfg := searchConfig(t)
	sb := newTestbox(t)
	sb.mustLaunch(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	t.Run("go/http", func(t *testing.T) {
		checkSearchBasics(t, ctx, connect2026(t, ctx, sb.url()+"/mcp?tools=search", sb.token))
	})
	t.Run("go/stdio", func(t *testing.T) {
		dir := t.TempDir()
		args := append(gatewayStdioArgs(dir, cfg)[1:], "--tools", "search")
		cmd := exec.Command(gatewayBin, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "desktop-2026", Version: "1"}, nil).
			Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Minute}, nil)
		if err != nil {
			t.Fatalf("connect: %v\nstderr: %s", err, stderr.String())
		}
		t.Cleanup(func() {
			cs.Close()
			killSession(cmd.Process.Pid)
		})
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("stdio: protocol %s, want 2026-07-28", v)
		}
		checkSearchBasics(t, ctx, cs)
		if b, _ := os.ReadFile(filepath.Join(dir, "stdio-gateway.log")); t.Failed() {
			t.Logf("log:\n%s", b)
		}
	})

	ts := tsHarness(t)
	steps := `[{"op":"tools/list"},` +
		`{"op":"tools/call","name":"` + gatewaySearchTool + `","arguments":{"query":"return my text unchanged"}},` +
		`{"op":"tools/call","name":"` + gatewayCallTool + `","arguments":{"name":"echo","arguments":{"text":"found by v2"}}}]`
	for _, stdio := range []bool{false, true} {
		name := "ts/http"
		args := []string{"--mode=2026-07-28", "--steps=" + steps}
		if stdio {
			name = "ts/stdio"
			args = append(append(args, "--"), append(gatewayStdioArgs(t.TempDir(), cfg), "--tools", "search")...)
		} else {
			args = append(args, "--token="+sb.token, sb.url()+"/mcp?tools=search")
		}
		t.Run(name, func(t *testing.T) {
			lines := runV2Client(t, ts, args...)
			if len(lines) != 4 || lines[0].Era != "modern" || lines[0].ProtocolVersion != "2026-07-28" {
				t.Fatalf("v2client: %+v; want connect on the 2026 era and 3 steps", lines)
			}
			for _, l := range lines[1:] {
				if l.Error != nil {
					t.Errorf("%s: %s (code %v)", l.Op, l.Error.Message, l.Error.Code)
				}
			}
			if !slices.Equal(lines[1].Tools, []string{gatewaySearchTool, gatewayCallTool}) {
				t.Errorf("tools/list: %v, want only the search view's tools", lines[1].Tools)
			}
			// The client refused any result without resultType (an error
			// above) and hands the rest over without it.
			var found struct {
				Structured foundTools `json:"structuredContent"`
			}
			if err := json.Unmarshal(lines[2].Result, &found); err != nil || len(found.Structured.Tools) == 0 || found.Structured.Tools[0].Name != "echo" {
				t.Errorf("search_tools: %.400s (%v); want echo first", lines[2].Result, err)
			}
			if r := string(lines[3].Result); !strings.Contains(r, "found by v2") {
				t.Errorf("call_tool echo: %.400s; want echo's answer", r)
			}
		})
	}
}

// TestSearchViewGatewayDefault: with `--tools search` on the gateway, an
// agent whose URL names no view gets the search view (a 2025-era and a
// 2026-era one), and one that asks for ?tools=all still gets every tool.
func TestSearchViewGatewayDefault(t *testing.T) {
	sb := newTestbox(t)
	if r := sb.launch(searchConfig(t), "--tools", "search"); r.code != 0 {
		t.Fatalf("launch --tools search exited %d\nstderr: %s\nlog:\n%s", r.code, r.stderr, sb.log())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	checkSearchBasics(t, ctx, connect2026(t, ctx, sb.url()+"/mcp", sb.token))

	legacy, err := mcp.NewClient(&mcp.Implementation{Name: "agent-2025", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: sb.url() + "/mcp",
		HTTPClient: &http.Client{Transport: fixture.Bearer(sb.token, http.DefaultTransport)}}, legacySession())
	if err != nil {
		t.Fatalf("connect 2025: %v", err)
	}
	defer legacy.Close()
	checkSearchBasics(t, ctx, legacy)

	all := toolNames(t, ctx, connect2026(t, ctx, sb.url()+"/mcp?tools=all", sb.token))
	for _, want := range []string{"echo", "progress", "search_tools"} {
		if !slices.Contains(all, want) {
			t.Errorf("?tools=all lacks %q: %v", want, all)
		}
	}
	if slices.Contains(all, gatewayCallTool) {
		t.Errorf("?tools=all lists the gateway's call_tool: %v", all)
	}
}
