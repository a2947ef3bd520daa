// Package supervisor runs upstream MCP servers: it prepares each one (clone,
// install), starts it as a child process speaking MCP over stdio, keeps a
// client session to it, and starts it again when it exits.
package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
)

// State is where a server is in its life.
type State string

const (
	StateStarting State = "starting" // preparing or starting for the first time
	StateReady    State = "ready"    // a live session is available
	// StateDegraded: a remote has a session, but its latest call or liveness
	// probe failed at the transport level (an HTTP error, no answer in time);
	// LastError says how. The next success makes it ready again.
	StateDegraded   State = "degraded"
	StateRestarting State = "restarting" // exited; the next start is scheduled
	StateFailed     State = "failed"     // crash loop or preparation failed; calls fail at once
	StateStopped    State = "stopped"    // Run returned
)

// ProtocolVersion is the MCP version of the 2025 era's initialize, which
// the gateway sends a server that does not speak the 2026 era (see era.go).
const ProtocolVersion = "2025-11-25"

// Options configure how servers are run. The zero value works.
type Options struct {
	// Logger receives lifecycle events and each server's stderr lines.
	Logger zerolog.Logger
	// Env is the base environment of every server process; each server's own
	// envs are added on top. If nil, the gateway's environment minus the
	// access token is used.
	Env []string
	// ServersDir holds GitHub clones. If empty, /opt/mcp-gateway/servers.
	ServersDir string
	// CloneBaseURL replaces https://github.com for clones (a mirror).
	CloneBaseURL string
	// ConnectTimeout bounds the MCP handshake of one start. Zero means 30s.
	ConnectTimeout time.Duration
	// NewClient returns the MCP client used to talk to the named server; the
	// aggregator uses it to receive that server's notifications. If nil, a
	// plain client is used.
	NewClient func(server string) *mcp.Client
	// OnReady is called after every successful start with the new session
	// and raw requests on its connection (as CallRaw, which waits for the
	// start this is part of), from the supervising goroutine, before the
	// session is handed to callers. The aggregator lists the server's tools
	// here.
	OnReady func(ctx context.Context, s *Server, cs *mcp.ClientSession, raw RoundTrip) error
	// Redact, if set, is applied to every line of server output before it is
	// logged or quoted in an error.
	Redact func(string) string
	// RestartPolicy: backoff between restarts and when a server is failed.
	RestartPolicy
	// Intercept, if set, sees each notification from a stdio server on the
	// transport's reader, before any later message is read, and reports
	// whether it consumed it. The aggregator relays progress and log
	// messages here so that they reach the agent before the call's result.
	Intercept func(server string, n *jsonrpc.Request) bool
	// ServeRequest, if set, is asked for each request a server sends the
	// gateway (sampling, elicitation, roots, tasks/*) and returns its handler, or
	// nil to leave the method to the SDK client (ping). Handlers get the
	// params and give the result as raw JSON, so that they are relayed as
	// the server and the agent wrote them.
	ServeRequest func(server, method string) RequestHandler
	// OfferCapabilities are client capabilities added, as raw JSON by
	// name, to the initialize request a server gets, beside those of
	// the client NewClient returns: what the Go SDK's types cannot say
	// (the client-side "tasks" capability).
	OfferCapabilities map[string]json.RawMessage
	// MaxMessageBytes bounds one message from a server; a larger response
	// fails its call and the server stays usable. Zero means
	// DefaultMaxMessageBytes.
	MaxMessageBytes int
	// StopWait is how long Stop waits after closing stdin, and again after
	// SIGTERM, before escalating. Zero means 2s.
	StopWait time.Duration
	// Groups, if set, is told each server's process group when it starts
	// and when it has ended, to end the groups left if the gateway dies
	// without stopping them (Pdeathsig reaches only the server's own
	// process, not the children it spawned). See package reaper.
	Groups Groups
}

// Groups guards process groups against the gateway's death.
type Groups interface {
	Track(pgid int) error
	Untrack(pgid int)
}

func (o *Options) defaults() {
	if o.Env == nil {
		o.Env = EnvWithout(os.Environ(), "GATEWAY_ACCESS_TOKEN")
	}
	if o.ServersDir == "" {
		o.ServersDir = "/opt/mcp-gateway/servers"
	}
	clientDefaults(&o.ConnectTimeout, &o.NewClient, &o.Redact)
	o.RestartPolicy.defaults()
	if o.StopWait == 0 {
		o.StopWait = 2 * time.Second
	}
}

