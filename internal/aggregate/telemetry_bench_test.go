package aggregate

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// BenchmarkForwardTelemetry is a call forwarded as the endpoint's fast path
// forwards it (Route, then Send), with the telemetry off, metrics only, and
// traces and metrics exported to a receiver in this process, every call
// sampled or one in ten: what telemetry adds to a call in the gateway
// itself. cpu-ns/op is the process's CPU per call, every goroutine's (the
// exporter's encoding and posting run beside the calls).
func BenchmarkForwardTelemetry(b *testing.B) {
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer recv.Close()
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	otlp := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": recv.URL}
	for _, m := range []struct {
		name    string
		metrics bool
		env     func(string) string
		sampler string // OTEL_TRACES_SAMPLER_ARG of traceidratio; "" always on
	}{
		{"off", false, env(nil), ""},
		{"metrics", true, env(nil), ""},
		{"traces+metrics", false, env(otlp), ""},
		{"traces+metrics-1in10", false, env(otlp), "0.1"},
	} {
		b.Run(m.name, func(b *testing.B) {
			if m.sampler != "" { // the SDK reads the sampler from the process's environment
				b.Setenv("OTEL_TRACES_SAMPLER", "traceidratio")
				b.Setenv("OTEL_TRACES_SAMPLER_ARG", m.sampler)
			}
			tel, err := telemetry.New(context.Background(), telemetry.Options{Metrics: m.metrics, Env: m.env})
			if err != nil {
				b.Fatal(err)
			}
			defer tel.Shutdown(context.Background())
			g, ss := memGatewayWith(b, Options{Telemetry: tel})
			p := json.RawMessage(`{"name":"echo","arguments":{"text":"hello"}}`)
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				ctx := tel.WithRequest(context.Background(), "17", "", "", "tcp")
				f, ok := g.Route("tools/call", p, false)
				if !ok {
					b.Fatal("Route declined")
				}
				if _, err := g.Send(ctx, ss, &f, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the CPU time this process has used, every thread's.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
