package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// readmeStdioLog is where the README's smoke test sends stderr.
const readmeStdioLog = "/tmp/mcp-gateway-stdio.log"

// readmeSmokeTest returns the README's `printf ... | mcp-gateway stdio`
// commands (the first sh block of its stdio mode section), so that the
// documented smoke test is the tested one.
func readmeSmokeTest(t *testing.T) string {
	t.Helper()
	block := readmeBlocks(t, "## stdio mode", "sh", 1)[0]
	if !strings.Contains(block, "| ./bin/mcp-gateway stdio 2>"+readmeStdioLog+"; echo \"exit $?\"") {
		t.Fatal("README.md's stdio mode block does not pipe into `./bin/mcp-gateway stdio 2>" + readmeStdioLog + "`")
	}
	return block
}

// TestStdioPrintfSmoke runs the README's `printf ... | mcp-gateway stdio`
// with no config (the built-in sandbox server): exactly one single-line
// JSON answer per request, nothing for the notification, logs on stderr
// only, exit 0 at EOF, and no process left.
func TestStdioPrintfSmoke(t *testing.T) {
	dir := t.TempDir()
	// As documented, from a directory whose bin/ holds the binary, with
	// the log in the test's own directory.
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(gatewayBin, filepath.Join(dir, "bin", "mcp-gateway")); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "stdio.log")
	script := strings.Replace(readmeSmokeTest(t), readmeStdioLog, logPath, 1)
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var out, shErr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &shErr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, shErr.String())
	}
	logged, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	stderr := bytes.NewBuffer(logged)
	// The shell's own `echo "exit $?"` ends the output.
	stdoutText, ok := strings.CutSuffix(out.String(), "exit 0\n")
	if !ok || shErr.Len() != 0 {
		t.Fatalf("output does not end in \"exit 0\" (shell stderr %q):\n%s", shErr.String(), out.String())
	}
	stdout := bytes.NewBufferString(stdoutText)
	t.Cleanup(func() { killSession(cmd.Process.Pid) })
	if left := sessionMembers(cmd.Process.Pid); len(left) > 0 {
		t.Errorf("processes left after EOF: %v", left)
	}

	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("stdout has %d lines, want 2 (one per request, none for the notification):\n%s", len(lines), stdout.String())
	}
	for i, l := range lines {
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(l)); err != nil || compact.String() != l {
			t.Errorf("line %d is not single-line compact JSON (%v): %s", i+1, err, l)
		}
	}
	// The initialize answer, exactly; capabilities are the aggregator's to
	// choose and are checked for tools separately.
	var init struct {
		Result struct {
			Capabilities json.RawMessage `json:"capabilities"`
			Instructions json.RawMessage `json:"instructions"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &init); err != nil {
		t.Fatal(err)
	}
	// The built-in server's instructions, passed on (checked in aggregate).
	// Members in the schema's order, as servers connected directly send them.
	want := `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":` + string(init.Result.Capabilities) +
		`,"serverInfo":{"name":"mcp-gateway","version":"dev"},"instructions":` + string(init.Result.Instructions) + `}}`
	if lines[0] != want {
		t.Errorf("initialize answer\n got %s\nwant %s", lines[0], want)
	}
	var caps struct {
		Tools *struct {
			ListChanged bool `json:"listChanged"`
		} `json:"tools"`
	}
	if json.Unmarshal(init.Result.Capabilities, &caps); caps.Tools == nil || !caps.Tools.ListChanged {
		t.Errorf("capabilities %s lack tools.listChanged", init.Result.Capabilities)
	}
	var list struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int    `json:"id"`
		Result  struct {
			Tools []struct {
				Name        string         `json:"name"`
				InputSchema map[string]any `json:"inputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Result.Tools {
		names = append(names, tl.Name)
		if tl.InputSchema["type"] != "object" {
			t.Errorf("tool %s schema %v", tl.Name, tl.InputSchema)
		}
	}
	if wantNames := []string{"edit_file", "list_directory", "read_file", "run_command", "write_file"}; list.JSONRPC != "2.0" || list.ID != 2 || !slices.Equal(names, wantNames) {
		t.Errorf("tools/list answer: id %d, tools %v; want id 2, %v", list.ID, names, wantNames)
	}

	// Logs go to stderr, one JSON object per line.
	if !strings.Contains(stderr.String(), `"message":"ready"`) || !strings.Contains(stderr.String(), `"transport":"stdio"`) {
		t.Errorf("stderr lacks the ready log line:\n%s", stderr.String())
	}
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if !json.Valid([]byte(l)) {
			t.Errorf("stderr line is not a JSON log line: %q", l)
		}
	}
}

// TestStdioGoClient drives `mcp-gateway stdio` the way desktop apps do:
// the Go SDK's CommandTransport launches it, lists and calls merged tools,
// and closes stdin; the gateway stops its servers and exits 0 on EOF.
func TestStdioGoClient(t *testing.T) {
	dir := t.TempDir()
	logFile := filepath.Join(dir, "stdio.log")
	cfg := mcpConfig(t, map[string]any{
		"alpha": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "alpha", Tools: []string{"echo", "pid"}, ExtraTools: []string{"shared"}})},
		"beta":  map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "beta", Tools: []string{"pid"}, ExtraTools: []string{"shared"}})},
	})
	cmd := exec.Command(gatewayBin, "stdio", "--config", cfg, "--log-file", logFile,
		"--catalog", filepath.Join(dir, "catalog.json"), "--servers-dir", filepath.Join(dir, "servers"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "desktop-app", Version: "1"}, nil)
	// A long TerminateDuration: the gateway must exit on EOF, not on SIGTERM.
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Minute}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr: %s", err, stderr.String())
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			cs.Close()
		}
		killSession(cmd.Process.Pid)
	})
	names := toolNames(t, ctx, cs)
	slices.Sort(names)
	if want := []string{"beta_pid", "beta_shared", "echo", "pid", "shared"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	call := func(name string, args map[string]any) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("call %s: %v", name, err)
		}
		return text(t, res)
	}
	if got := call("echo", map[string]any{"text": "over stdio"}); got != "over stdio" {
		t.Errorf("echo = %q", got)
	}
	if got := call("beta_shared", nil); got != "beta:shared" {
		t.Errorf("beta_shared = %q", got)
	}
	var pids []int
	for _, tool := range []string{"pid", "beta_pid"} {
		pid, err := strconv.Atoi(call(tool, nil))
		if err != nil || !alive(pid) {
			t.Fatalf("%s: %v, alive %v", tool, err, alive(pid))
		}
		pids = append(pids, pid)
	}

	closed = true
	if err := cs.Close(); err != nil {
		t.Errorf("gateway exit after stdin closed: %v", err)
	}
	if left := sessionMembers(cmd.Process.Pid); len(left) > 0 {
		t.Errorf("processes left after EOF: %v", left)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("server pid %d alive after the gateway exited", pid)
		}
	}
	logb, _ := os.ReadFile(logFile)
	if !strings.Contains(string(logb), "stdin closed; shutting down") || !strings.Contains(string(logb), "gateway stopped") {
		t.Errorf("log does not show a shutdown on EOF:\n%s", logb)
	}
	if stderr.Len() != 0 {
		t.Errorf("with --log-file, stderr should stay empty; got:\n%s", stderr.String())
	}
}

// TestStdioStartupFailure: a server that cannot start fails `stdio` with the
// launch's kind of message and exit code, and nothing on stdout.
func TestStdioStartupFailure(t *testing.T) {
	dir := t.TempDir()
	run := func(args ...string) (stdout, stderr string, code int) {
		t.Helper()
		cmd := exec.Command(gatewayBin, append([]string{"stdio", "--catalog", filepath.Join(dir, "catalog.json")}, args...)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		// stdin stays open (a pipe nobody writes): startup, not EOF, ends it.
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err = cmd.Run()
		killSession(cmd.Process.Pid)
		code = 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}
	cfg := mcpConfig(t, map[string]any{
		"bad":  map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{ExitAtStart: 3})},
		"good": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{})},
	})
	stdout, stderr, code := run("--config", cfg)
	if code != 1 || stdout != "" {
		t.Errorf("exit %d, stdout %q; want 1 and nothing", code, stdout)
	}
	for _, want := range []string{`mcp-gateway: server "bad" failed to start`, "exit status 3", "failing at start as asked"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}

	if _, stderr, code := run("--config", `{"nope": {}}`); code != 2 || !strings.Contains(stderr, `unknown server "nope"`) {
		t.Errorf("bad config: exit %d, stderr %q", code, stderr)
	}
	for _, flag := range []string{"--listen=:0", "--token-file=/x", "--pid-file=/x", "--max-sessions=3"} {
		name, _, _ := strings.Cut(flag, "=")
		if _, stderr, code := run(flag); code != 2 || !strings.Contains(stderr, name+" does not apply to stdio mode") {
			t.Errorf("%s: exit %d, stderr %q", flag, code, stderr)
		}
	}
}

// TestStdioCancelledCallGetsNoAnswer: in stdio mode a call the client
// cancels with notifications/cancelled gets no answer (the spec: the
// receiver SHOULD NOT respond), with or without a progress token; the
// server is told, and the next requests are answered.
func TestStdioCancelledCallGetsNoAnswer(t *testing.T) {
	dir := t.TempDir()
	logFile := filepath.Join(dir, "stdio.log")
	cfg := mcpConfig(t, map[string]any{
		"a": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "a", Tools: []string{"echo", "sleep"}})},
	})
	cmd := exec.Command(gatewayBin, "stdio", "--config", cfg, "--log-file", logFile,
		"--catalog", filepath.Join(dir, "catalog.json"), "--servers-dir", filepath.Join(dir, "servers"))
	p := startPiped(t, cmd)
	in, out := p.in, p.out
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	send := func(msg string) {
		t.Helper()
		if _, err := io.WriteString(in, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// answers reads lines until every id of want is answered, and returns
	// the ids of every response read.
	answers := func(want ...string) []string {
		t.Helper()
		var ids []string
		deadline := time.After(30 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("stdout closed; responses so far %v", ids)
				}
				var m struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatalf("stdout line %q: %v", l, err)
				}
				if m.Method != "" || len(m.ID) == 0 {
					continue // a notification
				}
				ids = append(ids, string(m.ID))
				if !slices.ContainsFunc(want, func(id string) bool { return !slices.Contains(ids, id) }) {
					return ids
				}
			case <-deadline:
				t.Fatalf("no answers with ids %v; responses so far %v", want, ids)
			}
		}
	}
	logCount := func(s string) int {
		b, _ := os.ReadFile(logFile)
		return strings.Count(string(b), s)
	}

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	answers("1")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, c := range []struct{ id, meta string }{{"2", ""}, {`"p-3"`, `,"_meta":{"progressToken":"t3"}`}} {
		send(`{"jsonrpc":"2.0","id":` + c.id + `,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":600000}` + c.meta + `}}`)
		waitFor(t, 30*time.Second, "the sleep to start", func() bool { return logCount("sleep started") == i+1 })
		send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + c.id + `,"reason":"test"}}`)
		waitFor(t, 10*time.Second, "the server to see the cancellation", func() bool { return logCount("sleep cancelled") == i+1 })
	}
	// A call through the server and a ping after the cancellations: every
	// answer the gateway gave meanwhile is read by then.
	send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"after"}}}`)
	send(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	if ids := answers("4", "5"); !slices.Equal(slices.Sorted(slices.Values(ids)), []string{"4", "5"}) {
		t.Errorf("responses after the cancellations have ids %v, want [4 5] (none for the cancelled 2 and \"p-3\")", ids)
	}
}

// TestStdioTasks: in stdio mode, a task-augmented call and tasks/list reach
// the server (the SDK's server knows neither), with the gateway's task id;
// with --tools search, a task-augmented call_tool is the task call of the
// tool it names.
func TestStdioTasks(t *testing.T) {
	for _, view := range []struct{ flag, call string }{
		{"all", `{"name":"task_echo","arguments":{},"task":{}}`},
		{"search", `{"name":"call_tool","arguments":{"name":"task_echo","arguments":{}},"task":{}}`},
	} {
		t.Run(view.flag, func(t *testing.T) { stdioTask(t, view.flag, view.call) })
	}
}

func stdioTask(t *testing.T, view, call string) {
	dir := t.TempDir()
	cfg := mcpConfig(t, map[string]any{
		"a": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "a", Tools: []string{"echo"}, Tasks: true})},
	})
	cmd := exec.Command(gatewayBin, "stdio", "--tools", view, "--config", cfg, "--log-file", filepath.Join(dir, "stdio.log"),
		"--catalog", filepath.Join(dir, "catalog.json"), "--servers-dir", filepath.Join(dir, "servers"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Stdin = strings.NewReader(strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":` + call + `}`,
	}, "\n") + "\n")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killSession(cmd.Process.Pid) })
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"tasks":{`) {
		t.Fatalf("want the initialize answer, with tasks, and the call's:\n%s", stdout.String())
	}
	var created struct {
		ID     int `json:"id"`
		Result struct {
			Task struct {
				TaskID string `json:"taskId"`
			} `json:"task"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &created); err != nil || created.ID != 2 || !strings.HasPrefix(created.Result.Task.TaskID, "task-") {
		t.Errorf("task-augmented call answered %s", lines[1])
	}
}

