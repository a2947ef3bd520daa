package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/auth"
	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/redact"
	"github.com/mcp-gateway/mcp-gateway/internal/supervisor"
)

// gateway is one running gateway: its servers, the merged MCP server and the
// HTTP endpoint. Its life is run: start, report ready, serve until the
// context ends, stop everything.
type gateway struct {
	set      *settings
	log      zerolog.Logger
	token    string
	agg      *aggregate.Gateway
	servers  []upstream
	ready    atomic.Bool
	stopping atomic.Bool
	trim     memTrimmer
	sessions *sessionLimit // set by handler
	fast     *fastPath     // set by handler
	lane     *lane         // set by handler
}

// upstream is one server as the gateway runs it: a stdio child under a
// supervisor.Server, or a streamable-HTTP server under a supervisor.Remote;
// any kind of upstream that can be run, waited for, called and reported on
// fits.
type upstream interface {
	aggregate.Upstream
	// Run keeps the upstream available until ctx is done.
	Run(ctx context.Context)
	// WaitStarted returns once the first start succeeded or failed.
	WaitStarted(ctx context.Context) error
	// Status is the upstream's line in /health.
	Status() supervisor.Status
}

// summary is what "ready" reports.
type summary struct {
	Listen  string        `json:"listen"`
	Servers int           `json:"servers"`
	Tools   int           `json:"tools"`
	Elapsed time.Duration `json:"elapsed"`
}

func (s summary) String() string {
	return fmt.Sprintf("mcp-gateway ready on %s (%s, %s) in %s", s.Listen,
		plural(s.Servers, "server"), plural(s.Tools, "tool"), s.Elapsed.Round(time.Millisecond))
}

func plural(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// newGateway builds the gateway for specs. Nothing runs until run.
func newGateway(set *settings, specs []catalog.ServerSpec, token string, log zerolog.Logger) *gateway {
	g := &gateway{set: set, log: log, token: token, trim: memTrimmer{quiet: time.Second}}
	audit := log
	if set.auditOut != nil {
		audit = log.Output(set.auditOut)
	}
	g.agg = aggregate.New(aggregate.Options{Logger: log, Version: version, Audit: auditLog(audit)})
	secrets := []string{token}
	for _, sp := range specs {
		secrets = append(secrets, sp.Secrets()...)
	}
	red := redact.New(secrets...)
	opts := supervisor.Options{
		Logger:       log,
		Env:          supervisor.EnvWithout(os.Environ(), auth.EnvVar),
		ServersDir:   set.ServersDir,
		CloneBaseURL: os.Getenv("MCP_GATEWAY_GITHUB_BASE_URL"),
		NewClient:    g.agg.NewClient,
		Intercept:    g.agg.Intercept,
		OnReady: func(ctx context.Context, s *supervisor.Server, cs *mcp.ClientSession, raw supervisor.RoundTrip) error {
			return g.agg.Sync(ctx, s.Name(), cs, raw)
		},
		Redact:        red.String,
		RestartPolicy: supervisor.RestartPolicy{MaxBackoff: set.MaxBackoff},
	}
	remoteOpts := supervisor.RemoteOptions{
		Logger:    log,
		NewClient: g.agg.NewClient,
		OnReady: func(ctx context.Context, r *supervisor.Remote, cs *mcp.ClientSession) error {
			return g.agg.Sync(ctx, r.Name(), cs, nil) // no raw requests to a remote
		},
		Redact:        red.String,
		RestartPolicy: supervisor.RestartPolicy{MaxBackoff: set.MaxBackoff},
	}
	for _, sp := range specs {
		var u upstream
		if sp.Kind == catalog.KindRemote {
			u = supervisor.NewRemote(sp, remoteOpts)
		} else {
			u = supervisor.New(sp, opts)
		}
		g.servers = append(g.servers, u)
		g.agg.Add(u)
	}
	return g
}

// run serves on ln until ctx is done. ready is called once, when every
// server has started and /mcp answers; if startup fails or times out, run
// stops everything it started and returns an error naming the servers.
// runServers runs every server until runCtx ends, each in a goroutine of wg.
func (g *gateway) runServers(runCtx context.Context, wg *sync.WaitGroup) {
	for _, s := range g.servers {
		wg.Go(func() { s.Run(runCtx) })
	}
}

// open waits until every server has started (or startup fails, which it
// logs), then opens the merged view and marks the gateway ready. It returns
// the number of tools.
func (g *gateway) open(ctx context.Context) (tools int, err error) {
	if err := g.waitStarted(ctx); err != nil {
		g.log.Error().Err(err).Msg("startup failed")
		return 0, err
	}
	g.agg.Open()
	g.set.applyProcs()
	g.ready.Store(true)
	_, tools = g.agg.ToolCount()
	return tools, nil
}

func (g *gateway) run(ctx context.Context, ln net.Listener, ready func(summary)) error {
	began := time.Now()
	srv := g.set.Limits.server(g.handler())
	srv.Handler = g.lane.takeover(srv.Handler)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(g.lane.listener(ln)) }()

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	g.runServers(runCtx, &wg)
	wg.Go(func() { g.trim.run(runCtx) })
	stop := func() {
		g.stopping.Store(true)
		g.shutdown(srv)
		cancel()
		wg.Wait()
		g.log.Info().Msg("gateway stopped")
	}

	tools, err := g.open(ctx)
	if err != nil {
		stop()
		return err
	}
	sum := summary{Listen: ln.Addr().String(), Servers: len(g.servers), Tools: tools, Elapsed: time.Since(began)}
	if strings.HasPrefix(g.set.Listen, ":") {
		sum.Listen = g.set.Listen
	}
	g.log.Info().Int("servers", sum.Servers).Int("tools", sum.Tools).Dur("elapsed", sum.Elapsed).Str("listen", sum.Listen).Msg("ready")
	if ready != nil {
		ready(sum)
	}
	select {
	case <-ctx.Done():
		g.log.Info().Msg("shutting down")
		stop()
		return nil
	case err := <-serveErr:
		stop()
		return fmt.Errorf("serve http: %w", err)
	}
}

