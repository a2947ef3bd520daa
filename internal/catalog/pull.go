package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
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
	// Timeout bounds the install command; zero means DefaultPullTimeout. Past it the command's
	// process group is killed and the step fails, and Pull goes on with the next one.
	Timeout time.Duration
}

// DefaultPullTimeout is how long one server's install may take when its step sets no Timeout:
// generous for a large package on a slow link, yet a template build whose registry cannot be
// reached fails in minutes rather than hanging on the installer's own retries.
const DefaultPullTimeout = 5 * time.Minute

// registryProbeTimeout bounds the check that a step's package registry answers at all.
const registryProbeTimeout = 10 * time.Second

// pullWaitDelay bounds how long Pull waits for a step's output after the step exits or is
// canceled, in case a leftover grandchild holds its pipes open.
const pullWaitDelay = 5 * time.Second

// PullPlan returns the install steps for names, in the given order with duplicates dropped.
// npm packages install globally (`npm install -g`) so their bin lands on PATH; PyPI packages with
// `uv tool install`, which links the bin into uv's tool bin dir (UV_TOOL_BIN_DIR, by default
// ~/.local/bin): the template must have that dir on PATH for Resolve to find it. Unknown names
// are reported all at once, with the catalog, so a template build fails with one clear message.
func (c *Catalog) PullPlan(names []string) ([]InstallStep, error) {
	var unknown, unavailable []string
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
			s.Argv = []string{"npm", "install", "-g", e.Package.npmSpec()}
		case ManagerPyPI:
			s.Argv = []string{"uv", "tool", "install", e.Package.pypiSpec()}
		case ManagerRemote:
			s.Note = "hosted remotely"
		case ManagerUnavailable:
			unavailable = append(unavailable, fmt.Sprintf("%q cannot start here: %s; to run it anyway, %s", n, e.Unavailable.Reason, e.Unavailable.HowTo))
			continue
		case ManagerBuiltin:
			s.Note = "built in"
		case ManagerCommand:
			s.Note = "runs a command"
		}
		steps = append(steps, s)
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("pull: unknown server %s (%s)", strings.Join(unknown, ", "), catalogHint(c.Names()))
	}
	if len(unavailable) > 0 {
		return nil, fmt.Errorf("pull: %s", strings.Join(unavailable, "; "))
	}
	return steps, nil
}

// Pull runs steps one after another, streaming each step's stdout and stderr to stdout and
// stderr with a "[<server>] " prefix on every line. Each step is bracketed by two lines that start
// with the time (UTC): "<time> pull <server>: running <argv> (timeout 5m0s)" on stdout as it
// starts, and "<time> pull <server>: ok (1.2s)" on stdout or "<time> pull <server>: failed: ...
// (1.2s)" on stderr as it ends. A step runs at most its Timeout. While an npm or uv step runs,
// Pull checks that its registry answers; when it cannot be reached, a line says so at once
// (naming the registry and the error) and the step's failure says so too: installers retry a dead
// registry silently for minutes. A failed step does not stop the rest, so one build shows every
// problem; the error names every failed server. Canceling ctx kills the running step's process
// group and fails the remaining steps. Steps run with the gateway's environment minus
// GATEWAY_ACCESS_TOKEN.
func Pull(ctx context.Context, steps []InstallStep, stdout, stderr io.Writer) error {
	var failed []string
	var errs []error
	stamp := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	for _, s := range steps {
		if len(s.Argv) == 0 {
			fmt.Fprintf(stdout, "%s pull %s: nothing to install (%s)\n", stamp(time.Now()), s.Server, s.Note)
			continue
		}
		timeout := s.Timeout
		if timeout <= 0 {
			timeout = DefaultPullTimeout
		}
		start := time.Now()
		err := ctx.Err()
		if err == nil {
			fmt.Fprintf(stdout, "%s pull %s: running %s (timeout %s)\n", stamp(start), s.Server, strings.Join(s.Argv, " "), timeout)
			err = runStep(ctx, s, timeout, stdout, stderr)
		}
		end := time.Now()
		secs := end.Sub(start).Seconds()
		if err != nil {
			fmt.Fprintf(stderr, "%s pull %s: failed: %v (%.1fs)\n", stamp(end), s.Server, err, secs)
			failed = append(failed, s.Server)
			errs = append(errs, fmt.Errorf("pull %s: %w", s.Server, err))
			continue
		}
		fmt.Fprintf(stdout, "%s pull %s: ok (%.1fs)\n", stamp(end), s.Server, secs)
	}
	if len(errs) > 0 {
		return fmt.Errorf("pull failed for %s: %w", strings.Join(failed, ", "), errors.Join(errs...))
	}
	return nil
}

