package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestRunCommandForeground(t *testing.T) {
	t.Parallel()
	h := startServer(t, Options{})
	out, text := ok[runOutput](h, "run_command", map[string]any{"command": "echo out; echo err >&2; exit 3"})
	want := runOutput{ExitCode: 3, Stdout: "out\n", Stderr: "err\n"}
	if out != want {
		t.Errorf("structured = %+v, want %+v", out, want)
	}
	for _, s := range []string{"exit_code: 3", "out", "err"} {
		if !strings.Contains(text, s) {
			t.Errorf("text %q lacks %q", text, s)
		}
	}
}

func TestRunCommandWorkdirAndEnv(t *testing.T) {
	t.Parallel()
	h := startServer(t, Options{})
	if err := os.Mkdir(filepath.Join(h.workdir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, _ := ok[runOutput](h, "run_command", map[string]any{
		"command": `pwd; echo "$GREETING"; read line; echo "stdin=[$line]"`,
		"env":     map[string]string{"GREETING": "hi there"},
	})
	if want := h.workdir + "\nhi there\nstdin=[]\n"; out.Stdout != want {
		t.Errorf("default workdir: stdout = %q, want %q", out.Stdout, want)
	}
	out, _ = ok[runOutput](h, "run_command", map[string]any{"command": "pwd", "workdir": "sub"})
	if want := filepath.Join(h.workdir, "sub") + "\n"; out.Stdout != want {
		t.Errorf("relative workdir: stdout = %q, want %q", out.Stdout, want)
	}
}

func TestRunCommandTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	h := startServer(t, Options{})
	pidFile := filepath.Join(h.workdir, "child.pid")
	// The shell waits on a child of its own; both must die at the deadline.
	cmd := fmt.Sprintf(`sleep 1000 & echo $! > %s; echo started; wait`, pidFile)
	out, text := ok[runOutput](h, "run_command", map[string]any{"command": cmd, "timeout_ms": 300})
	if !out.TimedOut || out.ExitCode != 137 || out.Stdout != "started\n" {
		t.Errorf("got %+v, want timed_out, exit 137 (SIGKILL), stdout kept", out)
	}
	if !strings.Contains(text, "timed out") {
		t.Errorf("text %q does not say it timed out", text)
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	// The grandchild is reparented to init, which reaps it on its own time.
	eventually(t, fmt.Sprintf("grandchild %d to die", pid), func() bool { return processGone(pid) })
}

func TestRunCommandTruncatesEachStream(t *testing.T) {
	t.Parallel()
	h := startServer(t, Options{MaxOutputBytes: 100})
	out, text := ok[runOutput](h, "run_command", map[string]any{
		"command": `head -c 1000 /dev/zero | tr '\0' a; head -c 250 /dev/zero | tr '\0' b >&2`,
	})
	wantOut := strings.Repeat("a", 100) + "\n[... truncated 900 bytes]"
	wantErr := strings.Repeat("b", 100) + "\n[... truncated 150 bytes]"
	if out.Stdout != wantOut || out.Stderr != wantErr || !out.Truncated || out.ExitCode != 0 {
		t.Errorf("got %+v, want stdout %q, stderr %q, truncated", out, wantOut, wantErr)
	}
	if !strings.Contains(text, "[... truncated 900 bytes]") {
		t.Errorf("text lacks the truncation marker: %q", text)
	}
}

func TestCappedBufferKeepsWholeCharacters(t *testing.T) {
	t.Parallel()
	b := &cappedBuffer{limit: 5}
	fmt.Fprint(b, "ééé") // 6 bytes; a cut at 5 would split the third é
	if got, want := b.String(), "éé\n[... truncated 2 bytes]"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestRunCommandRefusals(t *testing.T) {
	t.Parallel()
	h := startServer(t, Options{MaxTimeout: 5 * time.Second})
	missing := filepath.Join(h.workdir, "missing")
	cases := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"command": "true", "workdir": missing}, "run_command: workdir " + missing + ": no such file or directory"},
		{map[string]any{"command": "true", "timeout_ms": 6000}, "run_command: timeout_ms 6000 exceeds the maximum of 5000"},
		{map[string]any{"command": "true", "timeout_ms": int64(1e15)}, "run_command: timeout_ms 1000000000000000 exceeds"},
		{map[string]any{"command": "  "}, "run_command: command is empty"},
		{map[string]any{"command": "true", "env": map[string]string{"A=B": "x"}}, `run_command: env "A=B"`},
	}
	for _, c := range cases {
		if msg := h.toolError("run_command", c.args); !strings.HasPrefix(msg, c.want) {
			t.Errorf("%v: error %q, want prefix %q", c.args, msg, c.want)
		}
	}
	// A command that cannot be executed at all (NUL in the argument).
	if msg := h.toolError("run_command", map[string]any{"command": "echo a\x00b"}); !strings.HasPrefix(msg, "run_command: start:") {
		t.Errorf("NUL command: error %q", msg)
	}
}

