package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// End-to-end tests of the supervisor: real gateway
// binary, real server processes, real MCP clients over HTTP.

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serverHealth returns the /health entry of the named server.
func (sb *testbox) serverHealth(name string) (status string, s serverEntry) {
	sb.t.Helper()
	_, h := sb.health()
	for _, e := range h.Servers {
		if e.Name == name {
			return h.Status, e
		}
	}
	sb.t.Fatalf("no server %q in /health: %+v", name, h)
	return "", s
}

type serverEntry = struct {
	Name      string `json:"name"`
	State     string `json:"state"`
	Tools     int    `json:"tools"`
	PID       int    `json:"pid"`
	Restarts  int    `json:"restarts"`
	LastExit  string `json:"lastExit"`
	LastError string `json:"lastError"`
}

// cpuTime is the user+system CPU a process has used, from /proc/<pid>/stat
// (fields 14 and 15, in USER_HZ ticks, which Linux fixes at 100 per second
// in its user ABI). Children's time is not included.
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("parse /proc/%d/stat: %q", pid, s)
	}
	return time.Duration(utime+stime) * (time.Second / 100)
}

// TestCrashLoopThroughGateway: a server that keeps failing at start goes
// `failed` in /health; the gateway spends almost no CPU on it; calls to it
// fail at once naming it with its exit status and stderr; the other server
// is untouched; and once the cause is gone it comes back by itself.
//
// --max-backoff 1s keeps the slow retries (30 s by default) short enough
// for the recovery to happen within the test, and makes the CPU bound
// stricter: the gateway retries more often than it would in production.
func TestCrashLoopThroughGateway(t *testing.T) {
	sb := newTestbox(t)
	okFile := filepath.Join(sb.dir, "ok")
	if err := os.WriteFile(okFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	flaky := fmt.Sprintf(`test -f '%s' || { echo "flaky: the ok file is missing" >&2; exit 3; }; %s`,
		okFile, fixture.ShellCommand(fixture.Options{Name: "flaky", Tools: []string{"echo", "crash"}}))
	r := sb.launch(mcpConfig(t, map[string]any{
		"flaky":  map[string]any{"runCmd": flaky},
		"steady": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "steady", Tools: []string{"pid"}})},
	}), "--max-backoff", "1s")
	if r.code != 0 {
		t.Fatalf("launch: %d %s\n%s", r.code, r.stderr, sb.log())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cs := sb.connect(ctx, nil)
	steadyPID, err := fixture.CallText(ctx, cs, "pid", nil)
	if err != nil {
		t.Fatal(err)
	}

	// Remove the cause of success and crash it: every restart now fails.
	if err := os.Remove(okFile); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "crash", Arguments: map[string]any{"code": 1}}); err == nil {
		t.Fatal("crash call succeeded")
	}
	waitFor(t, 60*time.Second, "flaky to be failed", func() bool {
		_, s := sb.serverHealth("flaky")
		return s.State == "failed"
	})
	status, s := sb.serverHealth("flaky")
	if status != "degraded" || s.LastExit != "exit status 3" || !strings.Contains(s.LastError, "the ok file is missing") || s.Restarts < 5 {
		t.Errorf("health while failed: %s %+v", status, s)
	}

	// A crash loop costs the gateway almost nothing. This is a resource
	// bound over a fixed window, not a speed assertion.
	gw := sb.pid()
	before := cpuTime(t, gw)
	restartsBefore := s.Restarts
	time.Sleep(5 * time.Second)
	used := cpuTime(t, gw) - before
	_, s = sb.serverHealth("flaky")
	t.Logf("gateway CPU over 5s of crash loop: %s (%d restarts in the window)", used, s.Restarts-restartsBefore)
	if used >= 250*time.Millisecond {
		t.Errorf("gateway used %s of CPU in 5s of crash loop, want < 250ms", used)
	}
	if s.Restarts == restartsBefore {
		t.Errorf("no retry in 5s with --max-backoff 1s: %+v", s)
	}

	// Calls fail at once (not after waiting for a restart) with the name,
	// the exit status and the server's own words.
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	if err == nil {
		t.Fatal("call to a failed server succeeded")
	}
	for _, w := range []string{`"flaky"`, "exit status 3", "the ok file is missing"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("call error %q lacks %q", err, w)
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("call waited for its deadline: %v", err)
	}

	// The other server is undisturbed: same process, never restarted.
	if got, err := fixture.CallText(ctx, cs, "pid", nil); err != nil || got != steadyPID {
		t.Errorf("steady after flaky's crash loop: pid %q (was %s), %v", got, steadyPID, err)
	}
	if _, st := sb.serverHealth("steady"); st.State != "ready" || st.Restarts != 0 {
		t.Errorf("steady health: %+v", st)
	}

	// Remove the cause: the background retries bring it back.
	if err := os.WriteFile(okFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "flaky to recover", func() bool {
		_, s := sb.serverHealth("flaky")
		return s.State == "ready"
	})
	if got, err := fixture.CallText(ctx, cs, "echo", map[string]any{"text": "back"}); err != nil || got != "back" {
		t.Errorf("call after recovery: %q %v", got, err)
	}
	if code, h := sb.health(); code != 200 || h.Status != "ok" {
		t.Errorf("health after recovery: %d %+v", code, h)
	}
}

