package intercept

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/rs/zerolog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcp-gateway/mcp-gateway/interceptor"
)

// pluginRunner supervises one go-plugin process. go-plugin starts and
// ends a plugin but never restarts it: a plugin found dead (or killed for
// not answering in time) is started again at the next hook, at once the
// first time and with exponential backoff while it keeps failing; meanwhile
// hooks fail fast with "down". Starts are serialized by mu, so a burst of
// calls after a crash starts it once.
type pluginRunner struct {
	name string
	path string
	args []string
	env  []string
	log  zerolog.Logger

	mu       sync.Mutex
	client   *plugin.Client
	pgid     int // the plugin's process group (its pid)
	rpc      *interceptor.Client
	failures int       // consecutive failed starts and crashes
	retryAt  time.Time // no start before this
	closed   bool
}

// Backoff between restarts of a failing plugin: none after the first
// failure, then from pluginBackoffMin doubling to pluginBackoffMax.
const (
	pluginBackoffMin   = 250 * time.Millisecond
	pluginBackoffMax   = 30 * time.Second
	pluginStartTimeout = 10 * time.Second
)

func newPlugin(spec Spec, env []string, log zerolog.Logger) *pluginRunner {
	return &pluginRunner{name: spec.Name, path: spec.Path, args: spec.Args, env: env,
		log: log.With().Str("interceptor", spec.Name).Logger()}
}

// start launches the plugin if it is not running. Callers outside mu.
func (p *pluginRunner) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := p.getLocked()
	return err
}

// getLocked returns a live client, starting the plugin when it is not
// running and its backoff has passed.
func (p *pluginRunner) getLocked() (*interceptor.Client, error) {
	if p.closed {
		return nil, errors.New("gateway is shutting down")
	}
	if p.client != nil && !p.client.Exited() {
		return p.rpc, nil
	}
	if p.client != nil { // died since the last hook
		p.log.Warn().Msg("interceptor plugin exited; restarting it")
		stop(p.client, p.pgid, false)
		p.client, p.rpc = nil, nil
		p.failedLocked()
	}
	if wait := time.Until(p.retryAt); wait > 0 {
		return nil, fmt.Errorf("plugin is down; next restart in %s", wait.Round(time.Millisecond))
	}
	cmd := exec.Command(p.path, p.args...)
	cmd.Env = p.env
	// Its own process group, killed whole: go-plugin's Kill waits until
	// the plugin's stdout closes, which a child of the plugin holding it
	// open would delay until that child exits. Pdeathsig, as for servers:
	// a gateway that dies without cleaning up takes its plugins along.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  interceptor.Handshake,
		Plugins:          plugin.PluginSet{interceptor.PluginName: &interceptor.GRPCPlugin{}},
		Cmd:              cmd,
		SkipHostEnv:      true, // cmd.Env, without the gateway's token
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		StartTimeout:     pluginStartTimeout,
		Logger:           hclogTo(p.log),
		Stderr:           &lineLog{log: p.log, msg: "interceptor plugin"},
		SyncStdout:       io.Discard,
		SyncStderr:       io.Discard,
	})
	rpc, err := dispense(client)
	pgid := 0
	if cmd.Process != nil {
		pgid = cmd.Process.Pid
	}
	if err != nil {
		stop(client, pgid, false)
		p.failedLocked()
		return nil, fmt.Errorf("start plugin: %w", err)
	}
	p.client, p.rpc, p.pgid = client, rpc, pgid
	return rpc, nil
}

func dispense(client *plugin.Client) (*interceptor.Client, error) {
	proto, err := client.Client()
	if err != nil {
		return nil, err
	}
	raw, err := proto.Dispense(interceptor.PluginName)
	if err != nil {
		return nil, err
	}
	rpc, ok := raw.(*interceptor.Client)
	if !ok {
		return nil, fmt.Errorf("dispensed %T", raw)
	}
	return rpc, nil
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

// handle sends doc to the plugin. The timeout bounds the plugin's answer,
// not a (re)start, which pluginStartTimeout bounds: a call right after a
// crash is not failed for the time a restart takes.
func (p *pluginRunner) handle(ctx context.Context, doc []byte, timeout time.Duration) ([]byte, error) {
	p.mu.Lock()
	rpc, err := p.getLocked()
	client := p.client
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := rpc.Handle(ctx, doc)
	if err == nil {
		p.mu.Lock()
		if p.client == client {
			p.failures = 0
		}
		p.mu.Unlock()
		return out, nil
	}
	if s, ok := status.FromError(err); ok && s.Code() == codes.Unknown {
		// The plugin's own error, returned by its method: it is alive.
		return nil, errors.New(s.Message())
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil, ctx.Err() // the agent gave up on the call; the plugin is fine
	}
	// Dead, or hung past the deadline: a plugin that does not answer is
	// killed, so that it cannot pile up stuck requests, and restarted at
	// the next hook.
	p.mu.Lock()
	if p.client == client && client != nil {
		stop(client, p.pgid, false)
		p.client, p.rpc = nil, nil
		p.failedLocked()
	}
	p.mu.Unlock()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, errTimeout
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, fmt.Errorf("plugin failed: %v", status.Convert(err).Message())
}

func (p *pluginRunner) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.client != nil {
		stop(p.client, p.pgid, true)
		p.client, p.rpc = nil, nil
	}
}

// stop ends a plugin and waits for it. Gracefully, go-plugin closes the
// connection and gives the plugin 2 s to exit before it kills it; the
// process group is killed if that has not ended within pluginStopGrace.
func stop(client *plugin.Client, pgid int, graceful bool) {
	kill := func() {
		if pgid > 0 {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}
	if !graceful {
		kill()
	} else {
		defer time.AfterFunc(pluginStopGrace, kill).Stop()
	}
	client.Kill()
}

// pluginStopGrace bounds a graceful stop (go-plugin's own grace is 2 s).
const pluginStopGrace = 3 * time.Second

// hclogTo writes go-plugin's own warnings and errors (a plugin that fails
// its handshake, panics) to the gateway's log.
func hclogTo(log zerolog.Logger) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       "go-plugin",
		Level:      hclog.Warn,
		Output:     log,
		JSONFormat: true,
	})
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