// Server supervises one upstream MCP server. Create it with New, run it with
// Run, and reach it with Do. All methods are safe for concurrent use.
type Server struct {
	spec catalog.ServerSpec
	opts Options
	log  zerolog.Logger
	// extraEnv holds the VAR=value words in front of a runCmd started
	// without a shell (directCommand); set by prepare.
	extraEnv []string

	lifecycle           // mu guards cur and pid too
	cur       *instance // the live instance, when ready
	pid       int
	initRaw   json.RawMessage // the latest start's initialize result, as sent
	era       eraMemo         // the protocol version a start opens with
}

// instance is one start of a server: its process and the session over it.
type instance struct {
	proc *process
	cs   *mcp.ClientSession
	conn *lineConn // for raw calls, beside cs
	// ended is closed when the session's connection has ended, which is
	// usually the process exiting, but can also be a server that closed its
	// stdout and lives on: an instance that can no longer answer.
	ended chan struct{}
	// served is set once the instance has answered a call: when it ends,
	// however soon, it was not a crash on start.
	served atomic.Bool
}

func (in *instance) broken() bool {
	select {
	case <-in.ended:
		return true
	default:
		return false
	}
}

// New returns a supervisor for spec. Nothing runs until Run.
func New(spec catalog.ServerSpec, opts Options) *Server {
	opts.defaults()
	s := &Server{
		spec: spec,
		opts: opts,
		log:  opts.Logger.With().Str("server", spec.Name).Logger(),
	}
	s.era.pin(spec.Protocol)
	s.init()
	return s
}

// Name is the server's key in the mcp config.
func (s *Server) Name() string { return s.spec.Name }

// Spec returns the spec the server was created from.
func (s *Server) Spec() catalog.ServerSpec { return s.spec }

// InitializeResultRaw is the server's latest initialize result as it sent
// it, with what the SDK's types leave out (the tasks capability); it is set
// before OnReady runs.
func (s *Server) InitializeResultRaw() json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.initRaw
}

// Status is a snapshot of a server for /health. It never holds envs or
// config values: /health is served without a token.
type Status struct {
	Name      string `json:"name"`
	State     State  `json:"state"`
	PID       int    `json:"pid,omitempty"`
	Restarts  int    `json:"restarts"`
	LastExit  string `json:"lastExit,omitempty"`
	LastError string `json:"lastError,omitempty"`
}

// Status returns the server's current state.
func (s *Server) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statusLocked(s.spec.Name, s.pid)
}

// Run prepares the server, starts it and keeps it running until ctx is done,
// restarting it with backoff whenever it exits. It returns once the server's
// process has been stopped and reaped.
func (s *Server) Run(ctx context.Context) {
	defer func() {
		s.mu.Lock()
		s.cur, s.pid = nil, 0
		s.setStateLocked(StateStopped)
		s.mu.Unlock()
		s.markStarted(errors.New("stopped"))
	}()
	argv, dir, err := s.prepare(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		s.fail(err.Error())
		s.markStarted(err)
		return
	}
	failures := 0
	for {
		begin := time.Now()
		inst, err := s.start(ctx, argv, dir)
		if err == nil {
			s.markStarted(nil)
			select {
			case <-inst.proc.done:
			case <-inst.ended:
				// Usually the process is exiting and its exit status follows
				// in a moment. If it lives on without a session (it closed
				// its stdout), it would only keep failing calls: end it and
				// start a fresh one.
				select {
				case <-inst.proc.done:
				case <-time.After(time.Second):
					s.log.Warn().Msg("session with the server ended but its process lives on; stopping it")
					s.stopProc(inst.proc)
				}
			case <-ctx.Done():
				s.stop(inst)
				return
			}
			inst.cs.Close()
			err = s.exitError(inst.proc)
			s.log.Warn().Str("exit", describeExit(inst.proc.exitErr)).Int64("uptime_ms", time.Since(begin).Round(time.Millisecond).Milliseconds()).Msg("server exited; restarting")
		} else {
			if ctx.Err() != nil {
				return
			}
			s.log.Warn().Err(err).Msg("server failed to start")
			s.markStarted(err)
		}
		served := inst != nil && inst.served.Load()
		if !s.lost(ctx, &s.opts.RestartPolicy, &failures, begin, served, err, func() { s.cur, s.pid = nil, 0 }) {
			return
		}
	}
}

