package telemetry

import (
	"context"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// LogHook adds trace_id and span_id to every log line written with the
// context of a traced request (zerolog's Event.Ctx), so that any line of
// a call (an interceptor that failed open, a remote's session that was
// re-initialized), not only its audit line, leads to its trace. A line
// without such a context, and every line when telemetry is off (no span
// is ever put in a context then), gets nothing: the hook costs a context
// lookup.
type LogHook struct{}

// Run implements zerolog.Hook.
func (LogHook) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	if traceID, spanID := IDs(e.GetCtx()); traceID != "" {
		e.Str("trace_id", traceID).Str("span_id", spanID)
	}
}

// Served returns ctx, a transport's context given to WithRequest, with
// the span context of the request served in it once Serve has started its
// span: for a line the transport writes about the request after the
// request's own context is gone (its span ended inside the call), so that
// LogHook gives the line the served span's ids. ctx as it is otherwise.
func Served(ctx context.Context) context.Context {
	info, _ := ctx.Value(httpKey{}).(*httpInfo)
	if info == nil {
		return ctx
	}
	info.mu.Lock()
	sc := info.served
	info.mu.Unlock()
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithSpanContext(ctx, sc)
}

// WithIDsOf returns ctx with the span context of the request in of (its
// ids only: not its span, on which nothing more is recorded, nor its
// deadline or values): for work done outside a request's context but
// about it, so that its log lines lead to that request's trace. ctx as it
// is when of has no span.
func WithIDsOf(ctx, of context.Context) context.Context {
	sc := trace.SpanContextFromContext(of)
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithSpanContext(ctx, sc)
}

// Event names of a forwarded request's retry, on its client span.
const (
	eventSessionExpired = "mcp_gateway.session.reinitialize"
	eventRetry          = "mcp_gateway.retry"
)

// SessionExpired notes on the span in ctx (a forwarded request's) that
// the server answered status for the request's session, so the gateway
// re-initializes the session and retries the request: status is the HTTP
// status (404, or 400 naming an unknown session). Nothing when ctx has no
// recording span.
func SessionExpired(ctx context.Context, status int) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.AddEvent(eventSessionExpired, trace.WithAttributes(
		attribute.Key("http.response.status_code").Int(status)))
}

// Retry notes on the span in ctx that the request is sent again, attempt
// being the try's number (2 for the first retry), and why ("session_expired").
func Retry(ctx context.Context, attempt int, reason string) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.AddEvent(eventRetry, trace.WithAttributes(
		attribute.Key("mcp_gateway.retry.attempt").Int(attempt),
		attribute.Key("mcp_gateway.retry.reason").String(reason)))
}
