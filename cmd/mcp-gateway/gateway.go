package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime/debug"
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
	"github.com/mcp-gateway/mcp-gateway/internal/redact"
	"github.com/mcp-gateway/mcp-gateway/internal/supervisor"
)

// gateway is one running gateway: its servers, the merged MCP server and the
// HTTP endpoint. Its life is run: start, report ready, serve until the
// context ends, stop everything.
type gateway struct {
	set     *settings
	log     zerolog.Logger
	token   string
	agg     *aggregate.Gateway
	icpt    *intercept.Engine
	servers []upstream
	trim    memTrimmer
	ep      *endpoint.Endpoint // set by run; nil in stdio mode
	// progress, if set, is told of each server's start, readiness or
	// failure while the gateway starts, from several goroutines at once.
	progress func(progressEvent)
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
	g.icpt = intercept.New(set.interceptors, specs, intercept.Options{Logger: log, Environ: supervisor.EnvWithout(os.Environ(), auth.EnvVar)})
	g.agg = aggregate.New(aggregate.Options{Logger: log, Version: readBuildInfo(debug.ReadBuildInfo).serverVersion(), Audit: endpoint.AuditLog(audit), Interceptors: g.icpt})
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
		ServeRequest: g.agg.ServeRequest,
		OnReady: func(ctx context.Context, s *supervisor.Server, cs *mcp.ClientSession, raw supervisor.RoundTrip) error {
			return g.agg.Sync(ctx, s.Name(), cs, raw)
		},
		Redact:        red.String,
		RestartPolicy: supervisor.RestartPolicy{MaxBackoff: set.MaxBackoff},
	}
	remoteOpts := supervisor.RemoteOptions{
		Logger:       log,
		NewClient:    g.agg.NewClient,
		Intercept:    g.agg.Intercept,
		ServeRequest: g.agg.ServeRequest,
		OnReady: func(ctx context.Context, r *supervisor.Remote, cs *mcp.ClientSession, raw supervisor.RoundTrip) error {
			return g.agg.Sync(ctx, r.Name(), cs, raw)
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
	if g.ep != nil {
		g.ep.SetReady()
	}
	_, tools = g.agg.ToolCount()
	return tools, nil
}

func (g *gateway) run(ctx context.Context, ln net.Listener, ready func(summary)) error {
	began := time.Now()
	if err := g.startInterceptors(ctx); err != nil {
		return err
	}
	g.ep = endpoint.New(g.agg, g.token, endpoint.Options{
		Logger:      g.log,
		Limits:      g.set.Limits,
		MaxSessions: g.set.MaxSessions,
		Servers:     g.statuses,
		OnRequest:   g.trim.seen,
		TokenFile:   g.set.TokenFile,
	})
	serveErr := make(chan error, 1)
	go func() { serveErr <- g.ep.Serve(ln) }()

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	g.runServers(runCtx, &wg)
	wg.Go(func() { g.trim.run(runCtx) })
	stop := func() {
		shutCtx, shutCancel := context.WithTimeout(context.Background(), g.set.ShutdownGrace)
		g.ep.Shutdown(shutCtx)
		shutCancel()
		cancel()
		wg.Wait()
		g.icpt.Close()
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

// startInterceptors starts the interceptor plugins before the servers,
// whose first tools listing may ask them: a plugin that cannot start fails
// the start, as a bad config does.
func (g *gateway) startInterceptors(ctx context.Context) error {
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
func (g *gateway) waitStarted(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, g.set.StartupTimeout)
	defer cancel()
	failed := make([]error, len(g.servers))
	done := make(chan struct{}, len(g.servers))
	began := time.Now()
	progress := func(e progressEvent) {
		if g.progress != nil {
			if e.Ready {
				perServer, _ := g.agg.ToolCount()
				e.Tools = perServer[e.Server]
			}
			e.Elapsed = time.Since(began)
			g.progress(e)
		}
	}
	for i, s := range g.servers {
		go func() {
			defer func() { done <- struct{}{} }()
			progress(progressEvent{Server: s.Name()})
			err := s.WaitStarted(ctx)
			switch {
			case err == nil:
				progress(progressEvent{Server: s.Name(), Ready: true})
			case ctx.Err() == nil:
				failed[i] = fmt.Errorf("server %q failed to start: %w", s.Name(), err)
				progress(progressEvent{Server: s.Name(), Failed: true})
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

// statuses lists every server's state, for /health.
func (g *gateway) statuses() []supervisor.Status {
	out := make([]supervisor.Status, len(g.servers))
	for i, s := range g.servers {
		out[i] = s.Status()
	}
	return out
}