// waitStarted waits for every server's first start, failing as soon as one
// fails, or when the startup timeout passes.
func (g *gateway) waitStarted(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, g.set.StartupTimeout)
	defer cancel()
	errs := make(chan error, len(g.servers))
	for _, s := range g.servers {
		go func() {
			err := s.WaitStarted(ctx)
			if err != nil && ctx.Err() == nil {
				err = fmt.Errorf("server %q failed to start: %w", s.Name(), err)
			}
			errs <- err
		}()
	}
	for range g.servers {
		if err := <-errs; err != nil {
			if ctx.Err() != nil {
				return g.timeoutError(ctx)
			}
			return err
		}
	}
	return nil
}

func (g *gateway) timeoutError(ctx context.Context) error {
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errors.New("startup interrupted")
	}
	var pending []string
	for _, s := range g.servers {
		st := s.Status()
		if st.State == supervisor.StateReady {
			continue
		}
		d := fmt.Sprintf("%s (%s)", st.Name, st.State)
		if st.LastError != "" {
			d = fmt.Sprintf("%s (%s: %s)", st.Name, st.State, st.LastError)
		}
		pending = append(pending, d)
	}
	return fmt.Errorf("startup timed out after %s; not ready: %s (pre-install servers in the template with 'mcp-gateway pull')",
		g.set.StartupTimeout, strings.Join(pending, ", "))
}

// shutdown stops accepting requests and ends every session. Open GET
// streams never go idle, so sessions are closed before the server waits.
func (g *gateway) shutdown(srv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), g.set.ShutdownGrace)
	defer cancel()
	done := make(chan struct{})
	go func() {
		var both sync.WaitGroup
		both.Go(func() { _ = srv.Shutdown(ctx) })
		both.Go(func() { g.lane.close(ctx) })
		both.Wait()
		close(done)
	}()
	// ServerSession.Close waits for the session's running handlers, and a
	// tool call runs until its server answers, which may be never until
	// the servers are stopped after this: close concurrently, and wait no
	// longer than the grace period.
	var closing sync.WaitGroup
	for ss := range g.agg.Server().Sessions() {
		closing.Go(func() { ss.Close() })
	}
	closed := make(chan struct{})
	go func() {
		closing.Wait()
		close(closed)
	}()
	select {
	case <-closed:
	case <-ctx.Done():
	}
	select {
	case <-done:
	case <-ctx.Done():
		srv.Close()
	}
}

