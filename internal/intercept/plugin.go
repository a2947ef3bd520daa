package intercept

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/mcp-gateway/mcp-gateway/internal/pluginwire"
)

// HostName is the plugin host's executable name: the program that runs a
// plugin with go-plugin (gRPC) for the gateway, which links neither.
const HostName = "mcp-gateway-plugin-host"

// findHost returns the plugin host's path: next to the gateway's own
// executable (where make build and the template image put it), else on
// PATH.
func findHost() (string, error) {
	where := "on PATH"
	if self, err := os.Executable(); err == nil {
		c := filepath.Join(filepath.Dir(self), HostName)
		if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return c, nil
		}
		where = "in " + filepath.Dir(self) + " nor on PATH"
	}
	p, err := exec.LookPath(HostName)
	if err == nil {
		return filepath.Abs(p)
	}
	return "", fmt.Errorf("needs the plugin host %s, not found %s: install it next to mcp-gateway (make build builds both)", HostName, where)
}

// pluginRunner supervises one plugin through its host process (package
// pluginwire): the host starts the plugin with go-plugin and exits when
// it exits. A host found dead (or killed, with its plugin, for not
// answering in time) is started again at the next hook, at once the first
// time and with exponential backoff while it keeps failing; meanwhile hooks
// fail fast with "down". Starts are serialized by mu (a start waits for
// the plugin's handshake under it), so a burst of calls after a crash
// starts it once; killing and stopping never wait under mu.
type pluginRunner struct {
	name string
	host string // the plugin host's executable
	path string
	args []string
	env  []string
	log  zerolog.Logger

	mu       sync.Mutex
	proc     *hostProc
	failures int       // consecutive failed starts and crashes
	retryAt  time.Time // no start before this
	closed   bool

	reapers sync.WaitGroup // one per host process started
}

// Backoff between restarts of a failing plugin: none after the first
// failure, then from pluginBackoffMin doubling to pluginBackoffMax.
const (
	pluginBackoffMin = 250 * time.Millisecond
	pluginBackoffMax = 30 * time.Second
	// pluginStartTimeout bounds a start: the host's own bound on the
	// plugin's handshake (10 s) and a margin for the host's start.
	pluginStartTimeout = 12 * time.Second
	// pluginStopGrace bounds a graceful stop: the host gives the plugin
	// 3 s (go-plugin's own grace is 2 s) before it exits.
	pluginStopGrace = 4 * time.Second
)

func newPlugin(spec Spec, host string, env []string, log zerolog.Logger) *pluginRunner {
	return &pluginRunner{name: spec.Name, host: host, path: spec.Path, args: spec.Args, env: env,
		log: log.With().Str("interceptor", spec.Name).Logger()}
}

// start launches the plugin if it is not running.
func (p *pluginRunner) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := p.getLocked()
	return err
}

// getLocked returns a live host, starting one when none runs and the
// backoff has passed.
func (p *pluginRunner) getLocked() (*hostProc, error) {
	if p.closed {
		return nil, errors.New("gateway is shutting down")
	}
	if p.proc != nil {
		if !p.proc.isDead() {
			return p.proc, nil
		}
		p.log.Warn().Msg("interceptor plugin exited; restarting it")
		p.proc = nil
		p.failedLocked()
	}
	if wait := time.Until(p.retryAt); wait > 0 {
		return nil, fmt.Errorf("plugin is down; next restart in %s", wait.Round(time.Millisecond))
	}
	h, err := p.launch()
	if err != nil {
		p.failedLocked()
		return nil, fmt.Errorf("start plugin: %w", err)
	}
	p.proc = h
	return h, nil
}

// failedLocked notes a failure and sets when the next start may be.
func (p *pluginRunner) failedLocked() {
	p.failures++
	if p.failures <= 1 {
		p.retryAt = time.Time{}
		return
	}
	d := pluginBackoffMin << min(p.failures-2, 20)
	p.retryAt = time.Now().Add(min(d, pluginBackoffMax))
}

