package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// otlpHTTP posts OTLP protobuf payloads to one URL, as the OTLP/HTTP
// exporters of the SDK do (same headers, compression and timeout), but
// with the payload encoded here (pbwire.go): the SDK's own exporter links
// the gRPC stack through the generated OTLP packages, 12 MB of binary
// for a gateway that speaks no gRPC.
type otlpHTTP struct {
	url string
	// shown is url as errors name it: without a password.
	shown   string
	headers map[string]string
	gzip    bool
	client  *http.Client
}

// post sends one payload and reports a non-2xx answer as an error, with the
// start of its body (a collector's answer names what it refused). done
// tells whether the transport is done with payload, so that the caller
// may write its next payload into the same array: a transport reads a
// body in a goroutine of its own, which may still hold it after Do
// returns when a receiver answers before reading it all (then done is
// false, and the caller lets the array go).
func (o *otlpHTTP) post(ctx context.Context, payload []byte) (done bool, err error) {
	body := payload
	if o.gzip {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(payload); err != nil {
			return true, fmt.Errorf("gzip the OTLP payload: %w", err)
		}
		if err := zw.Close(); err != nil {
			return true, fmt.Errorf("gzip the OTLP payload: %w", err)
		}
		body = buf.Bytes()
	}
	var bodies openBodies
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.url, nil)
	if err != nil {
		return true, fmt.Errorf("OTLP request to %s: %w", o.shown, err)
	}
	// The body as NewRequest would set a bytes.Reader up, but counting
	// the readers open on it (a redirect or a retry opens another).
	req.Body, req.ContentLength = bodies.open(body), int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return bodies.open(body), nil }
	req.Header.Set("Content-Type", "application/x-protobuf")
	if o.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	for k, v := range o.headers {
		req.Header.Set(k, v)
	}
	resp, err := o.client.Do(req)
	if err != nil {
		return bodies.n.Load() == 0, fmt.Errorf("OTLP export to %s: %w", o.shown, err)
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body.Close()
	done = bodies.n.Load() == 0
	if resp.StatusCode/100 != 2 {
		return done, fmt.Errorf("OTLP export to %s: %s: %q", o.shown, resp.Status, msg)
	}
	return done, nil
}

// openBodies counts the request bodies of one post that the transport
// has not closed yet (it closes every body it is given, once done).
type openBodies struct{ n atomic.Int32 }

func (o *openBodies) open(b []byte) io.ReadCloser {
	o.n.Add(1)
	return &countedBody{Reader: bytes.NewReader(b), open: o}
}

type countedBody struct {
	*bytes.Reader
	once sync.Once
	open *openBodies
}

func (b *countedBody) Close() error {
	b.once.Do(func() { b.open.n.Add(-1) })
	return nil
}

// spanExporter is an sdktrace.SpanExporter sending OTLP/HTTP protobuf.
type spanExporter struct {
	out      *otlpHTTP
	mu       sync.Mutex
	shutdown bool
	// buf is the last batch's payload, its array reused for the next
	// (a batch is a few hundred KB: allocated afresh, it would be most
	// of the bytes the traces allocate). bufMu holds it for an export;
	// the batch processor exports one batch at a time anyway.
	bufMu sync.Mutex
	buf   pb
}

func (e *spanExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	done := e.shutdown
	e.mu.Unlock()
	if done || len(spans) == 0 {
		return nil
	}
	e.bufMu.Lock()
	defer e.bufMu.Unlock()
	payload := encodeSpans(e.buf[:0], spans)
	sent, err := e.out.post(ctx, payload)
	e.buf = nil
	if sent {
		e.buf = payload
	}
	return err
}

func (e *spanExporter) Shutdown(context.Context) error {
	e.mu.Lock()
	e.shutdown = true
	e.mu.Unlock()
	return nil
}

// encodeSpans writes an ExportTraceServiceRequest: spans grouped by
// resource, then by instrumentation scope.
func encodeSpans(b pb, spans []sdktrace.ReadOnlySpan) pb {
	type group struct {
		res    *resource.Resource
		scopes map[instrumentation.Scope][]sdktrace.ReadOnlySpan
		order  []instrumentation.Scope
	}
	var groups []*group
	byRes := map[attribute.Distinct]*group{}
	for _, s := range spans {
		key := s.Resource().Equivalent()
		g := byRes[key]
		if g == nil {
			g = &group{res: s.Resource(), scopes: map[instrumentation.Scope][]sdktrace.ReadOnlySpan{}}
			byRes[key] = g
			groups = append(groups, g)
		}
		sc := s.InstrumentationScope()
		if _, ok := g.scopes[sc]; !ok {
			g.order = append(g.order, sc)
		}
		g.scopes[sc] = append(g.scopes[sc], s)
	}
	if b == nil {
		b = make(pb, 0, 512*len(spans))
	}
	for _, g := range groups {
		b = b.msg(1, true, func(b pb) pb { // ResourceSpans
			b = b.msg(1, true, func(b pb) pb { return appendAttrs(b, 1, g.res.Attributes()) })
			for _, sc := range g.order {
				b = b.msg(2, true, func(b pb) pb { // ScopeSpans
					b = b.msg(1, true, func(b pb) pb { return b.str(1, sc.Name).str(2, sc.Version) })
					for _, s := range g.scopes[sc] {
						b = b.msg(2, true, func(b pb) pb { return appendSpan(b, s) })
					}
					return b.str(3, sc.SchemaURL)
				})
			}
			return b.str(3, g.res.SchemaURL())
		})
	}
	return b
}

