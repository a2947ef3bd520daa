package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// telemetryRuns measures what the gateway's telemetry costs on the fast
// path: gateway CPU per plain call at 8 sessions with telemetry off, with
// --metrics (recorded, served at /metrics), and with traces and metrics
// exported over OTLP/HTTP to a receiver in this process that reads and
// drops them, every call sampled (two spans per call) or one in ten. The gateways
// run side by side and are measured in turn, three rounds; each row is
// its lowest round, the least disturbed by the rest of the machine. With
// -profile, each gateway writes its CPU profile there (telemetry-N.pprof,
// N the row).
func (b *bench) telemetryRuns(ctx context.Context) error {
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer recv.Close()
	if b.opt.profile != "" {
		if err := os.MkdirAll(b.opt.profile, 0o755); err != nil {
			return fmt.Errorf("profile dir: %w", err)
		}
	}
	modes := []struct {
		name string
		args []string
		env  []string
	}{
		{"telemetry off", nil, nil},
		{"--metrics", []string{"--metrics"}, nil},
		{"OTLP traces and metrics, every call sampled", nil, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + recv.URL,
			"OTEL_METRIC_EXPORT_INTERVAL=1000"}},
		{"OTLP traces and metrics, 1 call in 10 sampled", nil, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + recv.URL,
			"OTEL_METRIC_EXPORT_INTERVAL=1000", "OTEL_TRACES_SAMPLER=traceidratio", "OTEL_TRACES_SAMPLER_ARG=0.1"}},
	}
	type run struct {
		bx      *box
		workers []call
		cpu     []time.Duration
		last    stats
	}
	runs := make([]*run, len(modes))
	for i, m := range modes {
		b.logf("launching a gateway with 1 server, %s", m.name)
		bx, err := newBox(b.bin, b.tmp, fmt.Sprintf("telemetry-%d", i))
		if err != nil {
			return err
		}
		bx.env, bx.args, bx.protocol = m.env, m.args, b.opt.protocol
		if b.opt.profile != "" {
			// Each gateway's CPU profile over its warm-up and rounds, to
			// see where telemetry's cost goes (written as it stops).
			prof, err := filepath.Abs(filepath.Join(b.opt.profile, fmt.Sprintf("telemetry-%d.pprof", i)))
			if err != nil {
				return err
			}
			bx.env = append(slices.Clip(bx.env), "MCP_GATEWAY_CPUPROFILE="+prof)
		}
		b.boxes = append(b.boxes, bx)
		cfg, err := json.Marshal(fixtureServers(1, plainServer))
		if err != nil {
			return err
		}
		if _, err := bx.launch(ctx, string(cfg)); err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		css, err := bx.connectN(ctx, sdkPathSessions)
		if err != nil {
			return err
		}
		defer closeAll(css)
		r := &run{bx: bx}
		for _, cs := range css {
			r.workers = append(r.workers, echoCall(cs, directEchoTool))
		}
		if _, err := drive(ctx, r.workers, 0, warmupCalls); err != nil {
			return fmt.Errorf("%s warm-up: %w", m.name, err)
		}
		runs[i] = r
	}
	for round := range 3 {
		for i, r := range runs {
			b.logf("gateway, %d sessions, %s, round %d, %s", sdkPathSessions, modes[i].name, round+1, b.opt.duration)
			gw0, err := cpuTime(r.bx.gwPID)
			if err != nil {
				return err
			}
			s, err := drive(ctx, r.workers, b.opt.duration, 0)
			if err != nil {
				return fmt.Errorf("%s: %w", modes[i].name, err)
			}
			gw1, err := cpuTime(r.bx.gwPID)
			if err != nil {
				return err
			}
			r.cpu = append(r.cpu, perCall(gw1-gw0, s.calls))
			r.last = s
		}
	}
	off := slices.Min(runs[0].cpu)
	for i, r := range runs {
		cpu := slices.Min(r.cpu)
		result := fmt.Sprintf("%s (%s)", dur(cpu), throughput(r.last))
		target, v := "", verdict("")
		if i > 0 {
			result = fmt.Sprintf("%s (%+.1f µs on off; %s)", dur(cpu), float64(cpu-off)/float64(time.Microsecond), throughput(r.last))
			target, v = "≤ +15 µs", judge(cpu-off <= 15*time.Microsecond)
		}
		b.tbl.add(fmt.Sprintf("gateway CPU per call, %d sessions, fast path, %s", sdkPathSessions, modes[i].name), result, target, v)
	}
	for _, r := range runs {
		if err := b.stop(r.bx); err != nil {
			return err
		}
	}
	return nil
}
