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
// them otherwise); through call_tool it gets the tool's progress, answers
// its server's elicitation as an input request, and cancels a call
// upstream by aborting it (tsSearch2026Steps).
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
	for _, stdio := range []bool{false, true} {
		name, dir := "ts/http", t.TempDir()
		args := []string{"--mode=2026-07-28"}
		logFile := sb.logFile
		if stdio {
			name, logFile = "ts/stdio", filepath.Join(dir, "stdio-gateway.log")
			args = append(append(args, "--steps="+tsSearch2026Steps(logFile), "--"), append(gatewayStdioArgs(dir, cfg), "--tools", "search")...)
		} else {
			args = append(args, "--steps="+tsSearch2026Steps(logFile), "--token="+sb.token, sb.url()+"/mcp?tools=search")
		}
		t.Run(name, func(t *testing.T) {
			checkTSSearch2026(t, runV2Client(t, ts, args...))
			if b, _ := os.ReadFile(logFile); t.Failed() {
				t.Logf("log:\n%s", b)
			}
		})
	}
}

// tsSearch2026Steps are v2client.mjs's steps of TestSearchView2026 for a
// gateway that logs to logFile: search, call_tool and a direct call of
// the found tool, then through call_tool a call's progress, an input
// request (the fixture's elicitation, which a 2026-era agent answers by
// retrying the call with its response), and a cancellation: the client
// aborts a call at its first progress, and the server's log must say the
// call was cancelled while the gateway still runs (a stdio gateway's exit
// would end the call as well); the gateway then still serves.
func tsSearch2026Steps(logFile string) string {
	path, _ := json.Marshal(logFile)
	return `[{"op":"tools/list"},` +
		`{"op":"tools/call","name":"` + gatewaySearchTool + `","arguments":{"query":"return my text unchanged"}},` +
		`{"op":"tools/call","name":"` + gatewayCallTool + `","arguments":{"name":"echo","arguments":{"text":"found by v2"}}},` +
		`{"op":"tools/call","name":"echo","arguments":{"text":"called directly by v2"}},` +
		`{"op":"tools/call","name":"` + gatewayCallTool + `","arguments":{"name":"progress","arguments":{"steps":3}},"progress":true},` +
		`{"op":"tools/call","name":"` + gatewayCallTool + `","arguments":{"name":"elicit","arguments":{"message":"ok?"}}},` +
		`{"op":"tools/call","name":"` + gatewayCallTool + `","arguments":{"name":"progress","arguments":{"steps":2,"delayMs":600000}},"abortOnProgress":true},` +
		`{"op":"waitFile","path":` + string(path) + `,"text":"fixture: progress cancelled","timeout":30000},` +
		`{"op":"tools/call","name":"` + gatewayCallTool + `","arguments":{"name":"echo","arguments":{"text":"after the cancel"}}}]`
}

// checkTSSearch2026 judges v2client.mjs's lines for tsSearch2026Steps.
func checkTSSearch2026(t *testing.T, lines []v2Line) {
	t.Helper()
	if len(lines) != 10 || lines[0].Era != "modern" || lines[0].ProtocolVersion != "2026-07-28" {
		t.Fatalf("v2client: %+v; want connect on the 2026 era and 9 steps", lines)
	}
	s := lines[1:]
	for i, l := range s {
		if l.Error != nil && i != 6 {
			t.Errorf("step %d %s: %s (code %v)", i, l.Op, l.Error.Message, l.Error.Code)
		}
	}
	if !slices.Equal(s[0].Tools, []string{gatewaySearchTool, gatewayCallTool}) {
		t.Errorf("tools/list: %v, want only the search view's tools", s[0].Tools)
	}
	// The client refused any result without resultType (an error above)
	// and hands the rest over without it.
	var found struct {
		Structured foundTools `json:"structuredContent"`
	}
	if err := json.Unmarshal(s[1].Result, &found); err != nil || len(found.Structured.Tools) == 0 || found.Structured.Tools[0].Name != "echo" {
		t.Errorf("search_tools: %.400s (%v); want echo first", s[1].Result, err)
	}
	for i, want := range map[int]string{2: "found by v2", 3: "called directly by v2", 4: "done 3", 8: "after the cancel"} {
		if r := string(s[i].Result); !strings.Contains(r, want) {
			t.Errorf("step %d %s: %.400s; want %q in it", i, s[i].Op, r, want)
		}
	}
	if len(s[4].Progress) != 3 {
		t.Errorf("call_tool progress: %d progress notifications, want 3: %s", len(s[4].Progress), s[4].Progress)
	}
	// The elicitation reached the agent as an input request, and its
	// answer the server (the agent's content has no "answer").
	if ir := s[5].InputRequests; len(ir) != 1 || ir[0].Method != "elicitation/create" || !strings.Contains(string(s[5].Result), "accept: ") {
		t.Errorf("call_tool elicit: input requests %+v, result %.400s; want one elicitation, accepted", ir, s[5].Result)
	}
	if s[6].Error == nil || len(s[6].Progress) == 0 {
		t.Errorf("call_tool aborted at its first progress: %+v; want the abort's error after a progress", s[6])
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
