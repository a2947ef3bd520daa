package telemetry

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// The metrics of what a request carries and what interceptors decide:
// sizes and counts, never contents. The sizes are float histograms: the
// exporters here encode float histograms only.

// sizeInstruments are the size and decision metrics, part of instruments.
type sizeInstruments struct {
	bytes     metric.Float64Histogram
	items     metric.Float64Histogram
	decisions metric.Int64Counter
}

// Attribute keys of the size and decision metrics.
const (
	keyDirection   = attribute.Key("mcp_gateway.direction")
	keyInterceptor = attribute.Key("mcp_gateway.interceptor.name")
	keyOutcome     = attribute.Key("mcp_gateway.interceptor.outcome")
)

// byteBuckets span a ping's params to a large tool result.
func byteBuckets() []float64 {
	return []float64{64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216}
}

// itemBuckets span an empty list to a catalog of thousands of tools.
func itemBuckets() []float64 {
	return []float64{0, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000}
}

func newSizeInstruments(m metric.Meter) (sizeInstruments, error) {
	var in sizeInstruments
	var err error
	if in.bytes, err = m.Float64Histogram("mcp_gateway.message.size", metric.WithUnit("By"),
		metric.WithDescription("Bytes of a served request's params (direction in) and of its result (direction out)."),
		metric.WithExplicitBucketBoundaries(byteBuckets()...)); err != nil {
		return in, fmt.Errorf("metric mcp_gateway.message.size: %w", err)
	}
	if in.items, err = m.Float64Histogram("mcp_gateway.list.size", metric.WithUnit("{item}"),
		metric.WithDescription("Items in a served list's page (tools, prompts, resources, templates)."),
		metric.WithExplicitBucketBoundaries(itemBuckets()...)); err != nil {
		return in, fmt.Errorf("metric mcp_gateway.list.size: %w", err)
	}
	if in.decisions, err = m.Int64Counter("mcp_gateway.interceptor.decisions", metric.WithUnit("{decision}"),
		metric.WithDescription("Interceptor decisions about calls: deny, rewrite, respond, replace, failed, failed-open, or pass (saw the call, changed nothing).")); err != nil {
		return in, fmt.Errorf("metric mcp_gateway.interceptor.decisions: %w", err)
	}
	return in, nil
}

// Bytes records the sizes of op's params (in) and result (out); a size
// below zero is not recorded (unknown).
func (op *Op) Bytes(in, out int) {
	if op == nil || op.t.inst.sizes.bytes == nil {
		return
	}
	h := op.t.inst.sizes.bytes
	if in >= 0 {
		h.Record(context.Background(), float64(in), op.t.sizeSet(op.req.Method, "in").rec...)
	}
	if out >= 0 {
		h.Record(context.Background(), float64(out), op.t.sizeSet(op.req.Method, "out").rec...)
	}
}

// Items records the number of items in the list op answers.
func (op *Op) Items(n int) {
	if op == nil || op.t.inst.sizes.items == nil {
		return
	}
	op.t.inst.sizes.items.Record(context.Background(), float64(n), op.t.sizeSet(op.req.Method, "").rec...)
}

// Decisions records what interceptors did to the served request in ctx,
// each "name:outcome" as the interceptor engine reports it: an event
// "mcp_gateway.interceptor.decision" on the request's span and a count by
// interceptor and outcome. Nothing when ctx has no served request.
func Decisions(ctx context.Context, decisions []string) {
	t, _ := ctx.Value(telemetryKey{}).(*Telemetry)
	if t == nil || len(decisions) == 0 {
		return
	}
	span := trace.SpanFromContext(ctx)
	for _, d := range decisions {
		// A name may hold ':' (tools:server); the outcome never does.
		i := strings.LastIndexByte(d, ':')
		if i < 0 {
			continue
		}
		if span.IsRecording() {
			span.AddEvent("mcp_gateway.interceptor.decision", trace.WithAttributes(
				keyInterceptor.String(d[:i]), keyOutcome.String(d[i+1:])))
		}
		if t.inst.sizes.decisions != nil {
			t.inst.sizes.decisions.Add(ctx, 1, t.decisionSet(d[:i], d[i+1:]).add...)
		}
	}
}

// OutcomePass is the decision outcome of an interceptor that saw a call
// and let it through unchanged.
const OutcomePass = "pass"

// Passes counts, for the served request in ctx, a decision "pass" of each
// interceptor named: one that saw the call and changed nothing. Counted
// only, not an event on the span: most calls an interceptor sees pass, and
// an event each would weigh down every span of them with nothing that
// happened. Nothing when ctx has no served request or metrics are off.
func Passes(ctx context.Context, names []string) {
	if len(names) == 0 {
		return
	}
	t, _ := ctx.Value(telemetryKey{}).(*Telemetry)
	if t == nil || t.inst.sizes.decisions == nil {
		return
	}
	for _, name := range names {
		t.inst.sizes.decisions.Add(ctx, 1, t.decisionSet(name, OutcomePass).add...)
	}
}

// sizeKey and decisionKey are what the size and decision metrics'
// attribute sets are made of, cached beside the durations' (attrSet):
// building a set sorts and allocates, on every record otherwise.
type sizeKey struct{ method, direction string }

type decisionKey struct{ name, outcome string }

// sizeSet is the attribute set of a size: the method, and the direction
// unless it is "" (a list's size).
func (t *Telemetry) sizeSet(method, direction string) *attrOpts {
	key := sizeKey{method, direction}
	if v, ok := t.sets.Load(key); ok {
		return v.(*attrOpts)
	}
	set := attribute.NewSet(keyMethod.String(method))
	if direction != "" {
		set = attribute.NewSet(keyMethod.String(method), keyDirection.String(direction))
	}
	return t.cacheSet(key, set)
}

// decisionSet is the attribute set of an interceptor's decision.
func (t *Telemetry) decisionSet(name, outcome string) *attrOpts {
	key := decisionKey{name, outcome}
	if v, ok := t.sets.Load(key); ok {
		return v.(*attrOpts)
	}
	return t.cacheSet(key, attribute.NewSet(keyInterceptor.String(name), keyOutcome.String(outcome)))
}