// TestKillMidCallThroughGateway: kill -9 of a server while a call is in
// flight fails that call with the server's name and "killed by signal 9",
// and the next call succeeds on the restarted server.
func TestKillMidCallThroughGateway(t *testing.T) {
	sb := newTestbox(t)
	sb.mustLaunch(mcpConfig(t, map[string]any{
		"alpha": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Tools: []string{"echo", "sleep", "pid"}})},
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := sb.connect(ctx, nil)
	_, before := sb.serverHealth("alpha")

	errc := make(chan error, 1)
	go func() {
		// Far longer than the test's deadline: only the kill can end it.
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 600000}})
		errc <- err
	}()
	waitFor(t, 30*time.Second, "the sleep call to reach the server", func() bool {
		return strings.Contains(sb.log(), "fixture: sleep started 600000ms")
	})
	if err := syscall.Kill(before.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		t.Fatal("in-flight call hung after its server was killed")
	}
	if err == nil {
		t.Fatal("in-flight call succeeded although its server was killed")
	}
	for _, w := range []string{`"alpha"`, "killed by signal 9"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("in-flight call error %q lacks %q", err, w)
		}
	}
	if got, err := fixture.CallText(ctx, cs, "echo", map[string]any{"text": "again"}); err != nil || got != "again" {
		t.Fatalf("call after the kill: %q %v", got, err)
	}
	_, after := sb.serverHealth("alpha")
	if after.State != "ready" || after.Restarts != 1 || after.PID == before.PID || !strings.HasPrefix(after.LastExit, "killed by signal 9") {
		t.Errorf("health after kill and restart: %+v (before %+v)", after, before)
	}
}

// sseWatch is an HTTP transport that reports when the client's standalone
// SSE stream (the GET that carries list_changed) has been accepted: the
// server registers the stream before it sends the response headers, so a
// notification sent after that is delivered, not dropped.
type sseWatch struct {
	base http.RoundTripper
	once sync.Once
	up   chan struct{}
}

func (w *sseWatch) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := w.base.RoundTrip(r)
	if err == nil && r.Method == http.MethodGet && resp.StatusCode == http.StatusOK {
		w.once.Do(func() { close(w.up) })
	}
	return resp, err
}

// connectWatching connects like testbox.connect, and waits until the
// session's notification stream is up.
func (sb *testbox) connectWatching(ctx context.Context, opts *mcp.ClientOptions) *mcp.ClientSession {
	sb.t.Helper()
	w := &sseWatch{base: fixture.Bearer(sb.token, http.DefaultTransport), up: make(chan struct{})}
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, opts)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: sb.url() + "/mcp", HTTPClient: &http.Client{Transport: w}}, legacySession())
	if err != nil {
		sb.t.Fatalf("connect: %v", err)
	}
	sb.t.Cleanup(func() { cs.Close() })
	select {
	case <-w.up:
	case <-ctx.Done():
		sb.t.Fatal("the session's SSE stream never came up")
	}
	return cs
}

