package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// gatewayBin is the mcp-gateway binary built once for the package's tests:
// the tests run it the way the SDKs do, as a separate process.
var gatewayBin string

func TestMain(m *testing.M) {
	fixture.RunIfRequested()
	dir, err := os.MkdirTemp("", "mcp-gateway-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	gatewayBin = filepath.Join(dir, "mcp-gateway")
	build := exec.Command("go", "build", "-o", gatewayBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build mcp-gateway:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// testbox is a temp-dir stand-in for the paths a gateway uses in a sandbox.
type testbox struct {
	t          *testing.T
	dir        string
	port       int
	token      string
	tokenFile  string
	logFile    string
	pidFile    string
	serversDir string
	catalog    string
	env        []string // extra environment for the gateway
}

func newTestbox(t *testing.T) *testbox {
	t.Helper()
	dir := t.TempDir()
	sb := &testbox{
		t:          t,
		dir:        dir,
		port:       freePort(t),
		token:      "tok-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		tokenFile:  filepath.Join(dir, "etc", ".token"),
		logFile:    filepath.Join(dir, "log", "mcp-gateway.log"),
		pidFile:    filepath.Join(dir, "run", "mcp-gateway.pid"),
		serversDir: filepath.Join(dir, "servers"),
		catalog:    filepath.Join(dir, "etc", "catalog.json"),
	}
	t.Cleanup(sb.stop)
	return sb
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func (sb *testbox) url() string { return fmt.Sprintf("http://127.0.0.1:%d", sb.port) }

func (sb *testbox) flags() []string {
	return []string{
		"--listen", fmt.Sprintf("127.0.0.1:%d", sb.port),
		"--token-file", sb.tokenFile,
		"--log-file", sb.logFile,
		"--pid-file", sb.pidFile,
		"--servers-dir", sb.serversDir,
		"--catalog", sb.catalog,
		// Ends as soon as every server is ready: long, so that a loaded
		// machine (node servers start in seconds at load 40) never fails a
		// launch; a test of the timeout passes its own.
		"--startup-timeout", "120s",
		"--shutdown-grace", "2s",
	}
}

// result is what a finished command printed and how it exited.
type result struct {
	stdout, stderr string
	code           int
}

// launch runs `mcp-gateway --config cfg` as the SDKs do: token in the
// environment, waiting for the command to exit.
func (sb *testbox) launch(cfg string, extra ...string) result {
	sb.t.Helper()
	args := append([]string{"--config", cfg}, sb.flags()...)
	args = append(args, extra...)
	cmd := exec.Command(gatewayBin, args...)
	cmd.Env = append(append(os.Environ(), "GATEWAY_ACCESS_TOKEN="+sb.token), sb.env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		sb.t.Fatal(err)
	}
	return result{out.String(), errb.String(), code}
}

// mustLaunch launches and fails the test unless the gateway became ready.
func (sb *testbox) mustLaunch(cfg string) result {
	sb.t.Helper()
	r := sb.launch(cfg)
	if r.code != 0 {
		sb.t.Fatalf("launch exited %d\nstdout: %s\nstderr: %s\nlog:\n%s", r.code, r.stdout, r.stderr, sb.log())
	}
	return r
}

func (sb *testbox) log() string {
	b, _ := os.ReadFile(sb.logFile)
	return string(b)
}

// pid returns the background gateway's pid from the pid file, or 0.
func (sb *testbox) pid() int {
	b, err := os.ReadFile(sb.pidFile)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// stop ends a launched gateway with SIGTERM and waits for its whole session
// to be gone, so that no test leaves processes behind.
func (sb *testbox) stop() {
	pid := sb.pid()
	if pid == 0 || !alive(pid) {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	// Ends as soon as the session is empty; the bound is for a loaded
	// machine, where the gateway's shutdown grace (2 s) and its children's
	// exits take much longer than on an idle one.
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && len(sessionMembers(pid)) > 0 {
		time.Sleep(20 * time.Millisecond)
	}
	if left := sessionMembers(pid); len(left) > 0 {
		killSession(pid)
		sb.t.Errorf("processes of the gateway's session left 60s after SIGTERM: %v", left)
	}
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// A zombie has exited; only its parent's wait is missing.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && !strings.HasPrefix(s[i+1:], " Z")
}

// sessionMembers lists the live processes whose session id is sid.
func sessionMembers(sid int) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) >= 4 && f[0] != "Z" && f[3] == strconv.Itoa(sid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// connect opens a Go SDK client session to the gateway with the token.
func (sb *testbox) connect(ctx context.Context, opts *mcp.ClientOptions) *mcp.ClientSession {
	sb.t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, opts)
	tr := &mcp.StreamableClientTransport{
		Endpoint:   sb.url() + "/mcp",
		HTTPClient: &http.Client{Transport: fixture.Bearer(sb.token, http.DefaultTransport)},
	}
	cs, err := client.Connect(ctx, tr, legacySession())
	if err != nil {
		sb.t.Fatalf("connect to gateway: %v\nlog:\n%s", err, sb.log())
	}
	sb.t.Cleanup(func() { cs.Close() })
	return cs
}

// health fetches /health without a token.
func (sb *testbox) health() (int, healthBody) {
	sb.t.Helper()
	resp, err := http.Get(sb.url() + "/health")
	if err != nil {
		sb.t.Fatal(err)
	}
	defer resp.Body.Close()
	var h healthBody
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		sb.t.Fatal(err)
	}
	return resp.StatusCode, h
}

type healthBody struct {
	Status  string `json:"status"`
	Tools   int    `json:"tools"`
	Servers []struct {
		Name      string `json:"name"`
		State     string `json:"state"`
		Tools     int    `json:"tools"`
		PID       int    `json:"pid"`
		Restarts  int    `json:"restarts"`
		LastExit  string `json:"lastExit"`
		LastError string `json:"lastError"`
	} `json:"servers"`
}

// toolNames lists every tool name, all pages.
func toolNames(t *testing.T, ctx context.Context, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	return names
}

// text returns the text of a tool result's first content.
func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatalf("tool result has no content: %+v", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", res.Content[0])
	}
	return tc.Text
}

// mcpConfig renders an mcp config object.
func mcpConfig(t *testing.T, servers map[string]any) string {
	t.Helper()
	b, err := json.Marshal(servers)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// legacySession pins a Go SDK client to the 2025 era (initialize, a
// session): the SDK's default client negotiates 2026-07-28 with the gateway,
// which serves it without a session, and the tests that use this are about
// what a 2025-era session gets. The 2026 era has tests of its own (era_test.go).
func legacySession() *mcp.ClientSessionOptions {
	return &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
}

// piped is a process started by startPiped.
type piped struct {
	cmd    *exec.Cmd
	in     io.WriteCloser // its stdin
	out    io.ReadCloser  // its stdout
	stderr *fixture.Log   // what it wrote on stderr so far
	// stop closes stdin, kills the process's session (the process and
	// whatever it started) and waits for the process. It runs at the
	// test's end; a test that waits for the process itself (cmd.Wait)
	// may still call it.
	stop func()
}

// startPiped starts cmd in a session of its own, so that whatever it starts
// can be reaped with it, with stdin and stdout as pipes and stderr
// collected: a client's or a stdio gateway's process, talked to line by
// line.
func startPiped(t testing.TB, cmd *exec.Cmd) *piped {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &piped{cmd: cmd, in: in, out: out, stderr: &fixture.Log{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	// Killed before the wait: a process still waiting for input (a
	// client told to cancel, say) would not end at EOF.
	p.stop = sync.OnceFunc(func() {
		in.Close()
		killSession(cmd.Process.Pid)
		_ = cmd.Wait()
	})
	t.Cleanup(p.stop)
	return p
}

// initializeStdio sends a 2025-era initialize to a stdio gateway started by
// startPiped and returns its answer's line: the gateway answers once its
// servers are ready, so their processes are running by then.
func initializeStdio(t testing.TB, p *piped) string {
	t.Helper()
	io.WriteString(p.in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	line, err := bufio.NewReader(p.out).ReadString('\n')
	if err != nil || !strings.Contains(line, `"id":1`) || !strings.Contains(line, `"result"`) {
		t.Fatalf("initialize: %q %v", line, err)
	}
	return line
}
