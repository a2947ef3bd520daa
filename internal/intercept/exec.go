package intercept

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// execRunner runs a shell command per hook: the Request document on stdin,
// the Decision (or nothing, or a bare CallToolResult) on stdout, and its
// stderr in the gateway's log. A non-zero exit is a failure.
type execRunner struct {
	command string
	env     []string
	log     zerolog.Logger
}

// maxExecOutput bounds what a command may answer: more is a failure, not a
// gateway out of memory.
const maxExecOutput = 16 << 20

// execWaitDelay is how long a command's output may stay open after it was
// killed (a grandchild holding stdout) before the gateway stops reading.
const execWaitDelay = time.Second

func (r *execRunner) handle(ctx context.Context, doc []byte, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", r.command)
	cmd.Env = r.env
	cmd.Stdin = bytes.NewReader(doc)
	// Its own process group, killed whole at the timeout: the shell's
	// children (jq, curl) must not outlive the hook.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = execWaitDelay
	var out limitedBuffer
	out.max = maxExecOutput
	cmd.Stdout = &out
	// A writer, not a pipe read here: Wait then stops waiting for output
	// after WaitDelay even if a process that left the group holds it open.
	stderr := &lineLog{log: r.log, msg: "exec interceptor"}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	err := cmd.Wait()
	stderr.flush()
	switch {
	case context.Cause(ctx) == errTimeout: // the hook's own timeout, not the caller's deadline
		return nil, errTimeout
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case out.over:
		return nil, fmt.Errorf("answered more than %d bytes", maxExecOutput)
	case err != nil:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("command exited with status %d", ee.ExitCode())
		}
		return nil, err
	}
	return out.Bytes(), nil
}

func (r *execRunner) close() {}

// limitedBuffer keeps up to max bytes and notes that more came.
type limitedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		b.over = true
		return 0, errors.New("output too large")
	}
	return b.Buffer.Write(p)
}