// TestToolsChangeAfterRestart: a server that comes back from a restart with
// different tools is re-listed; sessions get notifications/tools/list_changed;
// names of unchanged tools stay; a tool that now conflicts with a name
// another server holds does not take it.
func TestToolsChangeAfterRestart(t *testing.T) {
	sb := newTestbox(t)
	envFile := filepath.Join(sb.dir, "alpha.env")
	write := func(tools, extra string) {
		t.Helper()
		body := fmt.Sprintf("FIXTURE_TOOLS=%s\nFIXTURE_EXTRA_TOOLS=%s\n", tools, extra)
		if err := os.WriteFile(envFile, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("echo,crash,pid", "")
	// alpha's tools are read from the file at every start.
	alpha := fmt.Sprintf(`set -a; . '%s'; set +a; %s`, envFile, fixture.ShellCommand(fixture.Options{Name: "alpha"}))
	sb.mustLaunch(mcpConfig(t, map[string]any{
		"alpha": map[string]any{"runCmd": alpha},
		"beta":  map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "beta", Tools: []string{"echo"}, ExtraTools: []string{"shared"}})},
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	changed := make(chan struct{}, 16)
	cs := sb.connectWatching(ctx, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	names := toolNames(t, ctx, cs)
	slices.Sort(names)
	if want := []string{"beta_echo", "crash", "echo", "pid", "shared"}; !slices.Equal(names, want) {
		t.Fatalf("tools before: %v, want %v", names, want)
	}

	// alpha comes back without pid and with a tool named like beta's.
	write("echo,crash", "shared")
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "crash", Arguments: map[string]any{"code": 1}}); err == nil {
		t.Fatal("crash call succeeded")
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatalf("no notifications/tools/list_changed after the restart\nlog:\n%s", sb.log())
	}
	names = toolNames(t, ctx, cs)
	slices.Sort(names)
	if want := []string{"alpha_shared", "beta_echo", "crash", "echo", "shared"}; !slices.Equal(names, want) {
		t.Fatalf("tools after: %v, want %v", names, want)
	}
	for tool, want := range map[string]string{"shared": "beta:shared", "alpha_shared": "alpha:shared", "echo": "hi", "beta_echo": "hi"} {
		if got, err := fixture.CallText(ctx, cs, tool, map[string]any{"text": "hi"}); err != nil || got != want {
			t.Errorf("%s = %q %v, want %q", tool, got, err, want)
		}
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pid"}); err == nil || !strings.Contains(err.Error(), "pid") {
		t.Errorf("removed tool pid: err = %v", err)
	}
}

// TestMisbehavingServerThroughGateway: a banner and a stray print on stdout
// are logged as noise and skipped; a 10 MiB result reaches the agent intact
// over HTTP; the server never restarts.
func TestMisbehavingServerThroughGateway(t *testing.T) {
	sb := newTestbox(t)
	sb.mustLaunch(mcpConfig(t, map[string]any{
		"noisy": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Banner: "Noisy server v9 starting", Tools: []string{"echo", "big", "noise"}})},
	}))
	// Generous: a race-built fixture encodes 10 MiB slowly (17s seen on an
	// idle machine).
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs := sb.connect(ctx, nil)
	if _, err := fixture.CallText(ctx, cs, "noise", map[string]any{"text": "DEBUG: a stray print"}); err != nil {
		t.Fatal(err)
	}
	const size = 10 << 20
	got, err := fixture.CallText(ctx, cs, "big", map[string]any{"bytes": size})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != size || strings.Trim(got, "x") != "" {
		t.Fatalf("10 MiB result arrived as %d bytes", len(got))
	}
	if got, err := fixture.CallText(ctx, cs, "echo", map[string]any{"text": "after"}); err != nil || got != "after" {
		t.Fatalf("echo after the large result: %q %v", got, err)
	}
	if _, s := sb.serverHealth("noisy"); s.Restarts != 0 || s.State != "ready" {
		t.Errorf("noisy health: %+v", s)
	}
	log := sb.log()
	for _, w := range []string{"Noisy server v9 starting", "DEBUG: a stray print", "stdout-noise"} {
		if !strings.Contains(log, w) {
			t.Errorf("log lacks %q", w)
		}
	}
}

// rawPing sends a ping on session id over plain HTTP and returns the status.
func (sb *testbox) rawPing(id string) int {
	sb.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, sb.url()+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":99,"method":"ping"}`))
	req.Header.Set("Authorization", "Bearer "+sb.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		sb.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestSessionsBoundedByCount: beyond --max-sessions, the least recently used
// session is closed and its id answers 404 (so its client re-initializes);
// the others keep working.
func TestSessionsBoundedByCount(t *testing.T) {
	sb := newTestbox(t)
	r := sb.launch(mcpConfig(t, map[string]any{
		"a": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Tools: []string{"echo"}})},
	}), "--max-sessions", "3")
	if r.code != 0 {
		t.Fatalf("launch: %d %s", r.code, r.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s1, s2, s3 := sb.connect(ctx, nil), sb.connect(ctx, nil), sb.connect(ctx, nil)
	// Use them in the order s2, s1, s3: s2 is now the least recently used.
	if code := sb.rawPing(s2.ID()); code != 200 {
		t.Fatalf("ping on a live session: %d", code)
	}
	for _, cs := range []*mcp.ClientSession{s1, s3} {
		if _, err := fixture.CallText(ctx, cs, "echo", map[string]any{"text": "x"}); err != nil {
			t.Fatal(err)
		}
	}
	s4 := sb.connect(ctx, nil)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("s1=%s s2=%s s3=%s s4=%s", s1.ID(), s2.ID(), s3.ID(), s4.ID())
			for _, l := range strings.Split(sb.log(), "\n") {
				if strings.Contains(l, "closing") {
					t.Log(l)
				}
			}
		}
	})
	waitFor(t, 60*time.Second, "the least recently used session to be closed", func() bool {
		return sb.rawPing(s2.ID()) == http.StatusNotFound
	})
	if _, err := s2.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err == nil {
		t.Error("call on the evicted session succeeded")
	}
	for i, cs := range []*mcp.ClientSession{s1, s3, s4} {
		if got, err := fixture.CallText(ctx, cs, "echo", map[string]any{"text": "still"}); err != nil || got != "still" {
			t.Errorf("session %d after the eviction: %q %v", i, got, err)
		}
	}
	// A client that re-initializes gets a working session again.
	s5 := sb.connect(ctx, nil)
	if got, err := fixture.CallText(ctx, s5, "echo", map[string]any{"text": "new"}); err != nil || got != "new" {
		t.Errorf("new session: %q %v", got, err)
	}
}