// drop forgets h as the running host (a later hook starts another) and
// counts a failure, unless that happened already.
func (p *pluginRunner) drop(h *hostProc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc == h {
		p.proc = nil
		p.failedLocked()
	}
}

// handle sends doc to the plugin. The timeout bounds the plugin's answer,
// not a (re)start, which pluginStartTimeout bounds: a call right after a
// crash is not failed for the time a restart takes. Only the timeout's own
// expiry counts as a hang (the plugin is killed); a caller that gives up
// first (cancelled, or a deadline of its own that is shorter) only cancels
// its call.
func (p *pluginRunner) handle(ctx context.Context, doc []byte, timeout time.Duration) ([]byte, error) {
	p.mu.Lock()
	h, err := p.getLocked()
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errTimeout)
	defer cancel()
	m, err := h.call(ctx, doc)
	switch {
	case err == nil:
		p.mu.Lock()
		if p.proc == h {
			p.failures = 0
		}
		p.mu.Unlock()
		if m.Error != "" {
			return nil, errors.New(m.Error) // the plugin's own error: it is alive
		}
		return m.Doc, nil
	case errors.Is(err, errHostDead):
		p.drop(h)
		return nil, fmt.Errorf("plugin failed: %w", err)
	case context.Cause(ctx) == errTimeout:
		// Hung: a plugin that does not answer is killed, so that it cannot
		// pile up stuck requests, and restarted at the next hook.
		p.log.Warn().Int64("timeout_ms", timeout.Round(time.Millisecond).Milliseconds()).Msg("interceptor plugin did not answer in time; killing it")
		p.drop(h)
		h.kill()
		return nil, errTimeout
	default:
		return nil, err // the caller gave up; the plugin is fine
	}
}

// close ends the plugin gracefully and waits until every host process this
// runner started is gone.
func (p *pluginRunner) close() {
	p.mu.Lock()
	p.closed = true
	h := p.proc
	p.proc = nil
	p.mu.Unlock()
	if h != nil {
		h.stop()
	}
	p.reapers.Wait()
}

// errHostDead is a host (and so its plugin) that exited or was killed.
var errHostDead = errors.New("plugin is gone")

// hostProc is one running plugin host. Calls are multiplexed on its stdin
// and stdout by id; its stderr (the plugin's and go-plugin's) goes to the
// gateway's log.
type hostProc struct {
	cmd   *exec.Cmd
	pid   int // also its process group
	stdin *os.File
	log   zerolog.Logger

	wmu  sync.Mutex // one line at a time on stdin
	next atomic.Uint64

	pmu     sync.Mutex
	pending map[uint64]chan pluginwire.Message

	ready   chan error    // the host's first word: nil (the plugin is up) or why not
	dead    chan struct{} // closed once the host's stdout ended
	deadErr error         // why, set before dead is closed

	kmu    sync.Mutex
	reaped bool          // the host was waited for: its pid (and group id) may be reused
	exited chan struct{} // closed once reaped
}