// ErrRegistryUnreachable is wrapped by the error of a step whose package registry could not be
// reached while it ran.
var ErrRegistryUnreachable = errors.New("registry cannot be reached")

func runStep(ctx context.Context, s InstallStep, timeout time.Duration, stdout, stderr io.Writer) error {
	var mu sync.Mutex // stdout and stderr may be the same writer; exec copies them concurrently
	prefix := "[" + s.Server + "] "
	out := &prefixWriter{w: stdout, prefix: prefix, mu: &mu}
	errOut := &prefixWriter{w: stderr, prefix: prefix, mu: &mu}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, tokenEnv+"=")
	})
	stepCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// The registry check runs beside the install, so a reachable registry costs nothing.
	var probeErr error
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		url := registryURL(stepCtx, s.Argv, env)
		if url == "" {
			return
		}
		if err := probeRegistry(stepCtx, url); err != nil && stepCtx.Err() == nil {
			probeErr = fmt.Errorf("%w: %s: %v", ErrRegistryUnreachable, url, err)
			mu.Lock()
			fmt.Fprintf(stderr, "%s pull %s: %v (check the build's network, proxy or registry setting; the install is given until its timeout)\n",
				time.Now().UTC().Format(time.RFC3339), s.Server, probeErr)
			mu.Unlock()
		}
	}()

	cmd := exec.CommandContext(stepCtx, s.Argv[0], s.Argv[1:]...)
	cmd.Env = env
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
	if err == nil {
		cancel() // the install worked: whatever the check would say no longer matters
		<-probed
		return nil
	}
	argv := strings.Join(s.Argv, " ")
	if errors.Is(err, exec.ErrNotFound) {
		cancel()
		<-probed
		return fmt.Errorf("%s: %w; %s", argv, err, ToolHint(s.Argv[0]))
	}
	switch {
	case ctx.Err() != nil:
		err = ctx.Err()
	case stepCtx.Err() != nil:
		err = fmt.Errorf("timed out after %s", timeout)
	}
	cancel()
	<-probed
	if probeErr != nil {
		return fmt.Errorf("%s: %w (%w)", argv, err, probeErr)
	}
	return fmt.Errorf("%s: %w", argv, err)
}

// registryURL returns the package registry an install command will fetch from, or "" for a
// command that is not a known installer. npm's comes from its environment configuration or, failing
// that, from `npm config get registry` (which also reads .npmrc files); uv's from its index
// variables.
func registryURL(ctx context.Context, argv, env []string) string {
	lookup := func(names ...string) string {
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			for _, n := range names {
				if strings.EqualFold(k, n) && v != "" {
					return v
				}
			}
		}
		return ""
	}
	switch filepath.Base(argv[0]) {
	case "npm":
		if u := lookup("npm_config_registry"); u != "" {
			return u
		}
		cctx, cancel := context.WithTimeout(ctx, registryProbeTimeout)
		defer cancel()
		cmd := exec.CommandContext(cctx, argv[0], "config", "get", "registry")
		cmd.Env = env
		if b, err := cmd.Output(); err == nil {
			if u := strings.TrimSpace(string(b)); strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
				return u
			}
		}
		return "https://registry.npmjs.org/"
	case "uv":
		if u := lookup("UV_DEFAULT_INDEX", "UV_INDEX_URL"); u != "" {
			return u
		}
		return "https://pypi.org/simple/"
	}
	return ""
}

// probeRegistry reports whether url answers HTTP at all (any status will do: a registry may
// answer its root with 404 or 401), through the proxy the environment names, as installers use.
func probeRegistry(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, registryProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		var ue *neturl.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("no answer within %s", registryProbeTimeout)
		}
		return err
	}
	resp.Body.Close()
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

// ToolHint says what to install for a package tool the catalog's servers
// need (uv, uvx, npm, npx): "executable file not found" names the program,
// not the package that provides it.
func ToolHint(tool string) string {
	switch tool {
	case "uv", "uvx":
		return "install uv, which provides uv and uvx (https://docs.astral.sh/uv/getting-started/installation/, e.g. `pip install uv`)"
	case "npm", "npx":
		return "install Node.js with npm, which provides npx (https://nodejs.org/, e.g. `apt-get install nodejs npm`)"
	}
	return "install " + tool
}