// procState returns the state letter of /proc/<pid>/stat, or "" if gone.
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return f[0]
}

// TestPauseResume freezes the gateway and all its servers with SIGSTOP, as a
// sandbox snapshot does, and resumes them: the session opened before is
// reused, a call made while frozen completes, nothing restarted.
func TestPauseResume(t *testing.T) {
	sb := newTestbox(t)
	sb.mustLaunch(mcpConfig(t, map[string]any{
		"a": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Tools: []string{"echo", "pid"}})},
		"b": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Tools: []string{"echo"}})},
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cs := sb.connect(ctx, nil)
	pidBefore, err := fixture.CallText(ctx, cs, "pid", nil)
	if err != nil {
		t.Fatal(err)
	}
	tree := sessionMembers(sb.pid())
	if len(tree) < 3 {
		t.Fatalf("gateway session has %v, want the gateway and two servers", tree)
	}
	resumed := false
	resume := func() {
		if resumed {
			return
		}
		resumed = true
		for _, pid := range tree {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	defer resume()
	for _, pid := range tree {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 20*time.Second, "the whole tree to be stopped", func() bool {
		for _, pid := range tree {
			if procState(pid) != "T" {
				return false
			}
		}
		return true
	})
	// An agent calls while the sandbox is paused; the call is answered on
	// resume.
	done := make(chan error, 1)
	go func() {
		got, err := fixture.CallText(ctx, cs, "b_echo", map[string]any{"text": "across the pause"})
		if err == nil && got != "across the pause" {
			err = fmt.Errorf("got %q", got)
		}
		done <- err
	}()
	// The pause itself: wall-clock time passes while nothing runs.
	time.Sleep(3 * time.Second)
	select {
	case err := <-done:
		t.Fatalf("call finished while the gateway was frozen: %v", err)
	default:
	}
	resume()
	if err := <-done; err != nil {
		t.Fatalf("call made during the pause: %v", err)
	}
	if got, err := fixture.CallText(ctx, cs, "pid", nil); err != nil || got != pidBefore {
		t.Errorf("session after resume: pid %q (was %s) %v", got, pidBefore, err)
	}
	code, h := sb.health()
	if code != 200 || h.Status != "ok" {
		t.Errorf("health after resume: %d %+v", code, h)
	}
	for _, s := range h.Servers {
		if s.Restarts != 0 {
			t.Errorf("server %s restarted across the pause: %+v", s.Name, s)
		}
	}
}

// readPID reads a pid a server's shell wrote to a file.
func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("pid file of the test setup: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file %s: %q", path, b)
	}
	return pid
}

// withChild prefixes a server's runCmd with a background child that would
// outlive a careless stop, recording its pid in dir/<name>.child.
func withChild(dir, name, run string) string {
	return fmt.Sprintf(`sleep 1000 & echo $! > '%s'; %s`, filepath.Join(dir, name+".child"), run)
}