func (s *Server) fail(msg string) {
	s.mu.Lock()
	s.lastErr = firstLine(msg)
	s.setStateLocked(StateFailed)
	s.mu.Unlock()
}

// prepare resolves what to run and where: it clones GitHub servers and runs
// install commands.
func (s *Server) prepare(ctx context.Context) (argv []string, dir string, err error) {
	dir = s.spec.Dir
	if s.spec.Kind == catalog.KindGitHub {
		dir, err = Clone(ctx, s.spec.Owner, s.spec.Repo, CloneOptions{BaseURL: s.opts.CloneBaseURL, Root: s.opts.ServersDir})
		if err != nil {
			return nil, "", err
		}
	}
	if s.spec.Install != "" {
		out := &lineWriter{line: func(l string) { s.log.Info().Str("stream", "install").Msg(s.opts.Redact(l)) }}
		tail := newLineRing(10, 512)
		w := &lineWriter{line: func(l string) { tail.add(s.opts.Redact(l)); out.line(l) }}
		installDir := dir
		if installDir == "" {
			installDir, _ = os.Getwd()
		}
		ran, err := Install(ctx, installDir, s.spec.Install, s.env(), w, w)
		w.Flush()
		if err != nil {
			return nil, "", withTail(fmt.Errorf("install: %w", err), tail.last(5))
		}
		if ran {
			s.log.Info().Msg("install command finished")
		}
	}
	if s.spec.Shell != "" {
		if words, assigns, ok := directCommand(s.spec.Shell); ok {
			if path, ok := findProgram(words[0], dir, append(s.env(), assigns...)); ok {
				s.extraEnv = assigns
				return append([]string{path}, words[1:]...), dir, nil
			}
		}
		return []string{"/bin/sh", "-c", shellLine(s.spec.Shell)}, dir, nil
	}
	if len(s.spec.Command) == 0 {
		return nil, "", errors.New("no command to run")
	}
	return s.spec.Command, dir, nil
}

func (s *Server) env() []string {
	env := make([]string, 0, len(s.opts.Env)+len(s.spec.Env))
	for _, kv := range s.opts.Env {
		name, _, _ := strings.Cut(kv, "=")
		if _, own := s.spec.Env[name]; !own {
			env = append(env, kv)
		}
	}
	for k, v := range s.spec.Env {
		env = append(env, k+"="+v)
	}
	return append(env, s.extraEnv...)
}

// errLegacyRefused marks a start that ended because the server refused the
// 2025-era initialize for the 2026 era.
var errLegacyRefused = errors.New("the server refused the 2025-11-25 initialize")

// errProbeUnanswered marks a start in the 2026 era that ended with the
// server gone without a word: it exited on server/discover.
var errProbeUnanswered = errors.New("the server exited on server/discover without answering")

// start starts one instance and completes the MCP handshake with it, in the
// era the server speaks (see era.go): the probe first, until the era is
// known; a server that exits on the probe, or refuses the 2025 era, is
// started again at once in the other era, which its later restarts keep.
func (s *Server) start(ctx context.Context, argv []string, dir string) (*instance, error) {
	version := s.era.get()
	inst, err := s.startAs(ctx, argv, dir, version)
	switch {
	case err == nil:
		return inst, nil
	case version < Protocol2026 && errors.Is(err, errLegacyRefused):
		s.log.Info().Msg("server refused the 2025-11-25 initialize for 2026-07-28; starting it again in the 2026 era")
		s.era.set(Protocol2026)
		return s.startAs(ctx, argv, dir, Protocol2026)
	case version >= Protocol2026 && errors.Is(err, errProbeUnanswered):
		s.log.Info().Err(err).Msg("server exited on server/discover; starting it again with the 2025-11-25 initialize")
		s.era.set(ProtocolVersion)
		return s.startAs(ctx, argv, dir, ProtocolVersion)
	}
	return inst, err
}