// launch starts a host for the plugin and waits for its plugin's handshake.
func (p *pluginRunner) launch() (*hostProc, error) {
	if p.host == "" {
		host, err := findHost()
		if err != nil {
			return nil, err
		}
		p.host = host
	}
	// go-plugin's plugin listens on a unix socket it makes in TMPDIR and
	// removes only when it exits by itself: a plugin killed at its timeout
	// left /tmp/pluginNNN behind. Its sockets go in a directory of the
	// gateway's instead, removed once the host is reaped.
	sockDir, err := os.MkdirTemp(tempDirOf(p.env), "mcp-gateway-plugin-")
	if err != nil {
		return nil, fmt.Errorf("plugin socket directory: %w", err)
	}
	cmd := exec.Command(p.host, append([]string{p.path}, p.args...)...)
	// Without the gateway's token; go-plugin's variable naming the socket
	// directory (the gateway does not link go-plugin to import its name).
	cmd.Env = append(slices.Clone(p.env), "PLUGIN_UNIX_SOCKET_DIR="+sockDir)
	// Its own process group, killed whole: the host, its plugin and the
	// plugin's children end together. Pdeathsig, as for servers: a
	// gateway that dies without cleaning up takes its plugins along.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	inR, inW, err := os.Pipe()
	if err != nil {
		os.RemoveAll(sockDir)
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		os.RemoveAll(sockDir)
		return nil, err
	}
	stderr := &lineLog{log: p.log, msg: "interceptor plugin"}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, stderr
	cmd.WaitDelay = time.Second
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		os.RemoveAll(sockDir)
		return nil, fmt.Errorf("run %s: %w", p.host, err)
	}
	h := &hostProc{cmd: cmd, pid: cmd.Process.Pid, stdin: inW, log: p.log,
		pending: make(map[uint64]chan pluginwire.Message),
		ready:   make(chan error, 1), dead: make(chan struct{}), exited: make(chan struct{})}
	p.reapers.Add(1)
	go func() {
		defer p.reapers.Done()
		h.reap() // the host's whole group is dead: no socket is in use
		os.RemoveAll(sockDir)
		stderr.flush()
	}()
	go h.read(outR)
	timer := time.NewTimer(pluginStartTimeout)
	defer timer.Stop()
	select {
	case err = <-h.ready:
	case <-timer.C:
		err = fmt.Errorf("no handshake within %s", pluginStartTimeout)
	}
	if err != nil {
		h.kill()
		return nil, err
	}
	return h, nil
}

// reap waits for the host to exit, kills what is left of its process group
// (the plugin, its children) while the group id is still the host's, and
// then reaps the host.
func (h *hostProc) reap() {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, h.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	h.kmu.Lock()
	_ = syscall.Kill(-h.pid, syscall.SIGKILL)
	h.reaped = true
	h.kmu.Unlock()
	_ = h.cmd.Wait()
	h.wmu.Lock()
	h.stdin.Close()
	h.wmu.Unlock()
	close(h.exited)
}

// kill ends the host's process group at once, unless the host was reaped
// already (its group id could then name another process's group).
func (h *hostProc) kill() {
	h.kmu.Lock()
	defer h.kmu.Unlock()
	if !h.reaped {
		_ = syscall.Kill(-h.pid, syscall.SIGKILL)
	}
}

// stop closes the host's stdin, which asks it to stop its plugin
// gracefully, and kills the group if that takes longer than
// pluginStopGrace. It waits until the host is reaped.
func (h *hostProc) stop() {
	h.wmu.Lock()
	h.stdin.Close()
	h.wmu.Unlock()
	select {
	case <-h.exited:
		return
	case <-time.After(pluginStopGrace):
	}
	h.kill()
	<-h.exited
}

func (h *hostProc) isDead() bool {
	select {
	case <-h.dead:
		return true
	default:
		return false
	}
}

// read dispatches the host's lines until its stdout ends, then fails the
// calls in flight.
func (h *hostProc) read(out *os.File) {
	defer out.Close()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), pluginwire.MaxLine)
	started := false
	err := errHostDead
	for sc.Scan() {
		var m pluginwire.Message
		if jerr := json.Unmarshal(sc.Bytes(), &m); jerr != nil {
			err = fmt.Errorf("%w: the plugin host wrote %.60q", errHostDead, sc.Bytes())
			h.kill()
			break
		}
		switch {
		case m.ID != 0:
			h.pmu.Lock()
			ch := h.pending[m.ID]
			delete(h.pending, m.ID)
			h.pmu.Unlock()
			if ch != nil {
				ch <- m
			}
		case m.Ready && !started:
			started = true
			h.ready <- nil
		case m.Error != "" && !started:
			started = true
			h.ready <- errors.New(m.Error)
		case m.Exited != "":
			h.log.Warn().Str("how", m.Exited).Msg("interceptor plugin exited")
			err = fmt.Errorf("%w: it %s", errHostDead, m.Exited)
		}
	}
	if serr := sc.Err(); serr != nil {
		err = fmt.Errorf("%w: reading the plugin host: %v", errHostDead, serr)
		h.kill()
	}
	if !started {
		h.ready <- errors.New("the plugin host exited before the plugin started (see the log)")
	}
	h.pmu.Lock()
	h.deadErr = err
	h.pending = nil
	h.pmu.Unlock()
	close(h.dead)
}

