package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// repoRoot is the repository root, for test/ts.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// tsHarness returns test/ts with its node_modules, skipping the test when
// they are not installed, except in CI, where .ci/run installs them and a
// missing install is a failure.
func tsHarness(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(repoRoot(t), "test", "ts")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("test/ts/node_modules missing in CI (run 'npm ci' in test/ts): %v", err)
		}
		t.Skip("test/ts/node_modules not installed; run 'npm ci' in test/ts")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed")
	}
	return dir
}

// TestTypeScriptClient lists and calls through the gateway with the official
// TypeScript SDK client, which is what most agents use.
func TestTypeScriptClient(t *testing.T) {
	ts := tsHarness(t)
	sb := newTestbox(t)
	sb.mustLaunch(mcpConfig(t, map[string]any{
		"alpha": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "alpha", ExtraTools: []string{"shared"}})},
		"beta":  map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "beta", Tools: []string{"echo"}, ExtraTools: []string{"shared"}})},
	}))
	node := func(args ...string) (string, error) {
		cmd := exec.Command("node", append([]string{filepath.Join(ts, "client.mjs")}, args...)...)
		cmd.Dir = ts
		out, err := cmd.Output()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), &exitError{ee, string(ee.Stderr)}
		}
		return string(out), err
	}
	out, err := node(sb.url()+"/mcp", sb.token, "beta_echo", `{"text":"from typescript"}`)
	if err != nil {
		t.Fatalf("client.mjs: %v", err)
	}
	var got struct {
		Tools  []string `json:"tools"`
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("client.mjs output %q: %v", out, err)
	}
	for _, want := range []string{"echo", "shared", "beta_echo", "beta_shared"} {
		if !slices.Contains(got.Tools, want) {
			t.Errorf("TS client tools lack %q: %v", want, got.Tools)
		}
	}
	if len(got.Result.Content) != 1 || got.Result.Content[0].Text != "from typescript" {
		t.Errorf("TS client call result %+v", got.Result)
	}
	if out, err := node(sb.url()+"/mcp", "", "echo", "{}", "--expect-401"); err != nil || !strings.Contains(out, "401") {
		t.Errorf("TS client without token: %q %v; want a 401", out, err)
	}
	if _, err := node(sb.url()+"/mcp", "wrong-token", "echo", `{"text":"x"}`); err == nil {
		t.Error("TS client with a wrong token succeeded")
	}
}

type exitError struct {
	err    error
	stderr string
}

func (e *exitError) Error() string { return e.err.Error() + ": " + e.stderr }

// TestNpmServer puts a real npm MCP server, the catalog's "memory", behind
// the gateway. test/ts installs it, as a template's `mcp-gateway pull memory`
// would, so the gateway finds its binary on PATH.
func TestNpmServer(t *testing.T) {
	ts := tsHarness(t)
	sb := newTestbox(t)
	sb.env = append(sb.env, "PATH="+filepath.Join(ts, "node_modules", ".bin")+":"+os.Getenv("PATH"))
	sb.mustLaunch(`{"memory": {}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := sb.connect(ctx, nil)
	names := toolNames(t, ctx, cs)
	if !slices.Contains(names, "create_entities") || !slices.Contains(names, "read_graph") {
		t.Fatalf("memory server tools: %v", names)
	}
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_entities", Arguments: map[string]any{
		"entities": []map[string]any{{"name": "gateway", "entityType": "program", "observations": []string{"written in Go"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_graph", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if s := text(t, res); !strings.Contains(s, "written in Go") {
		t.Errorf("read_graph = %s", s)
	}
}

// TestGitHubServer clones a github/<owner>/<repo> server from a local mirror
// with go-git, runs its installCmd in the clone and its runCmd there, with
// its envs.
func TestGitHubServer(t *testing.T) {
	if _, err := exec.LookPath("git-upload-pack"); err != nil {
		if _, err := exec.LookPath("git"); err != nil {
			t.Skip("file:// clones need git-upload-pack")
		}
	}
	sb := newTestbox(t)
	mirrors := filepath.Join(sb.dir, "mirrors")
	makeRepo(t, filepath.Join(mirrors, "acme", "weather-mcp"), map[string]string{"README.md": "weather\n"})
	sb.env = append(sb.env, "MCP_GATEWAY_GITHUB_BASE_URL=file://"+mirrors)
	// runCmd only succeeds in the clone, after installCmd ran there.
	run := "test -f README.md && test -f installed.txt && " + fixture.ShellCommand(fixture.Options{Name: "weather", Tools: []string{"env", "echo"}})
	sb.mustLaunch(mcpConfig(t, map[string]any{
		"github/acme/weather-mcp": map[string]any{
			"installCmd": "echo ok > installed.txt",
			"runCmd":     run,
			"envs":       map[string]string{"WEATHER_API_KEY": "wk-secret-1"},
		},
	}))
	clone := filepath.Join(sb.serversDir, "github", "acme", "weather-mcp")
	if b, err := os.ReadFile(filepath.Join(clone, "README.md")); err != nil || string(b) != "weather\n" {
		t.Fatalf("clone README: %q %v", b, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := sb.connect(ctx, nil)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "env", Arguments: map[string]any{"name": "WEATHER_API_KEY"}})
	if err != nil || text(t, res) != "wk-secret-1" {
		t.Fatalf("env in github server: %v %v", res, err)
	}
	if strings.Contains(sb.log(), "wk-secret-1") {
		t.Error("the server's env value reached the log")
	}
}

// makeRepo creates a git repository at dir with one commit of files.
func makeRepo(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add(name); err != nil {
			t.Fatal(err)
		}
	}
	sig := &object.Signature{Name: "test", Email: "test@example.com", When: time.Now()}
	if _, err := wt.Commit("initial", &git.CommitOptions{Author: sig}); err != nil {
		t.Fatal(err)
	}
}

// TestToolWithUnusualSchema: a tool whose input schema the Go SDK's AddTool
// refuses is served as published, and callable.
func TestToolWithUnusualSchema(t *testing.T) {
	sb := newTestbox(t)
	sb.mustLaunch(mcpConfig(t, map[string]any{
		"odd": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{BadSchema: true, Tools: []string{"echo"}})},
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := sb.connect(ctx, nil)
	var loose *mcp.Tool
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name == fixture.LooseTool {
			loose = tool
		}
	}
	if loose == nil {
		t.Fatal("tool with a [\"object\",\"null\"] schema was dropped")
	}
	b, _ := json.Marshal(loose.InputSchema)
	if !strings.Contains(string(b), `["object","null"]`) {
		t.Errorf("schema changed on the way: %s", b)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: fixture.LooseTool, Arguments: map[string]any{"k": "v"}})
	if err != nil || !strings.Contains(text(t, res), `"k"`) {
		t.Errorf("call loose: %v %v", res, err)
	}
}
