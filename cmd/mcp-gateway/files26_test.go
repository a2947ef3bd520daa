package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// gone fails the test if any of paths exists.
func gone(t *testing.T, when string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s: %s is left behind (%v)", when, p, err)
		}
	}
}

// TestLaunchLeavesNoFiles: a launched gateway removes its pid file when it
// stops cleanly (SIGTERM), and a failed launch leaves neither the pid file
// nor the token file.
func TestLaunchLeavesNoFiles(t *testing.T) {
	sb := newTestbox(t)
	sb.mustLaunch(mcpConfig(t, map[string]any{"a": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{})}}))
	if sb.pid() == 0 {
		t.Fatal("no pid in the pid file of a running gateway")
	}
	sb.stop()
	gone(t, "after a clean stop", sb.pidFile)

	sb = newTestbox(t)
	if r := sb.launch(mcpConfig(t, map[string]any{"broken": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{ExitAtStart: 3})}})); r.code == 0 {
		t.Fatal("launch succeeded with a broken server")
	}
	gone(t, "after a failed launch", sb.pidFile, sb.tokenFile)
	everyLineJSON(t, "the log of a failed launch", sb.log())
}

// everyLineJSON fails the test unless each line of log is a JSON object.
func everyLineJSON(t *testing.T, what, log string) {
	t.Helper()
	if strings.TrimSpace(log) == "" {
		t.Errorf("%s is empty", what)
	}
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		if !json.Valid([]byte(l)) || !strings.HasPrefix(l, "{") {
			t.Errorf("%s has a line that is not JSON: %q", what, l)
		}
	}
}

// TestServeBindsFirstAndSaysWhatItDoes: `serve` on a port that is taken
// fails before it writes the token or pid file; on a free one it says on
// start where it serves, where the token and the pid file are, logs to
// --log-file (JSON lines, none on stderr), and removes the pid file when it
// stops.
func TestServeBindsFirstAndSaysWhatItDoes(t *testing.T) {
	dir := t.TempDir()
	tokenFile, pidFile, logFile := filepath.Join(dir, "etc", ".token"), filepath.Join(dir, "run", "gw.pid"), filepath.Join(dir, "log", "gw.log")
	cfg := mcpConfig(t, map[string]any{"a": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{})}})
	serve := func(listen string) *exec.Cmd {
		cmd := exec.Command(gatewayBin, "serve", "--config", cfg, "--listen", listen, "--token-file", tokenFile,
			"--pid-file", pidFile, "--log-file", logFile, "--catalog", filepath.Join(dir, "catalog.json"),
			"--servers-dir", filepath.Join(dir, "servers"), "--shutdown-grace", "2s")
		cmd.Env = withoutEnv(os.Environ(), "GATEWAY_ACCESS_TOKEN")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		return cmd
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cmd := serve(busy.Addr().String())
	out, err := cmd.CombinedOutput()
	busy.Close()
	killSession(cmd.Process.Pid)
	if err == nil || !strings.Contains(string(out), "address already in use") {
		t.Errorf("serve on a busy port: %v\n%s", err, out)
	}
	gone(t, "after a failed bind", tokenFile, pidFile)

	port := freePort(t)
	cmd = serve(fmt.Sprintf("127.0.0.1:%d", port))
	var errb bytes.Buffer
	cmd.Stderr = &errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killSession(cmd.Process.Pid) })
	summary, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("no summary: %v\nstderr: %s", err, errb.String())
	}
	b, _ := os.ReadFile(pidFile)
	if strings.TrimSpace(string(b)) != strconv.Itoa(cmd.Process.Pid) {
		t.Errorf("pid file holds %q, want %d", b, cmd.Process.Pid)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve after SIGTERM: %v\nstderr: %s", err, errb.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("serve did not stop on SIGTERM")
	}
	gone(t, "after serve stopped", pidFile)

	said := errb.String()
	for _, want := range []string{fmt.Sprintf("serving http://127.0.0.1:%d/mcp", port), "generated a token, written to " + tokenFile, "pid file " + pidFile} {
		if !strings.Contains(said, want) {
			t.Errorf("serve's start (summary %q) does not say %q:\n%s", summary, want, said)
		}
	}
	if strings.Contains(said, `"level"`) {
		t.Errorf("log lines on stderr with --log-file:\n%s", said)
	}
	logged, _ := os.ReadFile(logFile)
	// Durations name their unit, in whole milliseconds.
	if !regexp.MustCompile(`"elapsed_ms":\d+,.*"message":"ready"`).Match(logged) || strings.Contains(string(logged), `"elapsed":`) {
		t.Errorf("log file lacks a ready line with elapsed_ms:\n%s", logged)
	}
	everyLineJSON(t, "serve's log file", string(logged))
}

// withoutEnv returns env without the variable name.
func withoutEnv(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// TestLaunchTimeoutMessage: a launch past --startup-timeout names the limit
// it was given (the flag's, not another), and a runCmd server, which
// 'mcp-gateway pull' cannot install, gets no hint to pull it.
func TestLaunchTimeoutMessage(t *testing.T) {
	sb := newTestbox(t)
	r := sb.launch(mcpConfig(t, map[string]any{
		"slow": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{StartDelay: time.Hour})},
	}), "--startup-timeout", "3s")
	if r.code == 0 {
		t.Fatal("launch succeeded past its timeout")
	}
	if !strings.Contains(r.stderr, "startup timed out after 3s;") || !strings.Contains(r.stderr, "slow") {
		t.Errorf("stderr %q should name the 3s limit and the slow server", r.stderr)
	}
	if strings.Contains(r.stderr, "mcp-gateway pull") {
		t.Errorf("a runCmd server is hinted to 'mcp-gateway pull': %q", r.stderr)
	}
	gone(t, "after a timed-out launch", sb.pidFile, sb.tokenFile)
}
