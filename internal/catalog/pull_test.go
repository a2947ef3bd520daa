package catalog

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestPullPlan(t *testing.T) {
	c := mustParse(t, `{"servers": {
		"n": {"package": {"manager": "npm", "name": "@s/n", "bin": "n"}},
		"p": {"package": {"manager": "pypi", "name": "p-server"}},
		"b": {"package": {"manager": "builtin", "name": "sandbox"}},
		"c": {"command": ["/bin/c"]},
		"nv": {"package": {"manager": "npm", "name": "nv", "version": "1.2.3"}},
		"pv": {"package": {"manager": "pypi", "name": "pv", "version": "0.4.0"}},
		"r": {"remote": {"url": "https://mcp.example.com/mcp"}},
		"u": {"unavailable": {"reason": "a Go binary", "howTo": "use runCmd"}}
	}}`)
	steps, err := c.PullPlan([]string{"p", "n", "b", "c", "p", "nv", "pv", "r"})
	if err != nil {
		t.Fatal(err)
	}
	want := []InstallStep{
		{Server: "p", Argv: []string{"uv", "tool", "install", "p-server"}},
		{Server: "n", Argv: []string{"npm", "install", "-g", "@s/n"}},
		{Server: "b", Note: "built in"},
		{Server: "c", Note: "runs a command"},
		{Server: "nv", Argv: []string{"npm", "install", "-g", "nv@1.2.3"}},
		{Server: "pv", Argv: []string{"uv", "tool", "install", "pv==0.4.0"}},
		{Server: "r", Note: "hosted remotely"},
	}
	if !reflect.DeepEqual(steps, want) {
		t.Errorf("PullPlan =\n%+v\nwant\n%+v", steps, want)
	}

	_, err = c.PullPlan([]string{"n", "nope", "zzz", "nope"})
	if err == nil {
		t.Fatal("PullPlan with unknown names succeeded")
	}
	msg := err.Error()
	if strings.Count(msg, `"nope"`) != 1 || !strings.Contains(msg, `"zzz"`) || !strings.Contains(msg, "(catalog: b, c, n, nv, p, pv, r, u)") {
		t.Errorf("error %q should list every unknown name once and the catalog", msg)
	}
	_, err = c.PullPlan([]string{"n", "u"})
	if err == nil || !strings.Contains(err.Error(), `"u" cannot start here: a Go binary; to run it anyway, use runCmd`) {
		t.Errorf("PullPlan of an unavailable entry: %v", err)
	}
}

func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

func TestPullStreamsAndContinuesPastFailure(t *testing.T) {
	t.Setenv("GATEWAY_ACCESS_TOKEN", "tok-should-not-leak")
	steps := []InstallStep{
		{Server: "one", Argv: sh(`echo hello; echo warn >&2; echo; printf 'no newline'`)},
		{Server: "two", Argv: sh(`echo broken >&2; exit 3`)},
		{Server: "env", Argv: sh(`echo "token=${GATEWAY_ACCESS_TOKEN-unset}"`)},
		{Server: "sandbox", Note: "built in"},
		{Server: "missing", Argv: []string{"/nonexistent/installer"}},
	}
	var stdout, stderr bytes.Buffer
	err := Pull(context.Background(), steps, &stdout, &stderr)
	if err == nil {
		t.Fatal("Pull succeeded, want an error for two and missing")
	}
	first := strings.SplitN(err.Error(), "\n", 2)[0]
	if !strings.Contains(first, "two") || !strings.Contains(first, "missing") || strings.Contains(first, "one") {
		t.Errorf("error %q should name exactly the failed servers", first)
	}
	for _, w := range []string{
		"[one] hello\n[one] \n[one] no newline\n", "pull one: ok (",
		"[env] token=unset\n", "pull env: ok (",
		"pull sandbox: nothing to install (built in)\n",
	} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
		}
	}
	for _, w := range []string{"[one] warn\n", "[two] broken\n", "pull two: failed: /bin/sh -c", "exit status 3", "pull missing: failed:"} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
		}
	}
}

