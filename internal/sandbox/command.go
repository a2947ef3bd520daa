package sandbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pipeDrainDelay is how long a foreground command's output pipes stay open
// after its shell exits. A command like `server &` leaves a child holding
// them; without a bound the call would hang until that child exits.
const pipeDrainDelay = time.Second

type runInput struct {
	Command    string            `json:"command" jsonschema:"shell command, run with /bin/sh -c"`
	Workdir    string            `json:"workdir,omitempty" jsonschema:"directory to run in; relative paths resolve against the server workdir"`
	TimeoutMS  int64             `json:"timeout_ms,omitempty" jsonschema:"foreground time limit in milliseconds; the whole process group is killed when it expires"`
	Background bool              `json:"background,omitempty" jsonschema:"start the command and return at once with its pid and an output file; it keeps running until it exits or the server stops"`
	Env        map[string]string `json:"env,omitempty" jsonschema:"extra environment variables, added to the server environment"`
}

// runOutput is the structured result of a foreground command.
type runOutput struct {
	// ExitCode follows the shell convention: 128+N when killed by signal N.
	ExitCode  int    `json:"exit_code"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	TimedOut  bool   `json:"timed_out"`
	Truncated bool   `json:"truncated"`
}

// backgroundOutput is the structured result of a background command.
type backgroundOutput struct {
	PID        int    `json:"pid"`
	OutputPath string `json:"output_path"`
}

const runDescription = `Run a shell command (/bin/sh -c) inside the sandbox.
Foreground (default): waits for the command and returns its exit code, stdout and stderr (each capped, with a "[... truncated N bytes]" marker). On timeout the command and every process it started are killed and timed_out is true.
Background (background=true): starts the command in its own process group and returns at once with its pid and the path of a file that receives its stdout and stderr; read that file with read_file. timeout_ms does not apply.
Stdin is /dev/null. Processes left running are killed when the sandbox server stops.`

// runCommand is the run_command handler. Its output type is any because
// foreground and background calls return different shapes.
func (s *server) runCommand(ctx context.Context, _ *mcp.CallToolRequest, in runInput) (*mcp.CallToolResult, any, error) {
	if strings.TrimSpace(in.Command) == "" {
		return nil, nil, errors.New("run_command: command is empty")
	}
	dir := s.resolve(in.Workdir)
	if fi, err := os.Stat(dir); err != nil {
		return nil, nil, pathError("run_command: workdir ", dir, err)
	} else if !fi.IsDir() {
		return nil, nil, fmt.Errorf("run_command: workdir %s: not a directory", dir)
	}
	env, err := commandEnv(in.Env)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command("/bin/sh", "-c", in.Command)
	cmd.Dir = dir
	cmd.Env = env
	if in.Background {
		return s.runBackground(cmd)
	}
	timeout := s.opts.DefaultTimeout
	if in.TimeoutMS < 0 {
		return nil, nil, fmt.Errorf("run_command: timeout_ms %d is negative", in.TimeoutMS)
	}
	if in.TimeoutMS > 0 {
		// Compared in milliseconds: a huge timeout_ms would overflow a Duration.
		if in.TimeoutMS > s.opts.MaxTimeout.Milliseconds() {
			return nil, nil, fmt.Errorf("run_command: timeout_ms %d exceeds the maximum of %d", in.TimeoutMS, s.opts.MaxTimeout.Milliseconds())
		}
		timeout = time.Duration(in.TimeoutMS) * time.Millisecond
	}
	return s.runForeground(ctx, cmd, timeout)
}

func (s *server) runForeground(ctx context.Context, cmd *exec.Cmd, timeout time.Duration) (*mcp.CallToolResult, any, error) {
	stdout := &cappedBuffer{limit: s.opts.MaxOutputBytes}
	stderr := &cappedBuffer{limit: s.opts.MaxOutputBytes}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = pipeDrainDelay

	if err := s.procs.start(cmd); err != nil {
		return nil, nil, fmt.Errorf("run_command: start: %w", err)
	}
	// The timer, not exec.CommandContext, kills the group: CommandContext
	// signals only the shell, and its children would keep the pipes open.
	var killed atomic.Bool
	timer := time.AfterFunc(timeout, func() {
		killed.Store(true)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	})
	stop := context.AfterFunc(ctx, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	waitErr := s.procs.wait(cmd)
	timer.Stop()
	stop()
	if ctx.Err() != nil {
		return nil, nil, fmt.Errorf("run_command: %w", context.Cause(ctx))
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) && !errors.Is(waitErr, exec.ErrWaitDelay) {
		return nil, nil, fmt.Errorf("run_command: wait: %w", waitErr)
	}

	out := runOutput{
		ExitCode:  exitCode(cmd.ProcessState),
		Stdout:    stdout.String(),
		Stderr:    stderr.String(),
		TimedOut:  killed.Load(),
		Truncated: stdout.dropped > 0 || stderr.dropped > 0,
	}
	var text strings.Builder
	fmt.Fprintf(&text, "exit_code: %d", out.ExitCode)
	if out.TimedOut {
		fmt.Fprintf(&text, " (timed out after %s; process group killed)", timeout)
	}
	text.WriteString("\n")
	if out.Stdout != "" {
		fmt.Fprintf(&text, "--- stdout ---\n%s\n", strings.TrimSuffix(out.Stdout, "\n"))
	}
	if out.Stderr != "" {
		fmt.Fprintf(&text, "--- stderr ---\n%s\n", strings.TrimSuffix(out.Stderr, "\n"))
	}
	return textResult(text.String()), out, nil
}

func (s *server) runBackground(cmd *exec.Cmd) (*mcp.CallToolResult, any, error) {
	if err := os.MkdirAll(s.opts.BackgroundDir, 0o700); err != nil {
		return nil, nil, pathError("run_command: background dir ", s.opts.BackgroundDir, err)
	}
	f, err := os.CreateTemp(s.opts.BackgroundDir, "run-*.log")
	if err != nil {
		return nil, nil, pathError("run_command: background output in ", s.opts.BackgroundDir, err)
	}
	defer f.Close() // the child holds its own descriptor
	cmd.Stdout, cmd.Stderr = f, f
	if err := s.procs.start(cmd); err != nil {
		_ = os.Remove(f.Name())
		return nil, nil, fmt.Errorf("run_command: start: %w", err)
	}
	go func() { _ = s.procs.wait(cmd) }()
	out := backgroundOutput{PID: cmd.Process.Pid, OutputPath: f.Name()}
	return textResult(fmt.Sprintf("started pid %d; output goes to %s", out.PID, out.OutputPath)), out, nil
}

// commandEnv is the server's environment with extra appended; exec keeps the
// last of duplicate names, so extra wins.
func commandEnv(extra map[string]string) ([]string, error) {
	env := os.Environ()
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(extra[k], 0) {
			return nil, fmt.Errorf("run_command: env %q: names must be non-empty without '=' or NUL, values without NUL", k)
		}
		env = append(env, k+"="+extra[k])
	}
	return env, nil
}

// exitCode reports a signal death as 128+signal, as shells do, instead of
// os.ProcessState's -1, which hides which signal it was.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// cappedBuffer keeps the first limit bytes written to it and counts the rest.
// It never fails a write, so the command is not killed by SIGPIPE for being
// verbose. exec writes from a single goroutine per stream and Wait orders
// those writes before String, so it needs no lock.
type cappedBuffer struct {
	limit   int
	buf     []byte
	dropped int64
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	keep := min(len(p), b.limit-len(b.buf))
	b.buf = append(b.buf, p[:keep]...)
	b.dropped += int64(len(p) - keep)
	return len(p), nil
}

// String returns the kept bytes and, if any were dropped, a marker saying how
// many. A character split by the cap is dropped whole so that the text stays
// valid UTF-8.
func (b *cappedBuffer) String() string {
	if b.dropped == 0 {
		return string(b.buf)
	}
	kept, dropped := b.buf, b.dropped
	if n := validPrefix(kept); n < len(kept) {
		dropped += int64(len(kept) - n)
		kept = kept[:n]
	}
	return fmt.Sprintf("%s\n[... truncated %d bytes]", kept, dropped)
}

// validPrefix returns the length of b without a trailing incomplete UTF-8
// sequence, or len(b) if b does not end in one.
func validPrefix(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return len(b)
			}
			return i
		}
	}
	return len(b)
}
