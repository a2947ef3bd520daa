package telemetry

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// instruments are the gateway's metrics. Durations follow the MCP
// conventions (mcp.server.operation.duration for what the gateway serves,
// mcp.client.operation.duration for what it forwards); the rest are the
// gateway's own, under mcp_gateway.
type instruments struct {
	server   metric.Float64Histogram
	client   metric.Float64Histogram
	inflight *liveCalls // nil: no metrics
	sizes    sizeInstruments
	meter    metric.Meter
}

// liveCalls counts, per server, the requests forwarded and not yet
// answered, for mcp_gateway.calls.in_flight. A call adds and removes
// itself with an atomic add, and the metric reads the counts when it is
// collected: the SDK's synchronous counter cost two recorded measurements
// per call, each an attribute set lookup and a lock. Server names come
// from the configuration, so the map stays small.
type liveCalls struct {
	m sync.Map // server name → *liveCount
}

// liveCount is one server's count and its metric attributes.
type liveCount struct {
	n    atomic.Int64
	opts []metric.ObserveOption
}

// of returns server's count, made on its first call.
func (l *liveCalls) of(server string) *liveCount {
	if c, ok := l.m.Load(server); ok {
		return c.(*liveCount)
	}
	set := metricAttrs(Request{}, server, "")
	c, _ := l.m.LoadOrStore(server, &liveCount{opts: []metric.ObserveOption{metric.WithAttributeSet(set)}})
	return c.(*liveCount)
}

// observe reports every server's count seen so far, zero included, as the
// synchronous counter's cumulative sum did.
func (l *liveCalls) observe(_ context.Context, o metric.Int64Observer) error {
	l.m.Range(func(_, v any) bool {
		c := v.(*liveCount)
		o.Observe(c.n.Load(), c.opts...)
		return true
	})
	return nil
}

// durationBuckets are the conventions' boundaries for MCP durations, with
// finer ones below 10ms: most calls through a gateway take less.
func durationBuckets() []float64 {
	return []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}
}

func newInstruments(m metric.Meter) (instruments, error) {
	in := instruments{meter: m}
	var err error
	if in.server, err = m.Float64Histogram("mcp.server.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("MCP request duration as the gateway serves it, from receipt to its answer."),
		metric.WithExplicitBucketBoundaries(durationBuckets()...)); err != nil {
		return in, fmt.Errorf("metric mcp.server.operation.duration: %w", err)
	}
	if in.client, err = m.Float64Histogram("mcp.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("MCP request duration as the gateway forwards it to a server, until the server's answer."),
		metric.WithExplicitBucketBoundaries(durationBuckets()...)); err != nil {
		return in, fmt.Errorf("metric mcp.client.operation.duration: %w", err)
	}
	in.inflight = &liveCalls{}
	if _, err = m.Int64ObservableUpDownCounter("mcp_gateway.calls.in_flight", metric.WithUnit("{call}"),
		metric.WithDescription("Requests forwarded to a server and not yet answered."),
		metric.WithInt64Callback(in.inflight.observe)); err != nil {
		return in, fmt.Errorf("metric mcp_gateway.calls.in_flight: %w", err)
	}
	if in.sizes, err = newSizeInstruments(m); err != nil {
		return in, err
	}
	return in, nil
}

// ServerState is one upstream server as the metrics see it.
type ServerState struct {
	Name     string
	State    string // the supervisor's state: ready, restarting, failed, ...
	Restarts int
}

// Observe registers the gauges read at each collection: open sessions
// (sessions()) and the servers' restarts and states (servers()). Both
// are called from the metrics' collection, never on a request.
func (t *Telemetry) Observe(sessions func() int, servers func() []ServerState) error {
	if t == nil || t.inst.meter == nil {
		return nil
	}
	m := t.inst.meter
	open, err := m.Int64ObservableUpDownCounter("mcp_gateway.sessions.open", metric.WithUnit("{session}"),
		metric.WithDescription("Agent sessions open."))
	if err != nil {
		return fmt.Errorf("metric mcp_gateway.sessions.open: %w", err)
	}
	restarts, err := m.Int64ObservableCounter("mcp_gateway.server.restarts", metric.WithUnit("{restart}"),
		metric.WithDescription("Restarts of each server since the gateway started."))
	if err != nil {
		return fmt.Errorf("metric mcp_gateway.server.restarts: %w", err)
	}
	up, err := m.Int64ObservableGauge("mcp_gateway.server.up", metric.WithUnit("1"),
		metric.WithDescription("1 for each server in its current state (the state attribute), else absent."))
	if err != nil {
		return fmt.Errorf("metric mcp_gateway.server.up: %w", err)
	}
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(open, int64(sessions()))
		for _, s := range servers() {
			name := keyServer.String(s.Name)
			o.ObserveInt64(restarts, int64(s.Restarts), metric.WithAttributes(name))
			o.ObserveInt64(up, 1, metric.WithAttributes(name, attribute.String("mcp_gateway.server.state", s.State)))
		}
		return nil
	}, open, restarts, up)
	if err != nil {
		return fmt.Errorf("metrics callback: %w", err)
	}
	return nil
}
