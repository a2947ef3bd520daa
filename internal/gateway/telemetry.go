package gateway

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// sessionCount is the agent sessions open, for the sessions gauge.
func (g *Gateway) sessionCount() int { return g.agg.AgentSessions() }

// serverStates is the servers' states and restarts, for their metrics.
func (g *Gateway) serverStates() []telemetry.ServerState {
	var out []telemetry.ServerState
	for _, s := range g.Servers() {
		out = append(out, telemetry.ServerState{Name: s.Name, State: string(s.State), Restarts: s.Restarts})
	}
	return out
}

// serveMetrics serves GET /metrics on Config.MetricsListen without the
// token: the address is the operator's choice of a network only a scraper
// reaches (the endpoint's own /metrics keeps the token).
func (g *Gateway) serveMetrics() error {
	if g.cfg.MetricsListen == "" {
		return nil
	}
	ln, err := net.Listen("tcp", g.cfg.MetricsListen)
	if err != nil {
		return fmt.Errorf("listen for /metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", g.cfg.Telemetry.Handler())
	g.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := g.metrics.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			g.log.Warn().Err(err).Msg("the /metrics listener stopped")
		}
	}()
	g.log.Info().Str("listen", ln.Addr().String()).Msg("serving /metrics without a token")
	return nil
}
