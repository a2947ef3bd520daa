package gateway

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/auth"
	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/endpoint"
	"github.com/mcp-gateway/mcp-gateway/internal/intercept"
	"github.com/mcp-gateway/mcp-gateway/internal/reaper"
	"github.com/mcp-gateway/mcp-gateway/internal/redact"
	"github.com/mcp-gateway/mcp-gateway/internal/supervisor"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// Defaults for Config's zero values.
const (
	// DefaultStartupTimeout: the SDKs give the launch command 60 s; 55
	// leaves time to report and clean up.
	DefaultStartupTimeout = 55 * time.Second
	// DefaultShutdownGrace is how long Shutdown waits for sessions.
	DefaultShutdownGrace = 5 * time.Second
)

// Config is what a gateway runs with: the servers come as resolved specs
// (catalog.Resolve), never as JSON or flags. The zero value serves nothing
// over HTTP and logs nothing; each field says what its zero value means.
type Config struct {
	// Listen is the TCP address /mcp and /health are served on, e.g.
	// ":50005" or "127.0.0.1:0". Empty: no HTTP endpoint; the merged
	// server is served with ServeStdio instead.
	Listen string
	// Listener, if set, is served instead of binding Listen (which then
	// only names the address in the summary): a caller that must not
	// write its files for a port it cannot have binds first. Start closes
	// it when the start fails.
	Listener net.Listener
	// Token is the bearer token /mcp requires. Empty refuses every
	// request (auth.Bearer fails closed).
	Token string
	// TokenFile is where a client on the machine can read the token; a
	// 401 names it. Empty: the 401 names no file.
	TokenFile string
	// Logger receives the gateway's log. Zero: nothing is logged.
	Logger zerolog.Logger
	// Audit, if set, receives the per-call audit lines instead of
	// Logger's writer (the daemon batches them, see logfile.Writer).
	Audit io.Writer
	// Version is the version announced in serverInfo.
	Version string
	// Env is the environment servers and interceptor plugins start with.
	// Nil: this process's environment. auth.EnvVar (the token) is always
	// removed from it.
	Env []string
	// ServersDir is where GitHub servers are cloned (supervisor.Options).
	ServersDir string
	// CloneBaseURL replaces https://github.com for clones (tests).
	// Empty: GitHub.
	CloneBaseURL string
	// Interceptors is the loaded interceptor config. Nil: no interceptors
	// beyond the servers' own tool filters.
	Interceptors *intercept.Config
	// StartupTimeout bounds Start's wait for the servers. Zero:
	// DefaultStartupTimeout.
	StartupTimeout time.Duration
	// ShutdownGrace bounds how long Shutdown waits for HTTP sessions, and
	// stdio calls in flight, to end. Zero: DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// MaxBackoff is the longest wait between restarts of a crashing
	// server. Zero: supervisor.RestartPolicy's default.
	MaxBackoff time.Duration
	// ProbeInterval is how often each remote's session is pinged, so that
	// /health shows a remote that stopped answering (zero: the default).
	ProbeInterval time.Duration
	// CallTimeout ends a request forwarded to a server that has sent
	// neither its answer nor progress for this long, with an error naming
	// the server (aggregate.Options.CallTimeout). Zero: no limit.
	CallTimeout time.Duration
	// MaxSessions bounds agent sessions (endpoint.Options). Zero:
	// endpoint.DefaultMaxSessions.
	MaxSessions int
	// Limits bound HTTP requests and connections. Zero: the defaults.
	Limits endpoint.Limits
	// AllowedOrigins are the browser origins allowed besides the
	// endpoint's own (endpoint.Options). Nil: none.
	AllowedOrigins []string
	// ToolsView is the tool view of agents that ask for none
	// (aggregate.Options). Empty: every tool.
	ToolsView aggregate.ToolsView
	// Procs bounds the CPUs the gateway's Go code runs on once every
	// server has started (runtime.GOMAXPROCS): the start is a burst of
	// process starts and handshakes, and with one CPU each start of a
	// process stopped the gateway's other work until the child had
	// exec'd. Zero: the Go runtime's bound is left as it is.
	Procs int
	// Progress, if set, is told of each server's start, readiness or
	// failure while the gateway starts, from several goroutines at once.
	Progress func(Progress)
	// Telemetry, if set, traces and measures the gateway (its owner shuts
	// it down, after the gateway). Nil: off.
	Telemetry *telemetry.Telemetry
	// MetricsListen, if set, also serves GET /metrics there without the
	// token, for a scraper inside the sandbox's network. Empty: none.
	MetricsListen string
}