// startAs is start with the version the handshake opens with.
func (s *Server) startAs(ctx context.Context, argv []string, dir, version string) (*instance, error) {
	proc, err := startProcess(argv, dir, s.env(), s.opts.Groups, s.opts.Redact, func(line string) {
		s.log.Info().Str("stream", "stderr").Msg(line)
	})
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	s.mu.Lock()
	s.pid = proc.pid()
	s.mu.Unlock()
	s.log.Info().Int("pid", proc.pid()).Msg("server process started")

	var intercept func(*jsonrpc.Request) bool
	if s.opts.Intercept != nil {
		intercept = func(n *jsonrpc.Request) bool { return s.opts.Intercept(s.spec.Name, n) }
	}
	var serve func(string) RequestHandler
	if s.opts.ServeRequest != nil {
		serve = func(method string) RequestHandler { return s.opts.ServeRequest(s.spec.Name, method) }
	}
	t := &lineTransport{r: proc.stdout, w: proc.stdin, maxBytes: s.opts.MaxMessageBytes, intercept: intercept, serve: serve, offer: s.opts.OfferCapabilities, noise: func(line []byte) {
		s.log.Warn().Str("stream", "stdout-noise").Msg(s.opts.Redact(string(line)))
	}}
	cctx, cancel := context.WithTimeout(ctx, s.opts.ConnectTimeout)
	defer cancel()
	// Stop waiting for the handshake as soon as the process dies.
	go func() {
		select {
		case <-proc.done:
			cancel()
		case <-cctx.Done():
		}
	}()
	cs, err := s.opts.NewClient(s.spec.Name).Connect(cctx, t, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		if refusesLegacy(err) && version < Protocol2026 {
			proc.stop(0, s.opts.StopWait)
			return nil, fmt.Errorf("%w: %w", errLegacyRefused, err)
		}
		// Whether it died by itself is known only before it is stopped: a
		// server stopped for its silence would read "killed by signal 15".
		// (The goroutine above cancels cctx when the process dies: only
		// the limit leaves it DeadlineExceeded.)
		silent := ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) && !proc.exited()
		// It never answered: nothing to close gracefully, and a start that
		// timed out should end when its limit says, not StopWait later.
		proc.stop(0, s.opts.StopWait)
		s.mu.Lock()
		s.lastExit = describeExit(proc.exitErr)
		s.mu.Unlock()
		probing := version >= Protocol2026 && (t.conn == nil || !t.conn.heard.Load())
		if silent {
			if probing {
				// It may ignore an unknown first message: its restart
				// opens with initialize (era.go).
				s.era.set(ProtocolVersion)
			}
			return nil, withTail(fmt.Errorf("sent no initialize answer within %s and was stopped (is it an MCP stdio server?)", s.opts.ConnectTimeout), proc.tail.last(5))
		}
		if proc.exitErr != nil || proc.exited() {
			if probing && ctx.Err() == nil {
				return nil, fmt.Errorf("%w: %w", errProbeUnanswered, s.exitError(proc))
			}
			return nil, s.exitError(proc)
		}
		return nil, withTail(fmt.Errorf("mcp handshake: %w", err), proc.tail.last(5))
	}
	inst := &instance{proc: proc, cs: cs, conn: t.conn, ended: make(chan struct{})}
	initRaw := t.conn.initializeResult()
	if is2026(cs) {
		t.conn.era2026.Store(true)
		initRaw = discoveredRaw(cs)
	} else {
		s.era.set(ProtocolVersion) // a 2025 server (the SDK fell back): so shall its restarts be
	}
	s.mu.Lock()
	s.initRaw = initRaw
	s.mu.Unlock()
	go func() {
		_ = cs.Wait()
		close(inst.ended)
	}()
	if s.opts.OnReady != nil {
		if err := s.opts.OnReady(cctx, s, cs, t.conn.roundTrip); err != nil {
			s.stopProc(proc)
			cs.Close()
			return nil, withTail(err, proc.tail.last(5))
		}
	}
	s.mu.Lock()
	s.cur = inst
	s.lastErr = ""
	s.setStateLocked(StateReady)
	s.mu.Unlock()
	s.log.Info().Str("protocol", cs.InitializeResult().ProtocolVersion).Msg("server ready")
	return inst, nil
}

// stop ends an instance: the process first, because ClientSession.Close
// waits for the calls in flight, and a call to a server that is busy (or
// hung) ends only when its process does.
func (s *Server) stop(inst *instance) {
	s.stopProc(inst.proc)
	inst.cs.Close()
}

