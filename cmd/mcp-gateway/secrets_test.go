package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestSecretsStayPut runs servers that print their own secrets and checks,
// the token and every envs value are masked in the log and in
// the error an agent sees; each server's envs reach that server only; no
// process of the gateway's tree carries the token in its environment or
// argv; and no server or install process inherits a file descriptor of the
// gateway beyond its own stdin, stdout and stderr.
func TestSecretsStayPut(t *testing.T) {
	sb := newTestbox(t)
	alphaKey := "alpha-secret-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	betaKey := "beta-secret-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	work := t.TempDir() // the install stamp goes here
	alpha := fixture.ShellCommand(fixture.Options{Name: "alpha", PrintEnv: "ALPHA_KEY",
		Tools: []string{"echo", "stderr", "crash", "env", "pid"}})
	beta := fixture.ShellCommand(fixture.Options{Name: "beta", PrintEnv: "BETA_KEY", Tools: []string{"env"}})
	sb.mustLaunch(mcpConfig(t, map[string]any{
		"alpha": map[string]any{
			// The install shell lists its own descriptors while it runs
			// (to its stdout, which the gateway logs: no redirection, so
			// the shell opens nothing itself).
			"installCmd": `ls -l /proc/$$/fd; true`,
			"runCmd":     alpha,
			"cwd":        work,
			"envs":       map[string]string{"ALPHA_KEY": alphaKey},
		},
		// "; exit $?" keeps /bin/sh alive as the server's first process, so
		// its descriptors are exactly what it inherited from the gateway.
		"beta": map[string]any{
			"runCmd": beta + "; exit $?",
			"envs":   map[string]string{"BETA_KEY": betaKey},
		},
		"sandbox": map[string]any{},
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := sb.connect(ctx, nil)

	call := func(name string, args map[string]any) (string, error) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			return "", err
		}
		return text(t, res), nil
	}
	// Each server sees its own envs and nobody else's; nobody sees the token.
	for _, c := range []struct{ tool, name, want string }{
		{"env", "ALPHA_KEY", alphaKey},
		{"env", "BETA_KEY", "unset"},
		{"env", "GATEWAY_ACCESS_TOKEN", "unset"},
		{"beta_env", "BETA_KEY", betaKey},
		{"beta_env", "ALPHA_KEY", "unset"},
		{"beta_env", "GATEWAY_ACCESS_TOKEN", "unset"},
	} {
		if got, err := call(c.tool, map[string]any{"name": c.name}); err != nil || got != c.want {
			t.Errorf("%s(%s) = %q, %v; want %q", c.tool, c.name, got, err, c.want)
		}
	}

	gw := sb.pid()
	_, h := sb.health()
	serverPID := map[string]int{}
	for _, s := range h.Servers {
		serverPID[s.Name] = s.PID
	}
	members := sessionMembers(gw)
	if len(members) < 4 {
		t.Fatalf("gateway session has %d processes %v, want the gateway and 3 servers", len(members), members)
	}
	gwFDs := fdTargetSet(t, gw)
	gwFiles := []string{sb.logFile, sb.pidFile, sb.tokenFile}
	for _, pid := range members {
		environ, err1 := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		cmdline, err2 := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err1 != nil || err2 != nil {
			continue // exited meanwhile
		}
		pgid := pgidOf(pid)
		who := fmt.Sprintf("pid %d (%s)", pid, strings.ReplaceAll(string(cmdline), "\x00", " "))
		for _, secret := range []string{sb.token, alphaKey, betaKey} {
			if strings.Contains(string(cmdline), secret) {
				t.Errorf("%s: argv holds a secret", who)
			}
		}
		if strings.Contains(string(environ), sb.token) {
			t.Errorf("%s: environment holds the token", who)
		}
		if pgid != serverPID["alpha"] && strings.Contains(string(environ), alphaKey) {
			t.Errorf("%s: environment holds alpha's secret", who)
		}
		if pgid != serverPID["beta"] && strings.Contains(string(environ), betaKey) {
			t.Errorf("%s: environment holds beta's secret", who)
		}
		if pid == gw {
			continue
		}
		// A server process may open what it likes, but nothing of the
		// gateway's may reach it except the pipes on 0, 1 and 2. Pipes and
		// sockets are told apart by inode; of plain files, those that only
		// the gateway opens.
		for fd, target := range fdTargets(t, pid) {
			shared := gwFDs[target] && (strings.HasPrefix(target, "pipe:") || strings.HasPrefix(target, "socket:"))
			if fd > 2 && (shared || slices.Contains(gwFiles, target)) {
				t.Errorf("%s: fd %d -> %s is the gateway's", who, fd, target)
			}
			// The reaper's watchdog (internal/reaper) reads its pipe on
			// fd 0 and has nothing to say: 1 and 2 are /dev/null.
			quietWatchdog := strings.Contains(string(cmdline), "groups=' '") && fd > 0 && target == "/dev/null"
			if fd <= 2 && !strings.HasPrefix(target, "pipe:") && !quietWatchdog {
				t.Errorf("%s: fd %d -> %s, want a pipe of its own", who, fd, target)
			}
		}
	}
	// beta's first process is the /bin/sh that the gateway started: what it
	// holds, it inherited.
	if fds := fdTargets(t, serverPID["beta"]); len(fds) != 3 {
		t.Errorf("beta's shell holds fds %v, want exactly 0, 1 and 2", fds)
	}
	// The same for the install command's shell, which listed its fds.
	var installFDs []string
	for _, line := range strings.Split(sb.log(), "\n") {
		var rec struct{ Server, Stream, Message string }
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Server != "alpha" || rec.Stream != "install" {
			continue
		}
		if f := strings.Fields(rec.Message); len(f) >= 3 && f[len(f)-2] == "->" {
			installFDs = append(installFDs, f[len(f)-3])
		}
	}
	if !slices.Equal(installFDs, []string{"0", "1", "2"}) {
		t.Errorf("install shell fds %v, want [0 1 2]", installFDs)
	}

	// A server that prints secrets to stderr, then dies in a call: the agent
	// gets its stderr, masked.
	if _, err := call("stderr", map[string]any{"text": "oops token=" + sb.token + " key=" + alphaKey}); err != nil {
		t.Fatal(err)
	}
	_, err := call("crash", map[string]any{"code": 3})
	if err == nil {
		t.Fatal("crash call succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, "exit status 3") || !strings.Contains(msg, "[REDACTED]") {
		t.Errorf("crash error lacks the exit or the masked stderr: %s", msg)
	}
	for _, secret := range []string{sb.token, alphaKey, betaKey} {
		if strings.Contains(msg, secret) {
			t.Errorf("the error an agent sees quotes a secret: %s", msg)
		}
	}
	// The restarted alpha printed its key again at start; wait for it so
	// the log below has seen a restart as well.
	pollUntil(t, 30*time.Second, "alpha restarted", func() bool {
		_, h := sb.health()
		for _, s := range h.Servers {
			if s.Name == "alpha" && s.State == "ready" && s.Restarts >= 1 {
				return true
			}
		}
		return false
	})
	log := sb.log()
	for _, secret := range []string{sb.token, alphaKey, betaKey} {
		if strings.Contains(log, secret) {
			t.Errorf("the log holds a secret (%.12s...)", secret)
		}
	}
	for _, want := range []string{`ALPHA_KEY=[REDACTED]`, `BETA_KEY=[REDACTED]`, `oops token=[REDACTED] key=[REDACTED]`} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks the masked line %q", want)
		}
	}
}