// Gateway is one running gateway: its servers, the merged MCP server and
// the HTTP endpoint. Its life is New, Start, serve (over HTTP by itself,
// or ServeStdio), then Shutdown; Wait returns once it has stopped.
type Gateway struct {
	cfg     Config
	log     zerolog.Logger
	agg     *aggregate.Gateway
	icpt    *intercept.Engine
	servers []upstream
	// installs names the servers whose first start may download their
	// package (catalog entries): only they are helped by 'mcp-gateway pull'.
	installs map[string]bool
	trim     memTrimmer
	groups   *reaper.Reaper     // ends the servers' process groups if the gateway dies
	ep       *endpoint.Endpoint // set by Start; nil without Listen
	addr     net.Addr           // set by Start; nil without Listen
	sum      Summary            // set by Start once ready
	metrics  *http.Server       // set by Start with Config.MetricsListen

	// Set by Start; stop ends what Start started.
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
	stopped  chan struct{} // closed once everything has stopped
	waitErr  error         // why the gateway stopped by itself; read after stopped
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

// New builds the gateway for specs. Nothing runs until Start.
func New(specs []catalog.ServerSpec, cfg Config) *Gateway {
	if cfg.StartupTimeout == 0 {
		cfg.StartupTimeout = DefaultStartupTimeout
	}
	if cfg.ShutdownGrace == 0 {
		cfg.ShutdownGrace = DefaultShutdownGrace
	}
	env := cfg.Env
	if env == nil {
		env = os.Environ()
	}
	env = supervisor.EnvWithout(env, auth.EnvVar)
	log := cfg.Logger
	g := &Gateway{cfg: cfg, log: log, trim: memTrimmer{quiet: time.Second}, groups: reaper.New(), stopped: make(chan struct{})}
	audit := log
	if cfg.Audit != nil {
		audit = log.Output(cfg.Audit)
	}
	g.icpt = intercept.New(cfg.Interceptors, specs, intercept.Options{Logger: log, Environ: env})
	g.agg = aggregate.New(aggregate.Options{Logger: log, Version: cfg.Version, Audit: endpoint.AuditLog(audit), Interceptors: g.icpt,
		ToolsView: g.cfg.ToolsView, Telemetry: cfg.Telemetry,
		CallTimeout: cfg.CallTimeout, TaskKey: taskKey(cfg.Token)})
	if err := cfg.Telemetry.Observe(g.sessionCount, g.serverStates); err != nil {
		log.Warn().Err(err).Msg("telemetry: the gauges of sessions and servers are off")
	}
	secrets := []string{cfg.Token}
	for _, sp := range specs {
		secrets = append(secrets, sp.Secrets()...)
	}
	red := redact.New(secrets...)
	opts := supervisor.Options{
		Logger:            log,
		Env:               env,
		ServersDir:        cfg.ServersDir,
		CloneBaseURL:      cfg.CloneBaseURL,
		NewClient:         g.agg.NewClient,
		Intercept:         g.agg.Intercept,
		ServeRequest:      g.agg.ServeRequest,
		OfferCapabilities: aggregate.UpstreamOffer(),
		OnReady: func(ctx context.Context, s *supervisor.Server, cs *mcp.ClientSession, raw supervisor.RoundTrip) error {
			return g.agg.Sync(ctx, s.Name(), cs, raw)
		},
		Redact:        red.String,
		RestartPolicy: supervisor.RestartPolicy{MaxBackoff: cfg.MaxBackoff},
		Groups:        loggedGroups{g.groups, log},
	}
	remoteOpts := supervisor.RemoteOptions{
		Logger:            log,
		NewClient:         g.agg.NewClient,
		Intercept:         g.agg.Intercept,
		ServeRequest:      g.agg.ServeRequest,
		OfferCapabilities: aggregate.UpstreamOffer(),
		OnReady: func(ctx context.Context, r *supervisor.Remote, cs *mcp.ClientSession, raw supervisor.RoundTrip) error {
			return g.agg.Sync(ctx, r.Name(), cs, raw)
		},
		Redact:        red.String,
		RestartPolicy: supervisor.RestartPolicy{MaxBackoff: cfg.MaxBackoff},
		ProbeInterval: cfg.ProbeInterval,
	}
	g.installs = map[string]bool{}
	for _, sp := range specs {
		if sp.Kind == catalog.KindCatalog {
			g.installs[sp.Name] = true
		}
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

// runServers runs every server until runCtx ends, each in a goroutine of wg.
func (g *Gateway) runServers(runCtx context.Context, wg *sync.WaitGroup) {
	for _, s := range g.servers {
		wg.Go(func() { s.Run(runCtx) })
	}
}

// open waits until every server has started (or startup fails, which it
// logs), then opens the merged view and marks the gateway ready. It returns
// the number of tools.
func (g *Gateway) open(ctx context.Context) (tools int, err error) {
	if err := g.waitStarted(ctx); err != nil {
		g.log.Error().Err(err).Msg("startup failed")
		return 0, err
	}
	g.agg.Open()
	if g.cfg.Procs > 0 {
		runtime.GOMAXPROCS(g.cfg.Procs)
	}
	if g.ep != nil {
		g.ep.SetReady()
	}
	_, tools = g.agg.ToolCount()
	return tools, nil
}

// Start listens (with Config.Listen), starts the interceptor plugins and
// every server, and returns once every server has started and /mcp
// answers, or once the start failed. ctx bounds the start only: cancelling
// it interrupts a start, never a running gateway (Shutdown stops that).
// If a server fails to start, or the start times out, Start stops
// everything it started, reaps every child, closes the listener and
// returns an error naming the servers. Call it once.
func (g *Gateway) Start(ctx context.Context) error {
	began := time.Now()
	select {
	case <-g.stopped:
		if g.cfg.Listener != nil {
			g.cfg.Listener.Close()
		}
		return errors.New("start: the gateway was shut down")
	default:
	}
	ln := g.cfg.Listener
	if ln == nil && g.cfg.Listen != "" {
		var err error
		if ln, err = net.Listen("tcp", g.cfg.Listen); err != nil {
			g.stop(nil)
			return fmt.Errorf("listen: %w", err)
		}
	}
	if ln != nil {
		g.addr = ln.Addr()
	}
	if err := g.startInterceptors(ctx); err != nil {
		if ln != nil {
			ln.Close()
		}
		g.stop(nil)
		return err
	}
	serveErr := make(chan error, 1)
	if ln != nil {
		g.ep = endpoint.New(g.agg, g.cfg.Token, endpoint.Options{
			Logger:         g.log,
			Limits:         g.cfg.Limits,
			MaxSessions:    g.cfg.MaxSessions,
			Servers:        g.Servers,
			OnRequest:      g.trim.seen,
			TokenFile:      g.cfg.TokenFile,
			AllowedOrigins: g.cfg.AllowedOrigins,
			Telemetry:      g.cfg.Telemetry,
		})
		go func() { serveErr <- g.ep.Serve(ln) }()
		if err := g.serveMetrics(); err != nil {
			g.stop(nil)
			return err
		}
	}

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	g.cancel = cancel
	g.runServers(runCtx, &g.wg)
	if g.ep != nil {
		g.wg.Go(func() { g.trim.run(runCtx) })
	}

	tools, err := g.open(ctx)
	if err != nil {
		g.stop(nil)
		return err
	}
	g.sum = Summary{Servers: len(g.servers), Tools: tools, Elapsed: time.Since(began)}
	ready := g.log.Info().Int("servers", g.sum.Servers).Int("tools", g.sum.Tools).Int64("elapsed_ms", g.sum.Elapsed.Round(time.Millisecond).Milliseconds())
	if g.ep == nil {
		ready.Str("transport", "stdio").Msg("ready")
		return nil
	}
	g.sum.Listen = ln.Addr().String()
	if strings.HasPrefix(g.cfg.Listen, ":") {
		g.sum.Listen = g.cfg.Listen
	}
	ready.Str("listen", g.sum.Listen).Msg("ready")
	// Serve ends with http.ErrServerClosed when Shutdown stops it; any
	// other end stops the gateway, and Wait reports why.
	go func() {
		if err := <-serveErr; !errors.Is(err, http.ErrServerClosed) {
			g.stop(fmt.Errorf("serve http: %w", err))
		}
	}()
	return nil
}

// Summary is what the gateway became ready with; zero before Start
// succeeds.
func (g *Gateway) Summary() Summary { return g.sum }

// Addr is the address /mcp is served on, once Start has listened; nil
// without Config.Listen. With port 0 in Listen it tells the port.
func (g *Gateway) Addr() net.Addr { return g.addr }

// Shutdown stops the gateway: /mcp answers 503, sessions end within
// Config.ShutdownGrace (or until ctx is done, if sooner), then every server
// is stopped and its process reaped, and the interceptor plugins end. It
// returns once all of that is done. Shutdown is idempotent and safe to call
// concurrently with Wait, not with Start. ServeStdio shuts down by itself
// when its input ends or its ctx is done.
func (g *Gateway) Shutdown(ctx context.Context) {
	g.stopCtx(ctx, nil)
}

// Wait returns once the gateway has stopped: after Shutdown, after a
// failed Start, or after the HTTP endpoint failed (the gateway then stops
// itself, and Wait returns the endpoint's error; otherwise nil).
func (g *Gateway) Wait() error {
	<-g.stopped
	return g.waitErr
}

// stop ends what Start started, once; err is what Wait returns.
func (g *Gateway) stop(err error) { g.stopCtx(context.Background(), err) }

func (g *Gateway) stopCtx(ctx context.Context, err error) {
	g.stopOnce.Do(func() {
		g.waitErr = err
		if g.metrics != nil {
			g.metrics.Close()
		}
		if g.ep != nil {
			shutCtx, shutCancel := context.WithTimeout(ctx, g.cfg.ShutdownGrace)
			g.ep.Shutdown(shutCtx)
			shutCancel()
		}
		ran := g.cancel != nil // servers ran
		if ran {
			g.cancel()
		}
		g.wg.Wait()
		if err := g.groups.Close(); err != nil {
			g.log.Warn().Err(err).Msg("process group watchdog")
		}
		g.icpt.Close()
		if ran {
			g.log.Info().Msg("gateway stopped")
		}
		close(g.stopped)
	})
}

// startInterceptors starts the interceptor plugins before the servers,
// whose first tools listing may ask them: a plugin that cannot start fails
// the start, as a bad config does.
func (g *Gateway) startInterceptors(ctx context.Context) error {
	if err := g.icpt.Start(ctx); err != nil {
		g.log.Error().Err(err).Msg("startup failed")
		return err
	}
	return nil
}

// waitStarted waits for every server's first start, or the startup
// timeout. It waits for all of them even after one fails, so that the error
// names every server that failed (fixing a template's servers then takes
// one rebuild, not one per server).
func (g *Gateway) waitStarted(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.StartupTimeout)
	defer cancel()
	failed := make([]error, len(g.servers))
	done := make(chan struct{}, len(g.servers))
	began := time.Now()
	progress := func(e Progress) {
		if g.cfg.Progress != nil {
			if e.Ready {
				perServer, _ := g.agg.ToolCount()
				e.Tools = perServer[e.Server]
			}
			e.Elapsed = time.Since(began)
			g.cfg.Progress(e)
		}
	}
	for i, s := range g.servers {
		go func() {
			defer func() { done <- struct{}{} }()
			progress(Progress{Server: s.Name()})
			err := s.WaitStarted(ctx)
			switch {
			case err == nil:
				progress(Progress{Server: s.Name(), Ready: true})
			case ctx.Err() == nil:
				failed[i] = fmt.Errorf("server %q failed to start: %w", s.Name(), err)
				progress(Progress{Server: s.Name(), Failed: true})
			}
		}()
	}
	for range g.servers {
		<-done
	}
	if ctx.Err() != nil {
		return g.timeoutError(ctx)
	}
	failed = slices.DeleteFunc(failed, func(err error) bool { return err == nil })
	switch len(failed) {
	case 0:
		return nil
	case 1:
		return failed[0]
	}
	msgs := make([]string, len(failed))
	for i, err := range failed {
		msgs[i] = err.Error()
	}
	return fmt.Errorf("%d of %d servers failed to start:\n  %s", len(failed), len(g.servers), strings.Join(msgs, "\n  "))
}

func (g *Gateway) timeoutError(ctx context.Context) error {
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errors.New("startup interrupted")
	}
	var pending []string
	hint := ""
	for _, s := range g.servers {
		st := s.Status()
		if st.State == supervisor.StateReady {
			continue
		}
		if g.installs[st.Name] {
			hint = " (pre-install catalog servers in the template with 'mcp-gateway pull')"
		}
		d := fmt.Sprintf("%s (%s)", st.Name, st.State)
		if st.LastError != "" {
			d = fmt.Sprintf("%s (%s: %s)", st.Name, st.State, st.LastError)
		}
		pending = append(pending, d)
	}
	return fmt.Errorf("startup timed out after %s; not ready: %s%s",
		g.cfg.StartupTimeout, strings.Join(pending, ", "), hint)
}

// Servers lists every server's state, as /health shows it. It is safe to
// call at any time, from any goroutine.
func (g *Gateway) Servers() []supervisor.Status {
	out := make([]supervisor.Status, len(g.servers))
	for i, s := range g.servers {
		out[i] = s.Status()
	}
	return out
}

// loggedGroups is a Reaper that says when a server's process group could
// not be guarded: the server still runs, but the children it spawns would
// outlive a gateway that is killed.
type loggedGroups struct {
	r   *reaper.Reaper
	log zerolog.Logger
}

func (l loggedGroups) Track(pgid int) error {
	err := l.r.Track(pgid)
	if err != nil {
		l.log.Warn().Err(err).Msg("server's children would outlive a killed gateway")
	}
	return err
}

func (l loggedGroups) Untrack(pgid int) { l.r.Untrack(pgid) }

// taskKey derives the key that signs 2026-era agents' task ids from the
// access token, which every replica of a deployment shares: any replica can
// then route a task request (aggregate.Options.TaskKey). Nil without a
// token: a key of this process alone.
func taskKey(token string) []byte {
	if token == "" {
		return nil
	}
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("mcp-gateway task ids v1"))
	return m.Sum(nil)
}