func (s *Server) stopProc(p *process) {
	p.stop(s.opts.StopWait, s.opts.StopWait)
	s.mu.Lock()
	s.lastExit = describeExit(p.exitErr)
	s.mu.Unlock()
}

// exitError describes an instance's exit for callers, quoting its stderr.
// It waits for the process to be reaped so that the status is known.
func (s *Server) exitError(p *process) error {
	<-p.done
	status := describeExit(p.exitErr)
	s.mu.Lock()
	s.lastExit = status
	s.mu.Unlock()
	return withTail(fmt.Errorf("exited (%s)", status), p.tail.last(5))
}

func withTail(err error, tail []string) error {
	if len(tail) == 0 {
		return err
	}
	return fmt.Errorf("%w; stderr: %s", err, strings.Join(tail, " | "))
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// ErrUnavailable is wrapped by errors for calls that could not reach a
// server: it is failed, stopped, or did not come back in time.
var ErrUnavailable = errors.New("server unavailable")

// session returns the live instance, waiting while the server starts or
// restarts. A failed server fails at once: in a crash loop, waiting would
// only turn a clear error into a timeout.
func (s *Server) session(ctx context.Context) (*instance, error) {
	var inst *instance
	err := s.await(ctx, func(st State) bool {
		// The process may have died a moment before Run noticed: wait for
		// the restart rather than hand out a session that can only fail.
		if st == StateReady && s.cur != nil && !s.cur.proc.exited() && !s.cur.broken() {
			inst = s.cur
			return true
		}
		return false
	})
	return inst, err
}

// CallError is the error of a call that a server could not answer. The
// message names the server; it reaches agents, so it says what happened in
// words rather than "EOF".
type CallError struct {
	Server string
	Err    error
}

func (e *CallError) Error() string { return fmt.Sprintf("server %q: %v", e.Server, e.Err) }
func (e *CallError) Unwrap() error { return e.Err }

// Do runs fn with a live session to the server, waiting (within ctx) if the
// server is starting or restarting. An error returned by the server itself
// (a JSON-RPC error) is passed through as is; when the server died during the
// call, the error says how it exited and quotes its stderr.
func (s *Server) Do(ctx context.Context, fn func(cs *mcp.ClientSession) error) error {
	inst, err := s.session(ctx)
	if err != nil {
		return &CallError{Server: s.spec.Name, Err: err}
	}
	return s.callError(ctx, inst, fn(inst.cs))
}

// CallRaw sends one request with raw JSON params and returns the server's
// raw result, waiting like Do while the server starts or restarts; errors
// are those of Do. The bytes pass through undecoded (see rawCalls).
func (s *Server) CallRaw(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	inst, err := s.session(ctx)
	if err != nil {
		return nil, &CallError{Server: s.spec.Name, Err: err}
	}
	if inst.conn.era2026.Load() {
		if res, ok, err := subscribe2026(ctx, inst.cs, method, params); ok {
			return res, s.callError(ctx, inst, err)
		}
	}
	res, err := inst.conn.roundTrip(ctx, method, params)
	return res, s.callError(ctx, inst, err)
}

// NotifyRaw sends a notification with raw JSON params to the server,
// waiting like Do while it starts or restarts (the task status an agent
// reports, which the SDK's client cannot send).
func (s *Server) NotifyRaw(ctx context.Context, method string, params json.RawMessage) error {
	inst, err := s.session(ctx)
	if err != nil {
		return &CallError{Server: s.spec.Name, Err: err}
	}
	return s.callError(ctx, inst, inst.conn.writeNotification(method, params))
}

// callError turns the error of a call on inst into what callers see.
func (s *Server) callError(ctx context.Context, inst *instance, err error) error {
	if err == nil {
		inst.served.Store(true)
		return nil
	}
	var wire *jsonrpc.Error
	if errors.As(err, &wire) {
		inst.served.Store(true) // an answer, if not the one hoped for
		return err
	}
	if ctx.Err() != nil {
		return err
	}
	// The session failed. If the process is exiting, say how it ended; the
	// pipe closes a moment before the exit status is known.
	select {
	case <-inst.proc.done:
		return &CallError{Server: s.spec.Name, Err: fmt.Errorf("server %s during the call", s.exitError(inst.proc))}
	case <-time.After(time.Second):
	}
	return &CallError{Server: s.spec.Name, Err: err}
}