// TestSIGTERMEndsTree: SIGTERM to a launched gateway ends it, its servers
// and their children, even with an agent's long call in flight: no process
// of the tree is left.
func TestSIGTERMEndsTree(t *testing.T) {
	sb := newTestbox(t)
	sb.mustLaunch(mcpConfig(t, map[string]any{
		"a": map[string]any{"runCmd": withChild(sb.dir, "a", fixture.ShellCommand(fixture.Options{Tools: []string{"echo", "sleep"}}))},
		"b": map[string]any{"runCmd": withChild(sb.dir, "b", fixture.ShellCommand(fixture.Options{Tools: []string{"echo"}}))},
	}))
	gw := sb.pid()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := sb.connect(ctx, nil)
	callDone := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 600000}})
		callDone <- err
	}()
	waitFor(t, 30*time.Second, "the long call to reach the server", func() bool {
		return strings.Contains(sb.log(), "fixture: sleep started 600000ms")
	})
	_, h := sb.health()
	pids := []int{gw, readPID(t, filepath.Join(sb.dir, "a.child")), readPID(t, filepath.Join(sb.dir, "b.child"))}
	for _, s := range h.Servers {
		pids = append(pids, s.PID)
	}
	for _, pid := range pids {
		if !alive(pid) || sessionOf(t, pid) != gw {
			t.Fatalf("pid %d is not a live member of the gateway's session", pid)
		}
	}
	if err := syscall.Kill(gw, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && len(sessionMembers(gw)) > 0 {
		time.Sleep(20 * time.Millisecond)
	}
	if left := sessionMembers(gw); len(left) > 0 {
		var ps []string
		for _, pid := range left {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			ps = append(ps, fmt.Sprintf("%d %s %q", pid, procState(pid), strings.ReplaceAll(string(b), "\x00", " ")))
		}
		killSession(gw)
		t.Fatalf("processes left 20s after SIGTERM: %s\nlog:\n%s", strings.Join(ps, "\n"), sb.log())
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d alive after SIGTERM", pid)
		}
	}
	if err := <-callDone; err == nil {
		t.Error("the call in flight at SIGTERM succeeded")
	}
}

// TestStartupEndsTree: a startup timeout names the servers that were not
// ready and ends every process the gateway started, including an install
// still running and a server's child; so does a SIGTERM during startup.
func TestStartupEndsTree(t *testing.T) {
	for _, how := range []string{"timeout", "sigterm"} {
		t.Run(how, func(t *testing.T) {
			sb := newTestbox(t)
			slowStart := fmt.Sprintf(`echo $$ > '%s'; %s`, filepath.Join(sb.dir, "slowstart.pid"),
				withChild(sb.dir, "slowstart", fixture.ShellCommand(fixture.Options{StartDelay: 10 * time.Minute})))
			cfg := mcpConfig(t, map[string]any{
				"quick":     map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Tools: []string{"echo"}})},
				"slowstart": map[string]any{"runCmd": slowStart},
				"slowinstall": map[string]any{
					"installCmd": fmt.Sprintf(`echo $$ > '%s'; sleep 1000`, filepath.Join(sb.dir, "install.pid")),
					"runCmd":     fixture.ShellCommand(fixture.Options{}),
					"cwd":        sb.dir,
				},
			})
			files := []string{"slowstart.pid", "slowstart.child", "install.pid"}
			started := func() bool {
				for _, f := range files {
					if b, err := os.ReadFile(filepath.Join(sb.dir, f)); err != nil || len(b) == 0 {
						return false
					}
				}
				return true
			}
			var r result
			if how == "timeout" {
				// Long enough for quick to be ready and the slow processes to
				// start on a loaded machine.
				r = sb.launch(cfg, "--startup-timeout", "10s")
				if !strings.Contains(r.stderr, "timed out") || !strings.Contains(r.stderr, "slowstart") ||
					!strings.Contains(r.stderr, "slowinstall") || strings.Contains(r.stderr, "quick") {
					t.Errorf("stderr %q should name exactly the two slow servers", r.stderr)
				}
			} else {
				rc := make(chan result, 1)
				go func() { rc <- sb.launch(cfg, "--startup-timeout", "60s") }()
				waitFor(t, 30*time.Second, "the slow processes to start", func() bool { return sb.pid() != 0 && started() })
				if err := syscall.Kill(sb.pid(), syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				r = <-rc
			}
			if r.code == 0 {
				t.Fatal("launch succeeded")
			}
			if !started() {
				t.Fatalf("the slow processes never started, so the test proves nothing; stderr %q", r.stderr)
			}
			for _, f := range files {
				if pid := readPID(t, filepath.Join(sb.dir, f)); alive(pid) {
					t.Errorf("%s (pid %d) alive after the failed launch", f, pid)
				}
			}
			if pid := sb.pid(); pid != 0 && len(sessionMembers(pid)) > 0 {
				t.Errorf("processes left: %v", sessionMembers(pid))
			}
			if _, err := os.Stat(sb.tokenFile); err == nil {
				t.Error("token file left after a failed launch")
			}
		})
	}
}
