package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// scopeName is the instrumentation scope of every span and metric.
const scopeName = "github.com/mcp-gateway/mcp-gateway"

// Options configure New.
type Options struct {
	// Version is service.version.
	Version string
	// Metrics turns the metrics on for GET /metrics even when no OTLP
	// endpoint is set (Handler serves them).
	Metrics bool
	// Env reads the OTEL_* variables. Nil: os.Getenv. The SDK reads
	// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES and OTEL_TRACES_SAMPLER
	// from the process environment itself.
	Env func(string) string
}

// Telemetry is the gateway's traces and metrics. A nil *Telemetry is
// telemetry off: every method is a no-op on it, and the callers' hooks
// cost one nil check.
type Telemetry struct {
	tp     *sdktrace.TracerProvider // nil: no traces
	tracer trace.Tracer
	// serverSpan and clientSpan are the start options of a served and a
	// forwarded request's span, built once: passed afresh, their
	// variadic slice is an allocation per span.
	serverSpan, clientSpan []trace.SpanStartOption
	// attrBufs lends the slices a span's attributes are written into
	// before the span copies them (setAttrs).
	attrBufs sync.Pool
	mp       *sdkmetric.MeterProvider // nil: no metrics
	reader   *sdkmetric.ManualReader  // for Handler; nil without Options.Metrics
	inst     instruments
	// sets caches the metrics' attribute sets (attrSet) and the span
	// names (spanName), setCount counts them.
	sets     sync.Map
	setCount atomic.Int32
}

// New sets up traces and metrics as the OTEL_* variables and opts say. It
// returns nil, nil when all of them are off: no endpoint, and no
// Options.Metrics.
func New(ctx context.Context, opts Options) (*Telemetry, error) {
	env := opts.Env
	if env == nil {
		env = os.Getenv
	}
	cfg, err := configFromEnv(env)
	if err != nil {
		return nil, err
	}
	if cfg.traces == nil && cfg.metrics == nil && !opts.Metrics {
		return nil, nil
	}
	// The gateway's defaults first: OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES (WithFromEnv) override them.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "mcp-gateway"),
			attribute.String("service.version", opts.Version)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("%w: resource: %w", ErrConfig, err)
	}
	t := &Telemetry{}
	if cfg.traces != nil {
		// The sampler is the SDK's from OTEL_TRACES_SAMPLER (default:
		// parentbased_always_on), the batch as OTEL_BSP_* say.
		t.tp = sdktrace.NewTracerProvider(sdktrace.WithResource(res),
			sdktrace.WithSpanProcessor(newSpanBatcher(&spanExporter{out: cfg.traces}, cfg.batch)))
		t.tracer = t.tp.Tracer(scopeName, trace.WithInstrumentationVersion(opts.Version))
		t.serverSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}
		t.clientSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}
		t.attrBufs.New = func() any { return new([maxRequestAttrs]attribute.KeyValue) }
	}
	var readers []sdkmetric.Option
	if opts.Metrics {
		t.reader = sdkmetric.NewManualReader()
		readers = append(readers, sdkmetric.WithReader(t.reader))
	}
	if cfg.metrics != nil {
		readers = append(readers, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(
			&metricExporter{out: cfg.metrics}, sdkmetric.WithInterval(cfg.interval))))
	}
	if len(readers) > 0 {
		// No exemplars: neither the OTLP nor the Prometheus encoding here
		// writes them, and the SDK's default (trace based) would offer every
		// measurement of a sampled call to a reservoir for nothing.
		t.mp = sdkmetric.NewMeterProvider(append(readers, sdkmetric.WithResource(res),
			sdkmetric.WithExemplarFilter(exemplar.AlwaysOffFilter))...)
		meter := t.mp.Meter(scopeName, metric.WithInstrumentationVersion(opts.Version))
		if t.inst, err = newInstruments(meter); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Tracing reports whether spans are exported.
func (t *Telemetry) Tracing() bool { return t != nil && t.tp != nil }

// Shutdown exports what is buffered and stops the exporters, within ctx.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	if t.tp != nil {
		errs = append(errs, t.tp.Shutdown(ctx))
	}
	if t.mp != nil {
		errs = append(errs, t.mp.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// Handler serves the metrics in the Prometheus text format, or 404 when
// they are off (Options.Metrics unset). The caller puts it behind the
// bearer check.
func (t *Telemetry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t == nil || t.reader == nil {
			http.Error(w, "metrics are off: start the gateway with --metrics", http.StatusNotFound)
			return
		}
		t.servePrometheus(w, r)
	})
}

// newHTTPClient is the exporters' client: the default transport's
// settings (proxy from the environment, dial timeouts), its own pool.
func newHTTPClient(timeout time.Duration) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	return &http.Client{Timeout: timeout, Transport: tr}
}
