package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestTypeScriptClientCancel: the official TypeScript SDK client cancels a
// call through the gateway and gets no answer to it (the spec: the receiver
// of a cancellation SHOULD NOT respond), over HTTP on the fast path (a call
// without a progress token from a client without capabilities) and on the
// SDK's path (with one), and in stdio mode; the server sees each
// cancellation and the next call is answered.
func TestTypeScriptClientCancel(t *testing.T) {
	ts := tsHarness(t)
	cfg := mcpConfig(t, map[string]any{
		"a": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "a", Tools: []string{"echo", "sleep"}})},
	})

	t.Run("http", func(t *testing.T) {
		sb := newTestbox(t)
		sb.mustLaunch(cfg)
		runCancelClient(t, ts, sb.log, 1, "http", sb.url()+"/mcp", sb.token)
		runCancelClient(t, ts, sb.log, 2, "http", sb.url()+"/mcp", sb.token, "--progress")
	})
	for _, progress := range []bool{false, true} {
		t.Run(fmt.Sprintf("stdio progress=%v", progress), func(t *testing.T) {
			dir := t.TempDir()
			logFile := filepath.Join(dir, "stdio.log")
			logOf := func() string { b, _ := os.ReadFile(logFile); return string(b) }
			args := []string{"stdio", gatewayBin, "stdio", "--config", cfg, "--log-file", logFile,
				"--catalog", filepath.Join(dir, "catalog.json"), "--servers-dir", filepath.Join(dir, "servers")}
			if progress {
				args = append(args, "--progress")
			}
			runCancelClient(t, ts, logOf, 1, args...)
		})
	}
}

// runCancelClient runs test/ts/cancel.mjs with args, tells it to cancel once
// the server logged its n-th "sleep started" (logOf returns the log that
// has the server's stderr), and checks what it got.
func runCancelClient(t *testing.T, ts string, logOf func() string, n int, args ...string) {
	t.Helper()
	label := args[0] // the mode, and whether the call had a progress token
	if args[len(args)-1] == "--progress" {
		label += " with a progress token"
	}
	cmd := exec.Command("node", append([]string{filepath.Join(ts, "cancel.mjs")}, args...)...)
	cmd.Dir = ts
	p := startPiped(t, cmd)
	defer p.stop()
	in, out, stderr := p.in, p.out, p.stderr
	lines := make(chan string, 2)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func() string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				_ = cmd.Wait()
				t.Fatalf("cancel.mjs %s ended early: %s", label, stderr.String())
			}
			return l
		case <-time.After(60 * time.Second):
			t.Fatalf("cancel.mjs %s said nothing for 60 s: %s", label, stderr.String())
			return ""
		}
	}
	if l := next(); l != `{"started":true}` {
		t.Fatalf("cancel.mjs first line %q", l)
	}
	waitFor(t, 30*time.Second, "the server to start sleeping", func() bool { return strings.Count(logOf(), "sleep started") == n })
	if _, err := io.WriteString(in, "cancel\n"); err != nil {
		t.Fatal(err)
	}
	var got struct {
		CancelledAnswer json.RawMessage `json:"cancelledAnswer"`
		Echo            struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"echo"`
	}
	if l := next(); json.Unmarshal([]byte(l), &got) != nil {
		t.Fatalf("cancel.mjs output %q", l)
	}
	if string(got.CancelledAnswer) != "null" {
		t.Errorf("%s: the cancelled call was answered: %s", label, got.CancelledAnswer)
	}
	if len(got.Echo.Content) != 1 || got.Echo.Content[0].Text != "after" {
		t.Errorf("%s: the call after the cancellation: %+v", label, got.Echo)
	}
	waitFor(t, 10*time.Second, "the server to see the cancellation", func() bool { return strings.Count(logOf(), "sleep cancelled") == n })
}