// appendSpan writes one Span's fields.
func appendSpan(b pb, s sdktrace.ReadOnlySpan) pb {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = b.bytes(1, tid[:]).bytes(2, sid[:]).str(3, sc.TraceState().String())
	if p := s.Parent(); p.IsValid() {
		psid := p.SpanID()
		b = b.bytes(4, psid[:])
	}
	b = b.str(5, s.Name()).varint(6, uint64(s.SpanKind()))
	b = b.fixed64(7, uint64(s.StartTime().UnixNano())).fixed64(8, uint64(s.EndTime().UnixNano()))
	b = appendAttrs(b, 9, s.Attributes())
	b = b.varint(10, uint64(s.DroppedAttributes()))
	for _, ev := range s.Events() {
		b = b.msg(11, true, func(b pb) pb {
			b = b.fixed64(1, uint64(ev.Time.UnixNano())).str(2, ev.Name)
			return appendAttrs(b, 3, ev.Attributes)
		})
	}
	b = b.varint(12, uint64(s.DroppedEvents()))
	for _, l := range s.Links() {
		b = b.msg(13, true, func(b pb) pb {
			ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
			b = b.bytes(1, ltid[:]).bytes(2, lsid[:]).str(3, l.SpanContext.TraceState().String())
			return appendAttrs(b, 4, l.Attributes)
		})
	}
	b = b.varint(14, uint64(s.DroppedLinks()))
	st := s.Status()
	b = b.msg(15, false, func(b pb) pb {
		code := uint64(0) // OTLP: 0 unset, 1 ok, 2 error
		switch st.Code {
		case codes.Ok:
			code = 1
		case codes.Error:
			code = 2
		}
		return b.str(2, st.Description).varint(3, code)
	})
	// flags: the W3C trace flags, and that the parent's remoteness is known
	// (bit 8) and whether it was remote (bit 9).
	flags := uint32(sc.TraceFlags()) | 1<<8
	if s.Parent().IsRemote() {
		flags |= 1 << 9
	}
	return b.fixed32(16, flags)
}

// appendAttrs writes attrs as repeated KeyValue in field.
func appendAttrs(b pb, field int, attrs []attribute.KeyValue) pb {
	for _, kv := range attrs {
		b = b.msg(field, true, func(b pb) pb {
			return b.str(1, string(kv.Key)).msg(2, true, func(b pb) pb { return appendValue(b, kv.Value) })
		})
	}
	return b
}

// appendValue writes an AnyValue's oneof.
func appendValue(b pb, v attribute.Value) pb {
	switch v.Type() {
	case attribute.BOOL:
		if v.AsBool() {
			return b.varint(2, 1)
		}
		return b.tag(2, wireVarint).varintRaw(0)
	case attribute.INT64:
		return b.tag(3, wireVarint).varintRaw(uint64(v.AsInt64()))
	case attribute.FLOAT64:
		return b.double(4, v.AsFloat64())
	case attribute.STRING:
		s := v.AsString()
		return append(b.tag(1, wireBytes).varintRaw(uint64(len(s))), s...)
	case attribute.BOOLSLICE, attribute.INT64SLICE, attribute.FLOAT64SLICE, attribute.STRINGSLICE:
		return b.msg(5, true, func(b pb) pb {
			for _, e := range sliceValues(v) {
				b = b.msg(1, true, func(b pb) pb { return appendValue(b, e) })
			}
			return b
		})
	}
	return b.str(1, v.Emit())
}

func sliceValues(v attribute.Value) []attribute.Value {
	var out []attribute.Value
	switch v.Type() {
	case attribute.BOOLSLICE:
		for _, e := range v.AsBoolSlice() {
			out = append(out, attribute.BoolValue(e))
		}
	case attribute.INT64SLICE:
		for _, e := range v.AsInt64Slice() {
			out = append(out, attribute.Int64Value(e))
		}
	case attribute.FLOAT64SLICE:
		for _, e := range v.AsFloat64Slice() {
			out = append(out, attribute.Float64Value(e))
		}
	case attribute.STRINGSLICE:
		for _, e := range v.AsStringSlice() {
			out = append(out, attribute.StringValue(e))
		}
	}
	return out
}
