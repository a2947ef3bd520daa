package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
)

// TestLaunch runs the gateway as the SDKs do and uses it as an agent would:
// the contract end to end.
func TestLaunch(t *testing.T) {
	sb := newTestbox(t)
	cfg := mcpConfig(t, map[string]any{
		"alpha": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "alpha", ExtraTools: []string{"shared"}})},
		"beta": map[string]any{
			"run_cmd": fixture.ShellCommand(fixture.Options{Name: "beta", Tools: []string{"echo", "env"}, ExtraTools: []string{"shared"}}),
			"envs":    map[string]string{"BETA_SECRET": "beta-value-123"},
		},
	})
	r := sb.mustLaunch(cfg)
	if !regexp.MustCompile(`^mcp-gateway ready on 127\.0\.0\.1:\d+ \(2 servers, \d+ tools\) in \d`).MatchString(r.stdout) {
		t.Errorf("ready line = %q", r.stdout)
	}

	// The token file: the token, mode 0600.
	fi, err := os.Stat(sb.tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(sb.tokenFile); string(b) != sb.token {
		t.Errorf("token file holds %q, want the GATEWAY_ACCESS_TOKEN value", b)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := sb.connect(ctx, nil)
	names := toolNames(t, ctx, cs)
	// alpha sorts first: it keeps the plain names; beta's conflicting tools
	// are prefixed.
	for _, want := range []string{"echo", "shared", "env", "crash", "beta_echo", "beta_shared", "beta_env"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %q; got %v", want, names)
		}
	}
	nameRE := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	for _, n := range names {
		if !nameRE.MatchString(n) {
			t.Errorf("exported name %q breaks the client name rule", n)
		}
	}
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("call %s: %v", name, err)
		}
		return res
	}
	if got := text(t, call("shared", nil)); got != "alpha:shared" {
		t.Errorf("shared answered by %q, want alpha:shared", got)
	}
	if got := text(t, call("beta_shared", nil)); got != "beta:shared" {
		t.Errorf("beta_shared answered by %q, want beta:shared", got)
	}
	if got := text(t, call("beta_echo", map[string]any{"text": "hi there"})); got != "hi there" {
		t.Errorf("beta_echo = %q", got)
	}
	// envs reach their own server only, and the token reaches none.
	if got := text(t, call("beta_env", map[string]any{"name": "BETA_SECRET"})); got != "beta-value-123" {
		t.Errorf("beta sees BETA_SECRET = %q", got)
	}
	if res := call("env", map[string]any{"name": "BETA_SECRET"}); !res.IsError {
		t.Errorf("alpha sees beta's secret: %q", text(t, res))
	}
	if res := call("env", map[string]any{"name": "GATEWAY_ACCESS_TOKEN"}); !res.IsError {
		t.Errorf("alpha sees the access token: %q", text(t, res))
	}
	// A tool error passes through as a tool error.
	if res := call("fail", map[string]any{"message": "nope"}); !res.IsError || text(t, res) != "nope" {
		t.Errorf("fail = %+v", res)
	}
	// An unknown tool is a JSON-RPC error naming it.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool"}); err == nil || !strings.Contains(err.Error(), "no_such_tool") {
		t.Errorf("unknown tool: err = %v", err)
	}

	// /health needs no token and reports servers and counts.
	code, h := sb.health()
	if code != 200 || h.Status != "ok" || len(h.Servers) != 2 || h.Tools != len(names) {
		t.Errorf("health = %d %+v, want 200 ok with 2 servers and %d tools", code, h, len(names))
	}
	for _, s := range h.Servers {
		if s.State != "ready" || s.Tools == 0 || s.PID == 0 {
			t.Errorf("health server %+v", s)
		}
	}

	// Without the token: 401 with a Bearer challenge.
	resp, err := http.Post(sb.url()+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("no token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}

	// Nothing leaks: the background gateway and every server have neither
	// the token nor the config in argv or environment.
	pids := []int{sb.pid()}
	for _, s := range h.Servers {
		pids = append(pids, s.PID)
	}
	for _, pid := range pids {
		for _, f := range []string{"cmdline", "environ"} {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, f))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), sb.token) {
				t.Errorf("/proc/%d/%s contains the token", pid, f)
			}
			if f == "cmdline" && strings.Contains(string(b), "BETA_SECRET") {
				t.Errorf("/proc/%d/cmdline contains the config", pid)
			}
		}
	}
	// The gateway runs in its own session, detached from the launcher.
	if sid := sessionOf(t, sb.pid()); sid != sb.pid() {
		t.Errorf("gateway session id %d, want its own (%d)", sid, sb.pid())
	}
}

func sessionOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	var sid int
	fmt.Sscan(f[3], &sid)
	return sid
}

// TestLaunchRejectsBadConfig checks that invalid input fails at once with a
// message naming the server and the field, and starts nothing.
func TestLaunchRejectsBadConfig(t *testing.T) {
	many := map[string]any{}
	for i := range 65 {
		many[fmt.Sprintf("s%02d", i)] = map[string]any{"runCmd": "true"}
	}
	cases := []struct {
		name, cfg string
		want      []string
	}{
		{"not an object", `["time"]`, []string{"object"}},
		{"null", `null`, []string{"object"}},
		{"entry not an object", `{"time": "yes"}`, []string{`"time"`, "object"}},
		{"bad github key", `{"github/acme": {"runCmd": "x"}}`, []string{"github/acme", "github/<owner>/<repo>"}},
		{"github dot-dot", `{"github/acme/..": {"runCmd": "x"}}`, []string{"github/acme/.."}},
		{"github missing runCmd", `{"github/acme/x": {"installCmd": "npm ci"}}`, []string{"github/acme/x", "runCmd"}},
		{"blank runCmd", `{"local": {"runCmd": "  "}}`, []string{`"local"`, "runCmd"}},
		{"runCmd not a string", `{"local": {"runCmd": ["a"]}}`, []string{`"local"`, "runCmd"}},
		{"bad env name", `{"local": {"runCmd": "x", "envs": {"1BAD": "v"}}}`, []string{`"local"`, "1BAD"}},
		{"env value not a string", `{"local": {"runCmd": "x", "envs": {"PORT": 8080}}}`, []string{`"local"`, "PORT"}},
		{"unknown server", `{"nosuchserver": {}}`, []string{"nosuchserver", "`mcp-gateway catalog <word>` searches them"}},
		{"Docker-only server", `{"githubOfficial": {"githubPersonalAccessToken": "x"}}`, []string{`"githubOfficial" cannot start here`, "runCmd"}},
		{"missing required property", `{"filesystem": {}}`, []string{"filesystem", "paths"}},
		{"too many servers", mcpConfig(t, many), []string{"64"}},
		{"not JSON", `{"time": `, []string{"JSON"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sb := newTestbox(t)
			r := sb.launch(c.cfg)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2; stderr: %s", r.code, r.stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q does not mention %q", r.stderr, w)
				}
			}
			if strings.Count(strings.TrimSpace(r.stderr), "\n") > 2 {
				t.Errorf("stderr is not short: %q", r.stderr)
			}
			if _, err := os.Stat(sb.tokenFile); err == nil {
				t.Error("token file written for a rejected config")
			}
			if _, err := os.Stat(sb.logFile); err == nil {
				t.Error("log file created: something was started")
			}
		})
	}
}

// TestLaunchUnknownPropertyWarns: an unknown property is a warning, not an error.
func TestLaunchUnknownPropertyWarns(t *testing.T) {
	sb := newTestbox(t)
	r := sb.mustLaunch(mcpConfig(t, map[string]any{
		"alpha": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{}), "colour": "blue"},
	}))
	if !strings.Contains(r.stderr, "warning") || !strings.Contains(r.stderr, "colour") {
		t.Errorf("stderr %q lacks a warning about colour", r.stderr)
	}
}

// TestLaunchServerFails: a server that cannot start fails the launch with
// its name and stderr, and leaves nothing behind.
func TestLaunchServerFails(t *testing.T) {
	sb := newTestbox(t)
	r := sb.launch(mcpConfig(t, map[string]any{
		"good":   map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{})},
		"broken": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{ExitAtStart: 3})},
	}))
	if r.code == 0 {
		t.Fatal("launch succeeded with a broken server")
	}
	for _, w := range []string{`"broken"`, "exit status 3", "failing at start as asked"} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr %q lacks %q", r.stderr, w)
		}
	}
	if _, err := os.Stat(sb.tokenFile); err == nil {
		t.Error("token file left after a failed launch")
	}
	if pid := sb.pid(); pid != 0 && len(sessionMembers(pid)) > 0 {
		t.Errorf("processes left after a failed launch: %v", sessionMembers(pid))
	}
}