// TestPullSameWriter gives both streams one writer; the race detector fails the test if the two
// copying goroutines write to it at once.
func TestPullSameWriter(t *testing.T) {
	var out bytes.Buffer
	script := `i=0; while [ $i -lt 200 ]; do echo out$i; echo err$i >&2; i=$((i+1)); done`
	if err := Pull(context.Background(), []InstallStep{{Server: "s", Argv: sh(script)}}, &out, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 402 { // the start line, 400 output lines and the summary
		t.Fatalf("%d lines, want 402:\n%s", len(lines), out.String())
	}
	for _, l := range lines[1:401] {
		if !strings.HasPrefix(l, "[s] out") && !strings.HasPrefix(l, "[s] err") {
			t.Errorf("line %q is interleaved or lacks the prefix", l)
		}
	}
}

func TestPullSplitsLongLines(t *testing.T) {
	var out bytes.Buffer
	n := maxLine + 100
	err := Pull(context.Background(), []InstallStep{{Server: "s", Argv: sh(`head -c ` + strconv.Itoa(n) + ` /dev/zero | tr '\0' x`)}}, &out, &out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	want := []string{"[s] " + strings.Repeat("x", maxLine), "[s] " + strings.Repeat("x", 100)}
	if len(lines) < 3 || lines[1] != want[0] || lines[2] != want[1] {
		t.Errorf("output does not split %d x's into prefixed lines of %d and 100:\n%.200q", n, maxLine, out.String())
	}
}

// TestPullLineOfMaxLength: a line of exactly maxLine bytes is one prefixed line; its newline
// does not add an empty line after it.
func TestPullLineOfMaxLength(t *testing.T) {
	var out bytes.Buffer
	script := `head -c ` + strconv.Itoa(maxLine) + ` /dev/zero | tr '\0' x; echo; echo y`
	if err := Pull(context.Background(), []InstallStep{{Server: "s", Argv: sh(script)}}, &out, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if len(lines) < 4 || lines[1] != "[s] "+strings.Repeat("x", maxLine) || lines[2] != "[s] y" {
		t.Errorf("output is not the %d x's and y as two prefixed lines:\n%.200q", maxLine, out.String())
	}
}

// TestRegistryURLFromNPMConfig: with no npm_config_registry in the environment, the registry is
// what `npm config get registry` prints (an .npmrc may set it), when npm succeeds and prints a
// URL; otherwise npm's default.
func TestRegistryURLFromNPMConfig(t *testing.T) {
	env := []string{"PATH=" + os.Getenv("PATH")}
	for _, c := range []struct{ script, want string }{
		{`[ "$*" = "config get registry" ] && echo " http://127.0.0.1:9/npm/ "`, "http://127.0.0.1:9/npm/"},
		{`echo "http://127.0.0.1:9/npm/"; exit 1`, "https://registry.npmjs.org/"},
		{`echo "undefined"`, "https://registry.npmjs.org/"},
	} {
		npm := fakeNPM(t, c.script)
		if got := registryURL(context.Background(), []string{npm, "install", "-g", "x"}, env); got != c.want {
			t.Errorf("npm script %q: registry %q, want %q", c.script, got, c.want)
		}
	}
}

// signalWriter closes ready when a line containing marker has been written.
type signalWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	ready  chan struct{}
	once   sync.Once
}

func (w *signalWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	if strings.Contains(w.buf.String(), w.marker) {
		w.once.Do(func() { close(w.ready) })
	}
	return len(b), nil
}

func TestPullCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &signalWriter{marker: "[slow] pid=", ready: make(chan struct{})}
	go func() {
		<-w.ready
		cancel()
	}()
	// The sleep is a grandchild of the step: cancel must kill the whole process group, not only
	// the shell, or the sleep would linger (and hold the output pipe open).
	steps := []InstallStep{
		{Server: "slow", Argv: sh(`sleep 300 & echo "pid=$! started"; wait; echo not reached`)},
		{Server: "after", Argv: sh(`echo ran`)},
	}
	var stderr bytes.Buffer
	err := Pull(ctx, steps, w, &stderr)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if !strings.Contains(err.Error(), "slow, after") {
		t.Errorf("error %q should name both servers", err)
	}
	out := w.buf.String()
	if strings.Contains(out, "[slow] not reached") || strings.Contains(out, "[after] ran") || strings.Contains(out, "pull after: running") {
		t.Errorf("steps kept running after cancel:\n%s", out)
	}
	waitGone(t, strings.Fields(strings.SplitN(out, "[slow] pid=", 2)[1])[0])
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPullLeftoverProcess covers a step that exits 0 but leaves a process holding its output
// open: Pull gives up waiting for the output after pullWaitDelay, counts the step as done, and
// kills the leftover.
func TestPullLeftoverProcess(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	err := Pull(context.Background(), []InstallStep{{Server: "d", Argv: sh(`sleep 300 & echo "pid=$! bg"`)}}, &out, &out)
	if err != nil {
		t.Fatalf("Pull: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "pull d: ok (") {
		t.Errorf("output:\n%s", out.String())
	}
	pid := strings.Fields(strings.SplitN(out.String(), "[d] pid=", 2)[1])[0]
	waitGone(t, pid)
}

// waitGone fails unless process pid exits (is gone or a zombie). A killed process takes a
// moment to finish exiting, so this polls; the bound only separates "dying" from "left running"
// (an unkilled sleep would live for 300 s), it is not a speed requirement.
func waitGone(t *testing.T, pid string) {
	t.Helper()
	state := ""
	for range 200 {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return
		}
		state = strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))[0]
		if state == "Z" || state == "X" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	syscall.Kill(mustAtoi(t, pid), syscall.SIGKILL)
	t.Errorf("process %s still running 10s after Pull returned (state %s)", pid, state)
}

// TestPullNPM installs a tiny real package with the real npm into a temporary global prefix.
func TestPullNPM(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not on PATH")
	}
	prefix := t.TempDir()
	t.Setenv("NPM_CONFIG_PREFIX", prefix)
	t.Setenv("NPM_CONFIG_UPDATE_NOTIFIER", "false")
	t.Setenv("NPM_CONFIG_FUND", "false")
	t.Setenv("NPM_CONFIG_AUDIT", "false")
	c := mustParse(t, `{"servers": {"isnum": {"package": {"manager": "npm", "name": "is-number", "bin": "is-number"}}}}`)
	steps, err := c.PullPlan([]string{"isnum"})
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := Pull(context.Background(), steps, &stdout, &stderr); err != nil {
		t.Fatalf("Pull: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if _, err := os.Stat(filepath.Join(prefix, "lib", "node_modules", "is-number", "package.json")); err != nil {
		t.Errorf("package not installed under the prefix: %v", err)
	}
	if !strings.Contains(stdout.String(), "pull isnum: ok (") || !strings.Contains(stdout.String(), "[isnum] ") {
		t.Errorf("stdout:\n%s", stdout.String())
	}
}

// TestPullTimeout: a step that outlives its Timeout is killed with its whole process group and
// fails saying so, and the next step still runs. The timeout leaves a shell on a loaded machine the
// time to start its child and say its pid; the step never ends by itself.
func TestPullTimeout(t *testing.T) {
	t.Parallel()
	steps := []InstallStep{
		{Server: "stuck", Argv: sh(`sleep 300 & echo "pid=$!"; wait`), Timeout: 3 * time.Second},
		{Server: "next", Argv: sh(`echo ran`)},
	}
	var stdout, stderr bytes.Buffer
	err := Pull(context.Background(), steps, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "pull stuck: /bin/sh -c") || !strings.Contains(err.Error(), "timed out after 3s") {
		t.Fatalf("err = %v, want stuck timed out after 3s", err)
	}
	if strings.Contains(err.Error(), "next") {
		t.Errorf("err %q names a step that worked", err)
	}
	if !strings.Contains(stdout.String(), "[next] ran\n") || !strings.Contains(stdout.String(), "pull next: ok (") {
		t.Errorf("the step after the timeout did not run:\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "pull stuck: failed: /bin/sh -c") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
	_, after, ok := strings.Cut(stdout.String(), "[stuck] pid=")
	if !ok {
		t.Fatalf("the stuck step never said its child's pid within its timeout:\n%s", stdout.String())
	}
	waitGone(t, strings.Fields(after)[0])
}

// TestPullStartAndEndLines: every step is bracketed by a line as it starts (time, the command,
// its timeout) and one as it ends (time, outcome, duration).
func TestPullStartAndEndLines(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := Pull(context.Background(), []InstallStep{
		{Server: "a", Argv: sh(`echo hi`), Timeout: 90 * time.Second},
		{Server: "b", Argv: sh(`exit 4`)},
	}, &stdout, &stderr)
	if err == nil {
		t.Fatal("Pull succeeded with a failing step")
	}
	stamp := `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ `
	for _, c := range []struct {
		out  *bytes.Buffer
		want string
	}{
		{&stdout, `(?m)^` + stamp + `pull a: running /bin/sh -c echo hi \(timeout 1m30s\)\n\[a\] hi\n` + stamp + `pull a: ok \(\d+\.\ds\)$`},
		{&stdout, `(?m)^` + stamp + `pull b: running /bin/sh -c exit 4 \(timeout 5m0s\)$`},
		{&stderr, `(?m)^` + stamp + `pull b: failed: /bin/sh -c exit 4: exit status 4 \(\d+\.\ds\)$`},
	} {
		if !regexp.MustCompile(c.want).MatchString(c.out.String()) {
			t.Errorf("output lacks %s:\n%s", c.want, c.out.String())
		}
	}
}

// fakeNPM writes an executable named npm that runs script, and returns its path.
func fakeNPM(t *testing.T, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "npm")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// closedURL returns an http URL on 127.0.0.1 where nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + ln.Addr().String() + "/"
	ln.Close()
	return u
}

// TestPullRegistryUnreachable: an npm step whose registry cannot be reached is reported as such
// while the installer still runs (an installer retries a dead registry silently for minutes), and
// the step's failure says so too.
func TestPullRegistryUnreachable(t *testing.T) {
	registry := closedURL(t)
	t.Setenv("npm_config_registry", registry)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := &signalWriter{marker: "registry cannot be reached", ready: make(chan struct{})}
	go func() {
		select {
		case <-errs.ready:
		case <-time.After(time.Minute):
		}
		cancel()
	}()
	npm := fakeNPM(t, `exec sleep 300`)
	var stdout bytes.Buffer
	err := Pull(ctx, []InstallStep{{Server: "n", Argv: []string{npm, "install", "-g", "x"}}}, &stdout, errs)
	if !errors.Is(err, ErrRegistryUnreachable) || !strings.Contains(err.Error(), registry) {
		t.Fatalf("err = %v, want the unreachable registry %s named", err, registry)
	}
	errs.mu.Lock()
	out := errs.buf.String()
	errs.mu.Unlock()
	want := "pull n: registry cannot be reached: " + registry + ": dial tcp " + strings.TrimSuffix(strings.TrimPrefix(registry, "http://"), "/")
	if !strings.Contains(out, want) || !strings.Contains(out, "connection refused") {
		t.Errorf("stderr lacks %q:\n%s", want, out)
	}
	if strings.Index(out, want) > strings.Index(out, "pull n: failed") {
		t.Errorf("the registry was reported only after the step ended:\n%s", out)
	}
}

// TestPullRegistryReachable: a registry that answers at all (here 404 at its root) is not
// reported, and an install that works is just ok.
func TestPullRegistryReachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	t.Setenv("npm_config_registry", srv.URL+"/")
	var stdout, stderr bytes.Buffer
	if err := Pull(context.Background(), []InstallStep{{Server: "n", Argv: []string{fakeNPM(t, `echo installed "$@"`), "install", "-g", "x"}}}, &stdout, &stderr); err != nil {
		t.Fatalf("Pull: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "[n] installed install -g x\n") || stderr.Len() != 0 {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
}

// TestPullPlanEmbedded: every npm and PyPI entry of the embedded catalog pulls its pinned
// version (or, for the packages that could not be checked, the latest), and remote entries have
// nothing to install.
func TestPullPlanEmbedded(t *testing.T) {
	c := embeddedCatalog(t)
	var names []string
	for _, e := range c.Entries() {
		if e.Package.Manager != ManagerUnavailable {
			names = append(names, e.Name)
		}
	}
	steps, err := c.PullPlan(names)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		e, _ := c.Lookup(s.Server)
		p := e.Package
		var want []string
		switch p.Manager {
		case ManagerNPM:
			want = []string{"npm", "install", "-g", p.Name}
			if p.Version != "" {
				want[3] += "@" + p.Version
			}
		case ManagerPyPI:
			want = []string{"uv", "tool", "install", p.Name}
			if p.Version != "" {
				want[3] += "==" + p.Version
			}
		}
		if !slices.Equal(s.Argv, want) {
			t.Errorf("%s: pull %q, want %q", s.Server, s.Argv, want)
		}
	}
	if s := steps[slices.IndexFunc(steps, func(s InstallStep) bool { return s.Server == "brave" })]; !slices.Equal(s.Argv, []string{"npm", "install", "-g", "@brave/brave-search-mcp-server@2.1.4"}) {
		t.Errorf("brave: %q", s.Argv)
	}
}