func TestRunCommandConcurrent(t *testing.T) {
	t.Parallel()
	h := startServer(t, Options{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			res, err := h.cs.CallTool(t.Context(), &mcp.CallToolParams{
				Name:      "run_command",
				Arguments: map[string]any{"command": fmt.Sprintf("echo %d", i)},
			})
			if err != nil || res.IsError {
				t.Errorf("call %d: %v %v", i, err, res)
				return
			}
			if got := textOf(res); !strings.Contains(got, fmt.Sprintf("--- stdout ---\n%d\n", i)) {
				t.Errorf("call %d: text %q", i, got)
			}
		})
	}
	wg.Wait()
}

func TestRunCommandBackground(t *testing.T) {
	t.Parallel()
	h := startServer(t, Options{})
	out, _ := ok[backgroundOutput](h, "run_command", map[string]any{
		"command":    "echo hello-bg; echo oops >&2; exec sleep 1000",
		"background": true,
	})
	if filepath.Dir(out.OutputPath) != h.bgdir || out.PID <= 0 {
		t.Fatalf("got %+v, want a pid and a file in %s", out, h.bgdir)
	}
	eventually(t, "background output to fill", func() bool {
		b, _ := os.ReadFile(out.OutputPath)
		return strings.Contains(string(b), "hello-bg\n") && strings.Contains(string(b), "oops\n")
	})
	if processGone(out.PID) {
		t.Fatalf("background process %d is not running", out.PID)
	}
	// The output file is readable through the server too.
	read, _ := ok[readOutput](h, "read_file", map[string]any{"path": out.OutputPath})
	if !strings.Contains(read.Content, "hello-bg") {
		t.Errorf("read_file of output: %q", read.Content)
	}

	// Stopping the server kills and reaps the background command: the
	// server is its parent, so once the server has exited the pid is gone.
	h.close()
	if !processGone(out.PID) {
		t.Errorf("background process %d survived the server", out.PID)
	}
}

func TestLeftoverForegroundChildrenDieWithServer(t *testing.T) {
	t.Parallel()
	h := startServer(t, Options{})
	out, _ := ok[runOutput](h, "run_command", map[string]any{"command": "sleep 1000 >/dev/null 2>&1 & echo $!"})
	pid, err := strconv.Atoi(strings.TrimSpace(out.Stdout))
	if err != nil {
		t.Fatalf("stdout %q: %v", out.Stdout, err)
	}
	if processGone(pid) {
		t.Fatalf("leftover %d is not running while the server is", pid)
	}
	h.close()
	eventually(t, fmt.Sprintf("leftover %d to die", pid), func() bool { return processGone(pid) })
}

// TestRunStopsOnContextDone runs the server in this process over pipes and
// cancels its context: Run must return and take its processes with it.
func TestRunStopsOnContextDone(t *testing.T) {
	t.Parallel()
	clientR, serverW := io.Pipe()
	serverR, clientW := io.Pipe()
	t.Cleanup(func() {
		clientR.Close()
		clientW.Close()
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, serverR, serverW, Options{Workdir: t.TempDir(), BackgroundDir: t.TempDir()}) }()

	client := mcp.NewClient(&mcp.Implementation{Name: "sandbox-test", Version: "0"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.IOTransport{Reader: clientR, Writer: clientW}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{
		Name:      "run_command",
		Arguments: map[string]any{"command": "exec sleep 1000", "background": true},
	})
	if err != nil || res.IsError {
		t.Fatalf("start background: %v %v", err, res)
	}
	pid := int(res.StructuredContent.(map[string]any)["pid"].(float64))

	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run returned %v, want context.Canceled", err)
	}
	// The sleep was this process's child and Run reaped it before returning.
	if !processGone(pid) {
		t.Errorf("background process %d survived Run", pid)
	}
}
