package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
)

// openPTY opens a pseudo-terminal pair (posix_openpt, unlockpt, ptsname by
// hand with x/sys/unix, to need no pty library): what a person's terminal
// looks like to the command writing to the second file.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatalf("open pts: %v", err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// slowConfig has a server ready at once and one that takes 1.5 s.
func slowConfig(t *testing.T) string {
	return mcpConfig(t, map[string]any{
		"quick": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Tools: []string{"echo"}})},
		"slow":  map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Tools: []string{"echo", "fail"}, StartDelay: 1500 * time.Millisecond})},
	})
}

// TestLaunchProgressOnTerminal: a launch that takes longer than a second
// shows each server's progress when its stderr is a terminal, and nothing
// of it when stderr is a pipe (the SDKs' case).
func TestLaunchProgressOnTerminal(t *testing.T) {
	sb := newTestbox(t)
	master, slave := openPTY(t)
	cmd := exec.Command(gatewayBin, append([]string{"--config", slowConfig(t)}, sb.flags()...)...)
	cmd.Env = append(os.Environ(), "GATEWAY_ACCESS_TOKEN="+sb.token)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, slave
	read := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(master) // EIO once no process holds the terminal
		read <- strings.ReplaceAll(string(b), "\r\n", "\n")
	}()
	err := cmd.Run()
	slave.Close()
	var onTerminal string
	select {
	case onTerminal = <-read:
	case <-time.After(10 * time.Second):
		t.Fatal("terminal output never ended")
	}
	if err != nil {
		t.Fatalf("launch: %v\nterminal:\n%s\nlog:\n%s", err, onTerminal, sb.log())
	}
	for _, re := range []string{
		`(?m)^slow: starting$`,
		`(?m)^slow: ready in \d+\.\ds \(2 tools\)$`,
		`(?m)^quick: ready in \d+(\.\d)?m?s \(1 tool\)$`,
	} {
		if !regexp.MustCompile(re).MatchString(onTerminal) {
			t.Errorf("terminal output lacks %s:\n%s", re, onTerminal)
		}
	}
	if !strings.HasPrefix(stdout.String(), "mcp-gateway ready on") {
		t.Errorf("stdout %q", stdout.String())
	}
	sb.stop()

	piped := newTestbox(t)
	r := piped.launch(slowConfig(t))
	if r.code != 0 {
		t.Fatalf("launch exited %d: %s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "starting") || strings.Contains(r.stderr, "ready in") {
		t.Errorf("progress on a pipe:\n%s", r.stderr)
	}
}

// TestServeProgressOnTerminal: serve (what make run starts) on a terminal
// shows the same progress on stderr, and its ready line on stdout.
func TestServeProgressOnTerminal(t *testing.T) {
	sb := newTestbox(t)
	master, slave := openPTY(t)
	cmd := newCmd(gatewayBin, append([]string{"serve", "--config", slowConfig(t)}, sb.flags()...)...)
	cmd.Env = append(os.Environ(), "GATEWAY_ACCESS_TOKEN="+sb.token)
	cmd.Stderr = slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	lines := startLines(t, cmd)
	slave.Close() // the child has its own copy
	var term bytes.Buffer
	read := make(chan struct{})
	go func() {
		io.Copy(&term, master) // until the last holder of the terminal exits
		close(read)
	}()
	select {
	case l := <-lines:
		if !strings.HasPrefix(l, "mcp-gateway ready on") {
			t.Fatalf("first stdout line %q", l)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve never became ready")
	}
	stopServe(t, cmd, 20*time.Second)
	<-read
	got := strings.ReplaceAll(term.String(), "\r\n", "\n")
	if !regexp.MustCompile(`(?m)^slow: starting$`).MatchString(got) || !regexp.MustCompile(`(?m)^slow: ready in \d+\.\ds \(2 tools\)$`).MatchString(got) {
		t.Errorf("serve's terminal lacks slow's progress:\n%s", got)
	}
}

// TestProgressPrinter: nothing before the delay; then one line per server
// with what it has come to (its result, or "starting"); then each event
// as it comes; nothing after stop.
func TestProgressPrinter(t *testing.T) {
	var out bytes.Buffer
	p := newProgressPrinter(&out, time.Hour) // goes live by hand below
	p.add(gateway.Progress{Server: "a"})
	p.add(gateway.Progress{Server: "b"})
	p.add(gateway.Progress{Server: "a", Ready: true, Elapsed: 340 * time.Millisecond, Tools: 3})
	if out.Len() != 0 {
		t.Fatalf("printed before the delay: %q", out.String())
	}
	p.goLive()
	p.add(gateway.Progress{Server: "b", Ready: true, Elapsed: 2140 * time.Millisecond, Tools: 1})
	p.add(gateway.Progress{Server: "c", Failed: true, Elapsed: 2500 * time.Millisecond})
	p.add(gateway.Progress{Server: "e", Ready: true, Elapsed: 2 * time.Second, Tools: 2})
	p.stop()
	p.add(gateway.Progress{Server: "d"})
	want := "a: ready in 340ms (3 tools)\nb: starting\nb: ready in 2.1s (1 tool)\nc: failed after 2.5s\ne: ready in 2.0s (2 tools)\n"
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
	quiet := newProgressPrinter(&out, 20*time.Millisecond)
	quiet.add(gateway.Progress{Server: "x"})
	quiet.stop()
	if strings.Contains(out.String(), "x:") {
		t.Errorf("a start that ended before the delay printed: %q", out.String())
	}
	if isTerminal(&out) || isTerminal(io.Discard) {
		t.Error("a buffer is not a terminal")
	}
}
