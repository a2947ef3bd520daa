package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

var (
	testPluginOnce sync.Once
	testPluginPath string
	testPluginErr  error
)

// testPlugin builds the interceptor test plugin (internal/intercept/testplugin)
// once for the package's tests, and the plugin host next to the gateway's
// binary, where the gateway looks for it (as make build puts it).
func testPlugin(t *testing.T) string {
	t.Helper()
	testPluginOnce.Do(func() {
		dir := filepath.Dir(gatewayBin)
		testPluginPath = filepath.Join(dir, "testplugin")
		for _, b := range []struct{ out, pkg string }{{testPluginPath, "../../internal/intercept/testplugin"}, {filepath.Join(dir, "mcp-gateway-plugin-host"), "../mcp-gateway-plugin-host"}} {
			if out, err := exec.Command("go", "build", "-o", b.out, b.pkg).CombinedOutput(); err != nil {
				testPluginErr = fmt.Errorf("build %s: %v\n%s", b.pkg, err, out)
				return
			}
		}
	})
	if testPluginErr != nil {
		t.Fatal(testPluginErr)
	}
	return testPluginPath
}

// interceptorSetup writes an interceptor config with the test plugin on
// server alpha (hiding alpha's env tool) and an exec script on beta, and
// returns its path and the mcp config: alpha (echo, env, pid, add_tool,
// with pid and secret_* filtered out by x-tools) and beta (echo, exported
// as beta_echo).
func interceptorSetup(t *testing.T, dir string) (file, cfg string) {
	t.Helper()
	script := filepath.Join(dir, "policy.sh")
	if err := os.WriteFile(script, []byte(`#!/bin/sh
case "$(cat)" in
  *'"hook":"before"'*'"text":"deny"'*) echo '{"action":"deny","message":"not on beta"}' ;;
esac
`), 0o755); err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(map[string]any{"interceptors": []any{
		map[string]any{"name": "tp", "type": "plugin", "path": testPlugin(t), "hooks": []string{"before", "after", "tools"}, "servers": []string{"alpha"}},
		map[string]any{"name": "beta-policy", "type": "exec", "command": script, "hooks": []string{"before"}, "servers": []string{"beta"}},
	}})
	file = filepath.Join(dir, "interceptors.json")
	if err := os.WriteFile(file, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg = mcpConfig(t, map[string]any{
		"alpha": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "alpha", Tools: []string{"echo", "env", "pid", "add_tool"}}),
			"x-tools": map[string]any{"deny": []string{"pid", "secret_*"}}},
		"beta": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "beta", Tools: []string{"echo"}})},
	})
	return file, cfg
}

// checkIntercepted runs the shared checks of an intercepted gateway over an
// MCP client session: the agent's tools/list never offers a hidden tool,
// a call to one fails as a call to an unknown tool, and each decision
// reaches the agent.
func checkIntercepted(t *testing.T, ctx context.Context, cs *mcp.ClientSession) {
	t.Helper()
	names := toolNames(t, ctx, cs)
	slices.Sort(names)
	if want := []string{"add_tool", "beta_echo", "echo"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v (env hidden by the plugin, pid by x-tools)", names, want)
	}
	for _, hidden := range []string{"env", "pid"} {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: hidden, Arguments: map[string]any{"name": "HOME"}})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("unknown tool %q", hidden)) {
			t.Errorf("call %s: %v, want an unknown tool error", hidden, err)
		}
	}
	for _, c := range []struct{ tool, text, want string }{
		{"echo", "hello", "hello"},
		{"echo", "deny", `denied by interceptor "tp": no echo for echo on alpha`},
		{"echo", "rewrite", "rewritten by plugin"},
		{"echo", "respond", "responded by plugin"},
		{"echo", "replace-me", "replaced by plugin"},
		{"beta_echo", "deny", `denied by interceptor "beta-policy": not on beta`},
		{"beta_echo", "rewrite", "rewrite"}, // the plugin is alpha's only
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: map[string]any{"text": c.text}})
		if err != nil {
			t.Fatalf("%s %s: %v", c.tool, c.text, err)
		}
		if got := text(t, res); got != c.want || res.IsError != strings.HasPrefix(c.want, "denied") {
			t.Errorf("%s %s: %q (isError %v), want %q", c.tool, c.text, got, res.IsError, c.want)
		}
	}
}

