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

// searchConfig is the gateway of the search view's tests: alpha with the
// fixture's tools, one of them (env) hidden by a tool filter; beta with a
// tool of its own named search_tools, which keeps working while the
// gateway's search tool takes the name the naming rule gives it.
func searchConfig(t *testing.T) string {
	t.Helper()
	return mcpConfig(t, map[string]any{
		"alpha": map[string]any{
			"runCmd":  fixture.ShellCommand(fixture.Options{Name: "alpha", Tools: []string{"echo", "env", "progress", "elicit", "add_tool", "sleep"}}),
			"x-tools": map[string]any{"deny": []string{"env"}},
		},
		"beta": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "beta", Tools: []string{fixture.NoTools}, ExtraTools: []string{"search_tools"}})},
	})
}

// The gateway's tools' names in searchConfig's gateway.
const (
	gatewaySearchTool = "mcp-gateway_search_tools"
	gatewayCallTool   = "call_tool"
)

// agentEvents are what the gateway sent a Go SDK client on its own:
// progress, list changes; the client answers elicitations with "yes".
type agentEvents struct {
	progress     chan float64
	toolsChanged chan struct{}
}

func searchClientOptions() (*mcp.ClientOptions, *agentEvents) {
	ev := &agentEvents{progress: make(chan float64, 64), toolsChanged: make(chan struct{}, 64)}
	return &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			ev.progress <- r.Params.Progress
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { ev.toolsChanged <- struct{}{} },
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "yes"}}, nil
		},
	}, ev
}