// call sends one Request document and waits for the plugin's answer, the
// host's death or the end of ctx (then the call is cancelled at the host).
func (h *hostProc) call(ctx context.Context, doc []byte) (pluginwire.Message, error) {
	id := h.next.Add(1)
	ch := make(chan pluginwire.Message, 1)
	h.pmu.Lock()
	if h.pending == nil {
		err := h.deadErr
		h.pmu.Unlock()
		return pluginwire.Message{}, err
	}
	h.pending[id] = ch
	h.pmu.Unlock()
	c := pluginwire.Call{ID: id, Doc: doc}
	if dl, ok := ctx.Deadline(); ok {
		c.TimeoutMs = max(1, time.Until(dl).Milliseconds())
	}
	if err := h.send(ctx, c); err != nil {
		h.forget(id)
		return pluginwire.Message{}, err
	}
	select {
	case m := <-ch:
		return m, nil
	case <-h.dead:
		select {
		case m := <-ch: // answered, then exited
			return m, nil
		default:
			return pluginwire.Message{}, h.deadErr
		}
	case <-ctx.Done():
		h.forget(id)
		if context.Cause(ctx) != errTimeout { // a hung plugin is killed instead
			cctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = h.send(cctx, pluginwire.Call{ID: id, Cancel: true})
			cancel()
		}
		return pluginwire.Message{}, ctx.Err()
	}
}

func (h *hostProc) forget(id uint64) {
	h.pmu.Lock()
	delete(h.pending, id)
	h.pmu.Unlock()
}

// send writes one line to the host. A host that does not read (stopped,
// or its pipe full) is killed at ctx's deadline: a line cut short would
// garble every later one.
func (h *hostProc) send(ctx context.Context, c pluginwire.Call) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	h.wmu.Lock()
	defer h.wmu.Unlock()
	dl, _ := ctx.Deadline()
	_ = h.stdin.SetWriteDeadline(dl)
	if _, err := h.stdin.Write(b); err != nil {
		h.kill()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			<-ctx.Done()
			return ctx.Err()
		}
		return fmt.Errorf("%w: writing to the plugin host: %v", errHostDead, err)
	}
	return nil
}

// lineLog logs a plugin's or exec command's stderr, one line per entry, as
// the supervisor logs a server's.
type lineLog struct {
	log zerolog.Logger
	msg string
	mu  sync.Mutex
	buf []byte
}

// flush logs a last line that had no newline.
func (w *lineLog) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if line := bytes.TrimSpace(w.buf); len(line) > 0 {
		w.log.Info().Str("stream", "stderr").Str("line", string(line)).Msg(w.msg)
	}
	w.buf = w.buf[:0]
}

func (w *lineLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		if line := bytes.TrimSpace(w.buf[:i]); len(line) > 0 {
			w.log.Info().Str("stream", "stderr").Str("line", string(line)).Msg(w.msg)
		}
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 64<<10 { // a line without end: log what came
		w.log.Info().Str("stream", "stderr").Str("line", string(w.buf)).Msg(w.msg)
		w.buf = w.buf[:0]
	}
	return len(p), nil
}

// tempDirOf is the temp directory env names (TMPDIR), or this process's.
func tempDirOf(env []string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "TMPDIR="); ok && v != "" {
			return v
		}
	}
	return os.TempDir()
}