// TestStdioForwardsParamsAsSent: in stdio mode, requests reach the server
// with the params the client sent, byte for byte (unknown members and the
// order of members kept), as over HTTP: the transport hands the gateway the
// params it read, not only the SDK's decoding of them. The fixture says
// what it read (fixture.ParamsSeenTool).
func TestStdioForwardsParamsAsSent(t *testing.T) {
	dir := t.TempDir()
	cfg := mcpConfig(t, map[string]any{
		"a": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "a", Verbatim: true})},
	})
	cmd := exec.Command(gatewayBin, "stdio", "--config", cfg, "--log-file", filepath.Join(dir, "stdio.log"),
		"--catalog", filepath.Join(dir, "catalog.json"), "--servers-dir", filepath.Join(dir, "servers"))
	p := startPiped(t, cmd)
	in, out := p.in, p.out
	lines := bufio.NewScanner(out)
	lines.Buffer(nil, 1<<20)
	// ask sends a request and returns its response, skipping notifications.
	ask := func(id int, method, params string) string {
		t.Helper()
		if _, err := io.WriteString(in, `{"jsonrpc":"2.0","id":`+strconv.Itoa(id)+`,"method":"`+method+`","params":`+params+"}\n"); err != nil {
			t.Fatal(err)
		}
		for lines.Scan() {
			if strings.Contains(lines.Text(), `"id":`+strconv.Itoa(id)+`,`) {
				return lines.Text()
			}
		}
		t.Fatalf("%s: no answer: %v", method, lines.Err())
		return ""
	}
	ask(1, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}`)
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct{ method, params string }{
		{"prompts/get", `{"zeta":true,"name":"greet","arguments":{"name":"x"},"alpha":{"b":1,"a":2}}`},
		{"resources/read", `{"uri":"` + fixture.SharedResourceURI + `","x-extra":[2,1]}`},
		{"tools/call", `{"extra":{"z":1,"a":2},"name":"echo","arguments":{"text":"hi"}}`},
	} {
		if got := ask(10+i, c.method, c.params); strings.Contains(got, `"error"`) {
			t.Fatalf("%s: %s", c.method, got)
		}
		got := ask(20+i, "tools/call", `{"name":"`+fixture.ParamsSeenTool+`","arguments":{"method":"`+c.method+`"}}`)
		var res struct {
			Result mcp.CallToolResult `json:"result"`
		}
		var seen []json.RawMessage
		if err := json.Unmarshal([]byte(got), &res); err != nil || len(res.Result.Content) == 0 {
			t.Fatalf("%s: %s", fixture.ParamsSeenTool, got)
		}
		if err := json.Unmarshal([]byte(res.Result.Content[0].(*mcp.TextContent).Text), &seen); err != nil || len(seen) == 0 {
			t.Fatalf("%s: %s", fixture.ParamsSeenTool, got)
		}
		if !slices.ContainsFunc(seen, func(p json.RawMessage) bool { return string(p) == c.params }) {
			t.Errorf("%s: the client sent\n%s\nthe server read\n%s", c.method, c.params, seen)
		}
	}
}

// TestStdioCPUProfile: stdio mode writes the CPU profile MCP_GATEWAY_CPUPROFILE
// names (the benchmark's stdio rows profile it so), and the allocation
// profile next to it, once stdin closes and it exits.
func TestStdioCPUProfile(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "stdio.pprof")
	cfg := mcpConfig(t, map[string]any{
		"alpha": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "alpha", Tools: []string{"echo"}})},
	})
	cmd := exec.Command(gatewayBin, "stdio", "--config", cfg, "--log-file", filepath.Join(dir, "stdio.log"),
		"--catalog", filepath.Join(dir, "catalog.json"), "--servers-dir", filepath.Join(dir, "servers"))
	cmd.Env = append(os.Environ(), "MCP_GATEWAY_CPUPROFILE="+prof)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "profiler", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Minute}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { killSession(cmd.Process.Pid) })
	if got, err := fixture.CallText(ctx, cs, "echo", map[string]any{"text": "profiled"}); err != nil || got != "profiled" {
		t.Fatalf("echo: %q, %v", got, err)
	}
	if err := cs.Close(); err != nil {
		t.Fatalf("gateway exit after stdin closed: %v", err)
	}
	for _, p := range []string{prof, prof + ".allocs"} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("profile not written: %v", err)
		}
		// Both are gzipped protocol buffers (runtime/pprof).
		if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Errorf("%s is not a pprof profile (%d bytes)", p, len(b))
		}
	}
}