// TestLaunchTimeout names the servers that were not ready in time. The
// timeout is long enough for the quick server to be ready on a loaded
// machine; the slow one is never ready within it.
func TestLaunchTimeout(t *testing.T) {
	sb := newTestbox(t)
	r := sb.launch(mcpConfig(t, map[string]any{
		"quick": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{})},
		"slow":  map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{StartDelay: time.Hour})},
	}), "--startup-timeout", "10s")
	if r.code == 0 {
		t.Fatal("launch succeeded past its timeout")
	}
	if !strings.Contains(r.stderr, "timed out") || !strings.Contains(r.stderr, "slow") || strings.Contains(r.stderr, "quick") {
		t.Errorf("stderr %q should name only the slow server", r.stderr)
	}
	if pid := sb.pid(); pid != 0 && len(sessionMembers(pid)) > 0 {
		t.Errorf("processes left after a timed-out launch: %v", sessionMembers(pid))
	}
}

// TestSecondLaunchRefused: one gateway per sandbox.
func TestSecondLaunchRefused(t *testing.T) {
	sb := newTestbox(t)
	cfg := mcpConfig(t, map[string]any{"a": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{})}})
	sb.mustLaunch(cfg)
	r := sb.launch(cfg)
	if r.code == 0 || !strings.Contains(r.stderr, "already running") || !strings.Contains(r.stderr, fmt.Sprint(sb.pid())) {
		t.Errorf("second launch: exit %d, stderr %q; want a refusal naming the pid", r.code, r.stderr)
	}
	// The first gateway is unharmed, with its token file.
	if code, h := sb.health(); code != 200 || h.Status != "ok" {
		t.Errorf("first gateway after refused launch: %d %+v", code, h)
	}
	if _, err := os.Stat(sb.tokenFile); err != nil {
		t.Errorf("token file gone after refused launch: %v", err)
	}
}

// TestCrashAndRestart: a server that dies mid-call fails that call with its
// name and exit status; it is started again and the next call succeeds.
func TestCrashAndRestart(t *testing.T) {
	sb := newTestbox(t)
	sb.mustLaunch(mcpConfig(t, map[string]any{
		"alpha": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{})},
		"other": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Tools: []string{"pid"}})},
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := sb.connect(ctx, nil)
	otherPID := func() string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "other_pid"})
		if err != nil {
			t.Fatal(err)
		}
		return text(t, res)
	}
	before := otherPID()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "crash", Arguments: map[string]any{"code": 7}})
	if err == nil {
		t.Fatal("crash call succeeded")
	}
	for _, w := range []string{`"alpha"`, "exit status 7", "crashing with code 7"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("crash error %q lacks %q", err, w)
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "back"}})
	if err != nil || text(t, res) != "back" {
		t.Fatalf("call after restart: %v %v", res, err)
	}
	_, h := sb.health()
	for _, s := range h.Servers {
		if s.Name == "alpha" && (s.Restarts != 1 || s.LastExit != "exit status 7") {
			t.Errorf("alpha health after crash: %+v", s)
		}
	}
	// The other server was not disturbed: same process.
	if after := otherPID(); after != before {
		t.Errorf("other server restarted: pid %s -> %s", before, after)
	}
}

// TestServeSIGTERM runs the foreground gateway and stops it with SIGTERM:
// exit 0 and no process of its tree left.
func TestServeSIGTERM(t *testing.T) {
	sb := newTestbox(t)
	cfg := mcpConfig(t, map[string]any{
		"a": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{})},
		"b": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{})},
	})
	args := append([]string{"serve", "--config", cfg}, sb.flags()...)
	cmd := newCmd(gatewayBin, args...)
	cmd.Env = append(os.Environ(), "GATEWAY_ACCESS_TOKEN="+sb.token)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	lines := startLines(t, cmd)
	select {
	case l := <-lines:
		if !strings.HasPrefix(l, "mcp-gateway ready on") {
			t.Fatalf("first stdout line %q", l)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve never became ready")
	}
	_, h := sb.health()
	if len(h.Servers) != 2 {
		t.Fatalf("health %+v", h)
	}
	stopServe(t, cmd, 15*time.Second)
	for _, s := range h.Servers {
		if alive(s.PID) {
			t.Errorf("server %s (pid %d) still alive", s.Name, s.PID)
		}
	}
}

// stopServe sends SIGTERM to a foreground `serve` and checks that it exits 0
// within wait, leaving no process of its session behind.
func stopServe(t *testing.T, cmd *exec.Cmd, wait time.Duration) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve exited with %v after SIGTERM, want 0", err)
		}
	case <-time.After(wait):
		cmd.Process.Kill()
		t.Fatal("serve did not exit after SIGTERM")
	}
	if left := sessionMembers(cmd.Process.Pid); len(left) > 0 {
		killSession(cmd.Process.Pid)
		t.Errorf("processes left after SIGTERM: %v", left)
	}
}