func (g *gateway) handler() http.Handler {
	// No SessionTimeout: sessions are bounded by count (sessions.go), never
	// closed for idleness, so they survive a paused sandbox.
	g.sessions = newSessionLimit(g.set.MaxSessions, g.agg.Server(), g.log)
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.agg.Server() },
		&mcp.StreamableHTTPOptions{MaxRequestBodyBytes: g.set.Limits.withDefaults().MaxBodyBytes})
	fast := newFastPath(g)
	g.fast = fast
	g.sessions.closed = fast.endSession
	// The chain of /mcp, around core: the token, readiness, then bodies
	// read, bounded and checked as JSON-RPC (protocol.go), then session
	// accounting, for the fast path (fastpath.go) and the SDK alike.
	mcpChain := func(core http.HandlerFunc) http.Handler {
		guarded := rpcGuard{limits: g.set.Limits, next: g.sessions.wrap(core)}
		return auth.Bearer(g.token, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			g.trim.seen()
			if !g.ready.Load() || g.stopping.Load() {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"mcp-gateway is starting or stopping; retry shortly"}}` + "\n"))
				return
			}
			guarded.ServeHTTP(w, r)
		}))
	}
	// The lane (lane.go) runs the same chain with the fast path alone: what
	// the fast path declines goes back to net/http, and to the SDK.
	g.lane = newLane(mcpChain(func(w http.ResponseWriter, r *http.Request) { fast.serve(w, r) }), g.token, g.set.Limits, g.log)
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpChain(func(w http.ResponseWriter, r *http.Request) {
		if !fast.serve(w, r) {
			sdk.ServeHTTP(w, r)
		}
	}))
	mux.HandleFunc("GET /health", g.health)
	return mux
}

// auditLog writes one line per forwarded call: who called what, how long
// it took, how it ended and how many bytes moved; never the values.
func auditLog(log zerolog.Logger) func(aggregate.CallRecord) {
	audit := log.With().Str("event", "call").Logger()
	return func(r aggregate.CallRecord) {
		ev := audit.Info()
		if r.Outcome == "error" {
			ev = audit.Warn().Str("error", r.Error)
		}
		ev.Str("session", r.Session).Str("server", r.Server).Str("tool", r.Tool).
			Dur("duration", r.Duration).Str("outcome", r.Outcome).
			Int("bytes_in", r.BytesIn).Int("bytes_out", r.BytesOut).Msg("tool call")
	}
}

// health reports the gateway and each server without a token, so it says
// nothing about config values or envs: names, states, counts.
func (g *gateway) health(w http.ResponseWriter, r *http.Request) {
	type server struct {
		supervisor.Status
		Tools int `json:"tools"`
	}
	perServer, total := g.agg.ToolCount()
	body := struct {
		Status  string   `json:"status"`
		Servers []server `json:"servers"`
		Tools   int      `json:"tools"`
	}{Tools: total, Servers: []server{}}
	degraded := false
	for _, s := range g.servers {
		st := s.Status()
		if st.State != supervisor.StateReady {
			degraded = true
		}
		body.Servers = append(body.Servers, server{Status: st, Tools: perServer[st.Name]})
	}
	slices.SortFunc(body.Servers, func(a, b server) int { return strings.Compare(a.Name, b.Name) })
	code := http.StatusOK
	switch {
	case g.stopping.Load():
		body.Status, code = "stopping", http.StatusServiceUnavailable
	case !g.ready.Load():
		body.Status, code = "starting", http.StatusServiceUnavailable
	case degraded:
		body.Status = "degraded"
	default:
		body.Status = "ok"
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(body)
}
