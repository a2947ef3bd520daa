package main

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// startTelemetry sets up traces and metrics from the OTEL_* variables and
// --metrics; nil when both are off. A variable it cannot honour (a gRPC
// protocol, a malformed endpoint) fails the start.
func startTelemetry(ctx context.Context, set *settings, log zerolog.Logger) (*telemetry.Telemetry, error) {
	tel, err := telemetry.New(ctx, telemetry.Options{
		Version: readBuildInfo(debug.ReadBuildInfo).serverVersion(),
		Metrics: set.Metrics || set.MetricsListen != "",
	})
	if err != nil {
		return nil, err
	}
	if tel != nil {
		log.Info().Bool("traces", tel.Tracing()).Bool("metrics_endpoint", set.Metrics || set.MetricsListen != "").Msg("telemetry on")
	}
	return tel, nil
}

// stopTelemetry exports what is left, within a few seconds: a collector
// that is down must not hold the gateway's exit.
func stopTelemetry(tel *telemetry.Telemetry, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		log.Warn().Err(err).Msg("telemetry: the last export failed")
	}
}