// foundTools is search_tools' structuredContent.
type foundTools struct {
	Tools []struct {
		Name        string          `json:"name"`
		Server      string          `json:"server"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
	} `json:"tools"`
}

func (f foundTools) names() []string {
	var out []string
	for _, t := range f.Tools {
		out = append(out, t.Name)
	}
	return out
}

// checkSearchView runs the search view's acceptance through cs, a session
// in the search view of searchConfig's gateway.
func checkSearchView(t *testing.T, ctx context.Context, cs *mcp.ClientSession, ev *agentEvents) {
	t.Helper()
	names := toolNames(t, ctx, cs)
	if want := []string{gatewaySearchTool, gatewayCallTool}; !slices.Equal(names, want) {
		t.Fatalf("search view lists %v, want %v", names, want)
	}
	call := func(name string, args map[string]any, meta mcp.Meta) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
		if err != nil {
			t.Fatalf("call %s: %v", name, err)
		}
		return res
	}
	search := func(args map[string]any) foundTools {
		t.Helper()
		res := call(gatewaySearchTool, args, nil)
		if res.IsError {
			t.Fatalf("search %v: %s", args, text(t, res))
		}
		b, _ := json.Marshal(res.StructuredContent)
		var f foundTools
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("search %v structuredContent %s: %v", args, b, err)
		}
		if len(f.Tools) > 0 && !strings.Contains(text(t, res), "best first") {
			t.Errorf("search %v text %q", args, text(t, res))
		}
		return f
	}

	f := search(map[string]any{"query": "return my text unchanged"})
	if len(f.Tools) == 0 || f.Tools[0].Name != "echo" || f.Tools[0].Server != "alpha" || !bytes.Contains(f.Tools[0].InputSchema, []byte(`"text"`)) {
		t.Errorf("search for echo found %+v", f.Tools)
	}
	if f := search(map[string]any{"query": "environment variable value", "limit": 20}); slices.Contains(f.names(), "env") {
		t.Errorf("search found env, which a tool filter hides: %v", f.names())
	}
	if f := search(map[string]any{"query": "search tools", "server": "beta"}); !slices.Equal(f.names(), []string{"search_tools"}) {
		t.Errorf("search of beta's tools found %v, want beta's search_tools", f.names())
	}
	if got := text(t, call("search_tools", nil, nil)); got != "beta:search_tools" {
		t.Errorf("beta's own search_tools answered %q", got)
	}

	// call_tool is the call of the tool: its result, its progress under
	// the agent's token, the server's elicitation reaching the agent.
	if got := text(t, call(gatewayCallTool, map[string]any{"name": "echo", "arguments": map[string]any{"text": "via call_tool"}}, nil)); got != "via call_tool" {
		t.Errorf("call_tool echo = %q", got)
	}
	if got := text(t, call("echo", map[string]any{"text": "direct"}, nil)); got != "direct" {
		t.Errorf("direct echo in the search view = %q", got)
	}
	res := call(gatewayCallTool, map[string]any{"name": "progress", "arguments": map[string]any{"steps": 3}}, mcp.Meta{"progressToken": "p1"})
	if res.IsError {
		t.Fatalf("call_tool progress: %s", text(t, res))
	}
	for i := range 3 {
		select {
		case <-ev.progress:
		case <-ctx.Done():
			t.Fatalf("call_tool progress: %d of 3 progress notifications came", i)
		}
	}
	if got := text(t, call(gatewayCallTool, map[string]any{"name": "elicit", "arguments": map[string]any{"message": "ok?"}}, nil)); got != "accept: yes" {
		t.Errorf("call_tool elicit = %q, want the agent's answer", got)
	}
	if res := call(gatewayCallTool, map[string]any{"name": "env", "arguments": map[string]any{"name": "HOME"}}, nil); !res.IsError {
		t.Errorf("call_tool of a hidden tool answered %q", text(t, res))
	}

	// A tool added at run time is found after the server's list_changed.
	for len(ev.toolsChanged) > 0 {
		<-ev.toolsChanged
	}
	call(gatewayCallTool, map[string]any{"name": "add_tool", "arguments": map[string]any{"name": "zebra_feeder"}}, nil)
	select {
	case <-ev.toolsChanged:
	case <-ctx.Done():
		t.Fatal("no tools/list_changed after add_tool")
	}
	if f := search(map[string]any{"query": "feed the zebras"}); len(f.Tools) == 0 || f.Tools[0].Name != "zebra_feeder" {
		t.Errorf("search after list_changed found %v, want zebra_feeder first", f.names())
	}
}

// TestSearchViewHTTP: an agent that asks for /mcp?tools=search gets the
// search view with the Go SDK client, one that asks for nothing every tool,
// one that asks for an unknown view a 400; the audit names the real tool.
func TestSearchViewHTTP(t *testing.T) {
	sb := newTestbox(t)
	sb.mustLaunch(searchConfig(t))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	connect := func(query string, opts *mcp.ClientOptions) *mcp.ClientSession {
		client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, opts)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: sb.url() + "/mcp" + query,
			HTTPClient: &http.Client{Transport: fixture.Bearer(sb.token, http.DefaultTransport)}}, legacySession()) // the elicitation below needs a 2025 session
		if err != nil {
			t.Fatalf("connect %s: %v\nlog:\n%s", query, err, sb.log())
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	opts, ev := searchClientOptions()
	checkSearchView(t, ctx, connect("?tools=search", opts), ev)

	all := toolNames(t, ctx, connect("", nil))
	for _, want := range []string{"echo", "progress", "search_tools"} {
		if !slices.Contains(all, want) {
			t.Errorf("the default view lacks %q: %v", want, all)
		}
	}
	if slices.Contains(all, gatewayCallTool) {
		t.Errorf("the default view lists the gateway's call_tool: %v", all)
	}

	// Cancelling call_tool cancels the tool's call at its server.
	search := connect("?tools=search", nil)
	callCtx, cancelCall := context.WithCancel(ctx)
	called := make(chan error, 1)
	go func() {
		_, err := search.CallTool(callCtx, &mcp.CallToolParams{Name: gatewayCallTool,
			Arguments: map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 60000}}})
		called <- err
	}()
	waitFor(t, 30*time.Second, "the server to start sleeping", func() bool { return strings.Contains(sb.log(), "sleep started") })
	cancelCall()
	if err := <-called; err == nil {
		t.Error("a cancelled call_tool returned a result")
	}
	waitFor(t, 30*time.Second, "the server to see the cancellation", func() bool { return strings.Contains(sb.log(), "sleep cancelled") })

	req, _ := http.NewRequest(http.MethodPost, sb.url()+"/mcp?tools=some", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Authorization", "Bearer "+sb.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("?tools=some answered %d, want 400", resp.StatusCode)
	}

	sb.stop()
	log := sb.log()
	if !strings.Contains(log, `"tool":"progress"`) || !strings.Contains(log, `"tool":"elicit"`) {
		t.Errorf("no audit line names the tools called with call_tool:\n%s", log)
	}
}

// TestSearchViewStdio: `mcp-gateway stdio --tools search`, with the Go SDK
// client over the gateway's stdin and stdout.
func TestSearchViewStdio(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(gatewayBin, "stdio", "--tools", "search", "--config", searchConfig(t), "--log-file", filepath.Join(dir, "stdio.log"),
		"--catalog", filepath.Join(dir, "catalog.json"), "--servers-dir", filepath.Join(dir, "servers"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	opts, ev := searchClientOptions()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "desktop-app", Version: "1"}, opts).
		Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Minute}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr: %s", err, stderr.String())
	}
	t.Cleanup(func() {
		cs.Close()
		killSession(cmd.Process.Pid)
	})
	checkSearchView(t, ctx, cs, ev)
	if b, _ := os.ReadFile(filepath.Join(dir, "stdio.log")); t.Failed() {
		t.Logf("log:\n%s", b)
	}
}

// TestToolsFlagRefusesUnknownView: a typo in --tools fails at once.
func TestToolsFlagRefusesUnknownView(t *testing.T) {
	out, err := exec.Command(gatewayBin, "stdio", "--tools", "serch", "--config", `{}`).CombinedOutput()
	if err == nil || !strings.Contains(string(out), `unknown tool view "serch"`) {
		t.Errorf("--tools serch: %v, %s", err, out)
	}
}

// tsSearchSteps is the search view's acceptance as search.mjs steps, over
// searchConfig's gateway with server-memory (npm) as "memory": search finds
// memory's tool, call_tool and a direct call run it; progress and an
// elicitation travel through call_tool; a hidden tool is not found; a tool
// added at run time is.
func tsSearchSteps() string {
	return `[
	{"list": true},
	{"call": "` + gatewaySearchTool + `", "args": {"query": "store a new entity in the knowledge graph"}},
	{"call": "` + gatewayCallTool + `", "args": {"name": "create_entities", "arguments": {"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}]}}},
	{"call": "search_nodes", "args": {"query": "Ada"}},
	{"call": "` + gatewayCallTool + `", "args": {"name": "progress", "arguments": {"steps": 3, "delayMs": 50}}, "progress": true},
	{"call": "` + gatewayCallTool + `", "args": {"name": "elicit", "arguments": {"message": "ok?"}}},
	{"call": "` + gatewaySearchTool + `", "args": {"query": "environment variable value", "limit": 20}},
	{"call": "` + gatewayCallTool + `", "args": {"name": "add_tool", "arguments": {"name": "zebra_feeder"}}},
	{"waitToolsChanged": true},
	{"call": "` + gatewaySearchTool + `", "args": {"query": "feed the zebras"}}
]`
}

// checkTSSearch judges search.mjs's output for tsSearchSteps.
func checkTSSearch(t *testing.T, out string) {
	t.Helper()
	var got struct {
		Steps []struct {
			Tools  []string `json:"tools"`
			Result struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
				Structured foundTools `json:"structuredContent"`
				IsError    bool       `json:"isError"`
			} `json:"result"`
			Progress []float64 `json:"progress"`
		} `json:"steps"`
		Elicitations int `json:"elicitations"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Steps) != 10 {
		t.Fatalf("search.mjs output %q: %v", out, err)
	}
	s := got.Steps
	if want := []string{gatewaySearchTool, gatewayCallTool}; !slices.Equal(s[0].Tools, want) {
		t.Errorf("TS client lists %v, want %v", s[0].Tools, want)
	}
	if f := s[1].Result.Structured.Tools; len(f) == 0 || f[0].Name != "create_entities" || f[0].Server != "memory" {
		t.Errorf("search for memory's create_entities found %v", s[1].Result.Structured.names())
	}
	if s[2].Result.IsError || len(s[3].Result.Content) == 0 || !strings.Contains(s[3].Result.Content[0].Text, "first program") {
		t.Errorf("call_tool create_entities then search_nodes: %+v, %+v", s[2].Result, s[3].Result)
	}
	// The TS SDK's stdio client sometimes drops the last progress before a
	// result (its own race, ../shared/notes/mcp-facts.md); the Go client's
	// test counts all three.
	if len(s[4].Progress) < 2 || s[4].Progress[0] != 1 {
		t.Errorf("call_tool progress: the TS client saw progress %v, want 3 notifications (the last may be dropped)", s[4].Progress)
	}
	if len(s[5].Result.Content) == 0 || s[5].Result.Content[0].Text != "accept: yes" || got.Elicitations != 1 {
		t.Errorf("call_tool elicit: %+v, %d elicitations", s[5].Result, got.Elicitations)
	}
	if slices.Contains(s[6].Result.Structured.names(), "env") {
		t.Errorf("search found the hidden env: %v", s[6].Result.Structured.names())
	}
	if f := s[9].Result.Structured.names(); len(f) == 0 || f[0] != "zebra_feeder" {
		t.Errorf("search after list_changed found %v", f)
	}
}

// tsSearchConfig is searchConfig with server-memory.
func tsSearchConfig(t *testing.T, ts string) string {
	t.Helper()
	var servers map[string]any
	if err := json.Unmarshal([]byte(searchConfig(t)), &servers); err != nil {
		t.Fatal(err)
	}
	servers["memory"] = map[string]any{"runCmd": npmServer(t, ts, "mcp-server-memory"),
		"envs": map[string]any{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}}
	return mcpConfig(t, servers)
}

// TestSearchViewTypeScriptHTTP: the TypeScript SDK client over
// /mcp?tools=search.
func TestSearchViewTypeScriptHTTP(t *testing.T) {
	ts := tsHarness(t)
	sb := newTestbox(t)
	sb.mustLaunch(tsSearchConfig(t, ts))
	cmd := exec.Command("node", filepath.Join(ts, "search.mjs"), "http", sb.url()+"/mcp?tools=search", sb.token, tsSearchSteps())
	cmd.Dir = ts
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("search.mjs: %v\n%s\nlog:\n%s", err, exitStderr(err), sb.log())
	}
	checkTSSearch(t, string(out))
}

// TestSearchViewTypeScriptStdio: the TypeScript SDK client starting
// `mcp-gateway stdio --tools search`.
func TestSearchViewTypeScriptStdio(t *testing.T) {
	ts := tsHarness(t)
	dir := t.TempDir()
	args, _ := json.Marshal([]string{"stdio", "--tools", "search", "--config", tsSearchConfig(t, ts),
		"--log-file", filepath.Join(dir, "stdio.log"), "--catalog", filepath.Join(dir, "catalog.json"), "--servers-dir", filepath.Join(dir, "servers")})
	cmd := exec.Command("node", filepath.Join(ts, "search.mjs"), "stdio", gatewayBin, string(args), tsSearchSteps())
	cmd.Dir = ts
	out, err := cmd.Output()
	if err != nil {
		b, _ := os.ReadFile(filepath.Join(dir, "stdio.log"))
		t.Fatalf("search.mjs: %v\n%s\nlog:\n%s", err, exitStderr(err), b)
	}
	checkTSSearch(t, string(out))
}

func exitStderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
