package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// The command's logger puts the trace and span ids of a traced request on
// a line written with its context, and nothing on one without.
func TestLoggerTraceIDs(t *testing.T) {
	var buf bytes.Buffer
	log, err := newLogger(&buf, "info")
	if err != nil {
		t.Fatal(err)
	}
	log.Info().Ctx(context.Background()).Msg("untraced")
	tid, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	sid, _ := trace.SpanIDFromHex("b7ad6b7169203331")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	child := log.With().Str("server", "x").Logger()
	child.Info().Ctx(ctx).Msg("traced")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || strings.Contains(lines[0], "trace_id") ||
		!strings.Contains(lines[1], `"trace_id":"0af7651916cd43dd8448eb211c80319c","span_id":"b7ad6b7169203331"`) {
		t.Errorf("log:\n%s", buf.String())
	}
}