// TestSecretInLaunchFailure: a server that prints its secret and exits at
// start fails the launch with a message that quotes its stderr, masked.
func TestSecretInLaunchFailure(t *testing.T) {
	sb := newTestbox(t)
	key := "k-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	r := sb.launch(mcpConfig(t, map[string]any{
		"leaky": map[string]any{
			"runCmd": fixture.ShellCommand(fixture.Options{PrintEnv: "LEAKY_KEY", ExitAtStart: 4}),
			"envs":   map[string]string{"LEAKY_KEY": key},
		},
	}))
	if r.code == 0 {
		t.Fatal("launch succeeded")
	}
	if !strings.Contains(r.stderr, "LEAKY_KEY=[REDACTED]") {
		t.Errorf("launch error does not quote the masked stderr: %s", r.stderr)
	}
	for _, s := range []string{r.stdout, r.stderr, sb.log()} {
		if strings.Contains(s, key) || strings.Contains(s, sb.token) {
			t.Errorf("a secret leaked into the launch output or log: %s", s)
		}
	}
}

// fdTargets maps each open fd of pid to what it points to ("pipe:[N]",
// "socket:[N]", a path).
func fdTargets(t *testing.T, pid int) map[int]string {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Logf("list %s: %v", dir, err)
		return nil
	}
	out := make(map[int]string, len(entries))
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil {
			out[fd] = target
		}
	}
	return out
}

// fdTargetSet is the set of objects pid holds open.
func fdTargetSet(t *testing.T, pid int) map[string]bool {
	t.Helper()
	set := map[string]bool{}
	for _, target := range fdTargets(t, pid) {
		set[target] = true
	}
	return set
}

// pgidOf returns the process group of pid, or 0.
func pgidOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return 0
	}
	n, _ := strconv.Atoi(f[2])
	return n
}

// pollUntil polls cond until it holds, failing the test after limit.
func pollUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for: %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