// TestLaunchTokenFileUnwritable: the token file is written while the
// gateway starts; when it cannot be, the launch fails with the reason and
// leaves no gateway running.
func TestLaunchTokenFileUnwritable(t *testing.T) {
	sb := newTestbox(t)
	blocker := filepath.Join(sb.dir, "tok")
	sb.tokenFile = filepath.Join(blocker, ".token")
	if err := os.WriteFile(blocker, []byte("a file where the token's directory should be"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := sb.launch(mcpConfig(t, map[string]any{"alpha": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{})}}))
	if r.code == 0 {
		t.Fatalf("launch succeeded without its token file: %q", r.stdout)
	}
	if !strings.Contains(r.stderr, "token file") {
		t.Errorf("stderr %q does not name the token file", r.stderr)
	}
	waitFor(t, 10*time.Second, "the gateway to be gone", func() bool {
		pid := sb.pid()
		return pid == 0 || len(sessionMembers(pid)) == 0
	})
}

// TestAwaitStart: the launch reports ready only once the gateway is ready
// and the token file is written, whichever comes last, and fails as soon as
// either fails, the start times out, or the launch is interrupted.
func TestAwaitStart(t *testing.T) {
	ready := readyMsg{OK: true, Summary: gateway.Summary{Listen: ":50005", Servers: 1}}
	boom := errors.New("write token file: disk full")
	type step struct {
		ready, failed bool  // a message from the gateway
		token         error // the write's result (nil: written)
		write         bool  // the write finishes at this step
		timeout       bool
		cancel        bool
	}
	for _, c := range []struct {
		name        string
		steps       []step
		ok, stop    bool
		errContains string
	}{
		{"ready, then written", []step{{ready: true}, {write: true}}, true, false, ""},
		{"written, then ready", []step{{write: true}, {ready: true}}, true, false, ""},
		{"ready, then the write fails", []step{{ready: true}, {write: true, token: boom}}, false, true, "disk full"},
		{"the write fails first", []step{{write: true, token: boom}}, false, true, "disk full"},
		{"the gateway fails", []step{{failed: true}}, false, false, "server \"x\" failed"},
		{"ready, write hanging, interrupted", []step{{ready: true}, {cancel: true}}, false, true, "interrupted"},
		{"ready, write hanging, timed out", []step{{ready: true}, {timeout: true}}, false, false, "timed out"},
	} {
		t.Run(c.name, func(t *testing.T) {
			msgc, tokenErr := make(chan readyMsg, 1), make(chan error, 1)
			timeout := make(chan time.Time, 1)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			res := make(chan startResult, 1)
			go func() { res <- awaitStart(ctx, msgc, tokenErr, timeout, time.Minute) }()
			for i, s := range c.steps {
				switch {
				case s.ready:
					msgc <- ready
				case s.failed:
					msgc <- readyMsg{Error: `server "x" failed`}
				case s.write:
					tokenErr <- s.token
				case s.timeout:
					timeout <- time.Now()
				case s.cancel:
					cancel()
				}
				if i < len(c.steps)-1 {
					select {
					case r := <-res:
						t.Fatalf("returned %+v after step %d of %d", r, i+1, len(c.steps))
					case <-time.After(50 * time.Millisecond):
					}
				}
			}
			r := <-res
			if r.ok != c.ok || r.stop != c.stop || (c.errContains == "") != (r.err == nil) ||
				(r.err != nil && !strings.Contains(r.err.Error(), c.errContains)) {
				t.Fatalf("got %+v, want ok %v stop %v error containing %q", r, c.ok, c.stop, c.errContains)
			}
			if r.ok && r.summary != ready.Summary {
				t.Errorf("summary %+v, want %+v", r.summary, ready.Summary)
			}
		})
	}
}

// TestLaunchTokenDirMode: a token directory the launch creates is private
// (0700), even when the log file goes in it too.
func TestLaunchTokenDirMode(t *testing.T) {
	sb := newTestbox(t)
	state := filepath.Join(sb.dir, "state")
	sb.tokenFile, sb.logFile = filepath.Join(state, ".token"), filepath.Join(state, "gw.log")
	sb.mustLaunch(mcpConfig(t, map[string]any{"alpha": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{})}}))
	fi, err := os.Stat(state)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("token directory mode %v, want 0700", fi.Mode().Perm())
	}
}