// TestInterceptorsHTTP runs the plugin, the exec script and x-tools through
// the background gateway and HTTP, on both tools/call paths (the fast
// path, with a progress token too, and the SDK's, which a call with a
// progress token in a batch takes), with a plugin crash on the way.
func TestInterceptorsHTTP(t *testing.T) {
	sb := newTestbox(t)
	file, cfg := interceptorSetup(t, sb.dir)
	sb.env = []string{"TESTPLUGIN_HIDE=env"}
	r := sb.launch(cfg, "--interceptors", file)
	if r.code != 0 {
		t.Fatalf("launch exited %d: %s\nlog:\n%s", r.code, r.stderr, sb.log())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := sb.connect(ctx, nil)
	checkIntercepted(t, ctx, cs)

	// Raw requests, to tell the paths apart by the answer's content type.
	// A batch (protocol 2025-03-26) with a call that may stream is the
	// SDK's.
	s := newPlainSession(t, sb.url(), sb.token, "2025-06-18")
	old := newPlainSession(t, sb.url(), sb.token, "2025-03-26")
	for _, c := range []struct {
		name, meta, contentType string
		s                       *plainSession
		batch                   bool
	}{
		{"fast path", "", "application/json", s, false},
		{"fast path, progress token", `{"progressToken":"p"}`, "application/json", s, false},
		{"SDK path", `{"progressToken":"p"}`, "text/event-stream", old, true},
	} {
		for text, want := range map[string]string{"deny": `denied by interceptor \"tp\": no echo`, "rewrite": "rewritten by plugin", "replace-me": "replaced by plugin"} {
			body := toolCall(7, "echo", `{"text":"`+text+`"}`, c.meta)
			if c.batch {
				body = "[" + body + "]"
			}
			ct, reply := c.s.call(body)
			if !strings.HasPrefix(ct, c.contentType) {
				t.Errorf("%s %s: Content-Type %q, want %q", c.name, text, ct, c.contentType)
			}
			if !strings.Contains(string(reply), want) {
				t.Errorf("%s %s: reply %s, want %q", c.name, text, reply, want)
			}
		}
	}

	// The plugin crashes during a call: that call fails naming it, and the
	// next is served by a restarted plugin.
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "crash"}})
	if err == nil || !strings.Contains(err.Error(), `interceptor "tp"`) {
		t.Errorf("call that crashes the plugin: %v, want an error naming the interceptor", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "respond"}})
	if err != nil || text(t, res) != "responded by plugin" {
		t.Errorf("after the crash: %v %v", res, err)
	}

	// Tools a server adds later are filtered as well: its list_changed
	// re-list goes through the same filters.
	changed := make(chan struct{}, 8)
	cs2 := sb.connect(ctx, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	for _, name := range []string{"secret_tool", "open_tool"} {
		if _, err := cs2.CallTool(ctx, &mcp.CallToolParams{Name: "add_tool", Arguments: map[string]any{"name": name}}); err != nil {
			t.Fatal(err)
		}
	}
	for names := toolNames(t, ctx, cs2); !slices.Contains(names, "open_tool"); names = toolNames(t, ctx, cs2) {
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("open_tool never listed: %v", names)
		}
	}
	if names := toolNames(t, ctx, cs2); slices.Contains(names, "secret_tool") {
		t.Errorf("a tool added later and denied by x-tools is offered: %v", names)
	}

	// The audit line says which interceptor did what, and never a value.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(sb.log(), `"interceptors":"tp:replace"`) {
		time.Sleep(50 * time.Millisecond)
	}
	log := sb.log()
	for _, want := range []string{`"interceptors":"tp:deny"`, `"interceptors":"tp:rewrite"`, `"interceptors":"tp:respond"`,
		`"interceptors":"tp:replace"`, `"interceptors":"beta-policy:deny"`, `"interceptors":"tp:failed"`} {
		if !strings.Contains(log, want) {
			t.Errorf("audit log lacks %s", want)
		}
	}
	if strings.Contains(log, "rewritten by plugin") {
		t.Error("the audit log holds an argument value")
	}
}

