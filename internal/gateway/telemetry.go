package gateway

import "github.com/mcp-gateway/mcp-gateway/internal/telemetry"

// sessionCount is the agent sessions open, for the sessions gauge.
func (g *Gateway) sessionCount() int {
	n := 0
	for range g.agg.Server().Sessions() {
		n++
	}
	return n
}

// serverStates is the servers' states and restarts, for their metrics.
func (g *Gateway) serverStates() []telemetry.ServerState {
	var out []telemetry.ServerState
	for _, s := range g.Servers() {
		out = append(out, telemetry.ServerState{Name: s.Name, State: string(s.State), Restarts: s.Restarts})
	}
	return out
}
