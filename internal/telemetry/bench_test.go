package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// BenchmarkCall is the telemetry of one forwarded tools/call as the
// gateway's hooks run it: the served request's span and duration, the
// forward's client span, its traceparent and its duration.
func BenchmarkCall(b *testing.B) {
	run := func(b *testing.B, tel *telemetry.Telemetry) {
		b.ReportAllocs()
		req := telemetry.Request{Method: "tools/call", Tool: "echo", Session: "KBGPY564GWSQWQTVAHZUKW3TXO",
			Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
		fwd := telemetry.Request{Method: "tools/call", Tool: "echo"}
		cpu0 := processCPU(b)
		for b.Loop() {
			ctx := tel.WithRequest(context.Background(), "17", "", "", "tcp")
			ctx, op := tel.Serve(ctx, req)
			if telemetry.Serving(ctx) {
				_, c := telemetry.Forward(ctx, "local", fwd)
				_, _ = c.Traceparent()
				c.End("")
			}
			op.End("")
		}
		// The exporter encodes and posts on its own goroutine, often on
		// the other CPU: ns/op misses it, the process's CPU does not.
		b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
	}
	b.Run("off", func(b *testing.B) { run(b, nil) })
	b.Run("metrics", func(b *testing.B) {
		tel, err := telemetry.New(context.Background(), telemetry.Options{Metrics: true, Env: envOf()})
		if err != nil {
			b.Fatal(err)
		}
		defer tel.Shutdown(context.Background())
		run(b, tel)
	})
	// The receiver reads and drops the payloads: decoding them would be
	// its CPU, not the gateway's, but this process's all the same.
	b.Run("traces+metrics", func(b *testing.B) {
		recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
		}))
		defer recv.Close()
		tel, err := telemetry.New(context.Background(), telemetry.Options{Metrics: true,
			Env: envOf("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)})
		if err != nil {
			b.Fatal(err)
		}
		defer tel.Shutdown(context.Background())
		run(b, tel)
	})
}

// BenchmarkSDKSpans is the OpenTelemetry SDK's own part of a traced call:
// a server span and its client child, started with the attributes the
// gateway gives them and ended, into a processor that drops them. What
// BenchmarkCall/traces+metrics costs beyond this (and beyond metrics) is
// the gateway's: its contexts, its Op, the batching and the OTLP encoding.
func BenchmarkSDKSpans(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(dropSpans{}))
	defer tp.Shutdown(context.Background())
	tr := tp.Tracer("bench")
	server := []attribute.KeyValue{attribute.String("mcp.method.name", "tools/call"),
		attribute.String("mcp.session.id", "KBGPY564GWSQWQTVAHZUKW3TXO"), attribute.String("jsonrpc.request.id", "17"),
		attribute.String("gen_ai.tool.name", "echo"), attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("network.transport", "tcp")}
	client := []attribute.KeyValue{attribute.String("mcp.method.name", "tools/call"),
		attribute.String("gen_ai.tool.name", "echo"), attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("mcp_gateway.server.name", "local")}
	serverKind := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}
	clientKind := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}
	b.ReportAllocs()
	cpu0 := processCPU(b)
	for b.Loop() {
		ctx, s := tr.Start(context.Background(), "tools/call echo", serverKind...)
		s.SetAttributes(server...)
		_, c := tr.Start(ctx, "tools/call echo", clientKind...)
		c.SetAttributes(client...)
		c.End()
		s.End()
	}
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// dropSpans is a span processor that keeps nothing.
type dropSpans struct{}

func (dropSpans) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (dropSpans) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (dropSpans) Shutdown(context.Context) error                  { return nil }
func (dropSpans) ForceFlush(context.Context) error                { return nil }

// processCPU is the CPU time this process has used, every thread's.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSizes is the size metrics a served call records (its params'
// and its result's bytes) with --metrics: what mcp_gateway.message.size
// adds to a call.
func BenchmarkSizes(b *testing.B) {
	tel, err := telemetry.New(context.Background(), telemetry.Options{Metrics: true, Env: envOf()})
	if err != nil {
		b.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	_, op := tel.Serve(context.Background(), telemetry.Request{Method: "tools/call", Tool: "echo"})
	b.ReportAllocs()
	for b.Loop() {
		op.Bytes(120, 480)
	}
}