// TestInterceptorsStdio runs the same checks in stdio mode.
func TestInterceptorsStdio(t *testing.T) {
	dir := t.TempDir()
	file, cfg := interceptorSetup(t, dir)
	cmd := exec.Command(gatewayBin, "stdio", "--config", cfg, "--interceptors", file,
		"--log-file", filepath.Join(dir, "stdio.log"), "--catalog", filepath.Join(dir, "catalog.json"),
		"--servers-dir", filepath.Join(dir, "servers"))
	cmd.Env = append(os.Environ(), "TESTPLUGIN_HIDE=env")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "desktop-app", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { killSession(cmd.Process.Pid) })
	checkIntercepted(t, ctx, cs)
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if left := sessionMembers(cmd.Process.Pid); len(left) > 0 {
		t.Errorf("processes left after EOF (the plugin?): %v", left)
	}
}

// TestInterceptorsBadConfig: a bad interceptor file fails the launch with
// the config's exit code and a message naming the field; nothing starts.
func TestInterceptorsBadConfig(t *testing.T) {
	sb := newTestbox(t)
	file := filepath.Join(sb.dir, "interceptors.json")
	if err := os.WriteFile(file, []byte(`{"interceptors":[{"name":"p","type":"plugin","path":"/nonexistent/plugin","hooks":["before"]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := mcpConfig(t, map[string]any{"alpha": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "alpha"})}})
	r := sb.launch(cfg, "--interceptors", file)
	if r.code != 2 || !strings.Contains(r.stderr, `interceptors[0] ("p"): path: cannot be used`) {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	if sb.pid() != 0 {
		t.Error("a gateway started despite the bad interceptor config")
	}
	r = sb.launch(cfg, "--interceptors", filepath.Join(sb.dir, "missing.json"))
	if r.code != 2 || !strings.Contains(r.stderr, "missing.json") {
		t.Errorf("missing named file: exit %d, stderr %q", r.code, r.stderr)
	}

	// A plugin interceptor needs the plugin host: a gateway installed
	// without it (none next to it, none on PATH) refuses the config.
	doc, _ := json.Marshal(map[string]any{"interceptors": []any{map[string]any{"name": "p", "type": "plugin", "path": testPlugin(t), "hooks": []string{"before"}}}})
	if err := os.WriteFile(file, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	alone := filepath.Join(t.TempDir(), "mcp-gateway")
	bin, err := os.ReadFile(gatewayBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(alone, append(append([]string{"--config", cfg}, sb.flags()...), "--interceptors", file)...)
	cmd.Env = append(os.Environ(), "GATEWAY_ACCESS_TOKEN="+sb.token, "PATH="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 ||
		!strings.Contains(stderr.String(), `interceptors[0] ("p"): type: plugin needs the plugin host mcp-gateway-plugin-host`) {
		t.Errorf("no plugin host: %v, stderr %q", err, stderr.String())
	}
	if sb.pid() != 0 {
		t.Error("a gateway started without its plugin host")
	}
}

// toolCall is a tools/call request body; meta, if set, is its params' _meta.
func toolCall(id int, tool, args, meta string) string {
	p := `{"name":"` + tool + `","arguments":` + args
	if meta != "" {
		p += `,"_meta":` + meta
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}}`, id, p)
}

// plainSession is an MCP session over plain HTTP requests, to see which
// path answered a call (application/json: the fast path; SSE: the SDK's).
type plainSession struct {
	t          *testing.T
	url, token string
	version    string // the protocol version it uses
	sid        string
}

func newPlainSession(t *testing.T, url, token, version string) *plainSession {
	s := &plainSession{t: t, url: url + "/mcp", token: token, version: version}
	h, _ := s.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	s.sid = h.Get("Mcp-Session-Id")
	s.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

func (s *plainSession) post(body string) (http.Header, []byte) {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.sid != "" {
		req.Header.Set("Mcp-Session-Id", s.sid)
		req.Header.Set("Mcp-Protocol-Version", s.version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.Header, b
}

// call posts a request and returns the answer's content type and its
// JSON-RPC message (the last data line of an SSE answer).
func (s *plainSession) call(body string) (string, []byte) {
	h, b := s.post(body)
	ct := h.Get("Content-Type")
	if strings.HasPrefix(ct, "text/event-stream") {
		var last []byte
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				last = []byte(d)
			}
		}
		return ct, last
	}
	return ct, b
}
