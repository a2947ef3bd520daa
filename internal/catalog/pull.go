package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// InstallStep is what `mcp-gateway pull` does for one server at template build time, so that the
// first start in a sandbox does not spend its 60 seconds downloading.
type InstallStep struct {
	Server string
	// Argv is the install command; nil when there is nothing to install (see Note).
	Argv []string
	// Note says why there is nothing to install ("built in", "runs a command"), when Argv is nil.
	Note string
}

// pullWaitDelay bounds how long Pull waits for a step's output after the step exits or is
// canceled, in case a leftover grandchild holds its pipes open.
const pullWaitDelay = 5 * time.Second

// PullPlan returns the install steps for names, in the given order with duplicates dropped.
// npm packages install globally (`npm install -g`) so their bin lands on PATH; PyPI packages with
// `uv tool install`, which links the bin into uv's tool bin dir (UV_TOOL_BIN_DIR, by default
// ~/.local/bin): the template must have that dir on PATH for Resolve to find it. Unknown names
// are reported all at once, with the catalog, so a template build fails with one clear message.
func (c *Catalog) PullPlan(names []string) ([]InstallStep, error) {
	var unknown []string
	var steps []InstallStep
	seen := make(map[string]bool)
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		e, ok := c.Lookup(n)
		if !ok {
			unknown = append(unknown, fmt.Sprintf("%q", n))
			continue
		}
		s := InstallStep{Server: n}
		switch e.Package.Manager {
		case ManagerNPM:
			s.Argv = []string{"npm", "install", "-g", e.Package.Name}
		case ManagerPyPI:
			s.Argv = []string{"uv", "tool", "install", e.Package.Name}
		case ManagerBuiltin:
			s.Note = "built in"
		case ManagerCommand:
			s.Note = "runs a command"
		}
		steps = append(steps, s)
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("pull: unknown server %s (catalog: %s)", strings.Join(unknown, ", "), strings.Join(c.Names(), ", "))
	}
	return steps, nil
}

// Pull runs steps one after another, streaming each step's stdout and stderr to stdout and
// stderr with a "[<server>] " prefix on every line, and ends each with a line
// "pull <server>: ok (1.2s)" on stdout or "pull <server>: failed: ... (1.2s)" on stderr. A failed
// step does not stop the rest, so one build shows every problem; the error names every failed
// server. Canceling ctx kills the running step's process group and fails the remaining steps.
// Steps run with the gateway's environment minus GATEWAY_ACCESS_TOKEN.
func Pull(ctx context.Context, steps []InstallStep, stdout, stderr io.Writer) error {
	var failed []string
	var errs []error
	for _, s := range steps {
		if len(s.Argv) == 0 {
			fmt.Fprintf(stdout, "pull %s: nothing to install (%s)\n", s.Server, s.Note)
			continue
		}
		start := time.Now()
		err := ctx.Err()
		if err == nil {
			err = runStep(ctx, s, stdout, stderr)
		}
		secs := time.Since(start).Seconds()
		if err != nil {
			fmt.Fprintf(stderr, "pull %s: failed: %v (%.1fs)\n", s.Server, err, secs)
			failed = append(failed, s.Server)
			errs = append(errs, fmt.Errorf("pull %s: %w", s.Server, err))
			continue
		}
		fmt.Fprintf(stdout, "pull %s: ok (%.1fs)\n", s.Server, secs)
	}
	if len(errs) > 0 {
		return fmt.Errorf("pull failed for %s: %w", strings.Join(failed, ", "), errors.Join(errs...))
	}
	return nil
}

func runStep(ctx context.Context, s InstallStep, stdout, stderr io.Writer) error {
	var mu sync.Mutex // stdout and stderr may be the same writer; exec copies them concurrently
	prefix := "[" + s.Server + "] "
	out := &prefixWriter{w: stdout, prefix: prefix, mu: &mu}
	errOut := &prefixWriter{w: stderr, prefix: prefix, mu: &mu}
	cmd := exec.CommandContext(ctx, s.Argv[0], s.Argv[1:]...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, tokenEnv+"=")
	})
	cmd.Stdout, cmd.Stderr = out, errOut
	// Installers spawn helpers (npm runs node-gyp, uv runs builds); a group kill reaps them too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = pullWaitDelay
	err := cmd.Run()
	if errors.Is(err, exec.ErrWaitDelay) {
		// The step succeeded but left a process holding its output open (a daemon started by a
		// postinstall script, say). The group still exists, so its id is not reused: kill it.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = nil
	}
	out.finish()
	errOut.finish()
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%s: %w", strings.Join(s.Argv, " "), ctx.Err())
	}
	if err != nil {
		return fmt.Errorf("%s: %w", strings.Join(s.Argv, " "), err)
	}
	return nil
}

// maxLine bounds a buffered partial line, so output without newlines (progress bars) cannot grow
// memory without limit; a longer line is written out in pieces, each prefixed.
const maxLine = 64 << 10

// prefixWriter writes each line written to it to w with prefix in front. Writes to w are
// serialized by mu, which is shared with the writer for the other stream of the same process.
type prefixWriter struct {
	w      io.Writer
	prefix string
	mu     *sync.Mutex
	buf    []byte // partial line; used only by the goroutine exec runs for this stream
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		line := b
		nl := bytes.IndexByte(b, '\n')
		if nl >= 0 {
			line = b[:nl]
		}
		if room := maxLine - len(p.buf); len(line) > room {
			p.buf = append(p.buf, line[:room]...)
			b = b[room:]
			p.writeLine()
			continue
		}
		p.buf = append(p.buf, line...)
		if nl < 0 {
			break
		}
		b = b[nl+1:]
		p.writeLine()
	}
	return n, nil
}

// finish writes a last line that did not end in a newline.
func (p *prefixWriter) finish() {
	if len(p.buf) > 0 {
		p.writeLine()
	}
}

// writeLine writes the buffered line with its prefix. Errors writing to w are dropped: losing
// installer chatter must not fail the install.
func (p *prefixWriter) writeLine() {
	p.mu.Lock()
	defer p.mu.Unlock()
	line := make([]byte, 0, len(p.prefix)+len(p.buf)+1)
	line = append(append(append(line, p.prefix...), p.buf...), '\n')
	p.w.Write(line)
	p.buf = p.buf[:0]
}
