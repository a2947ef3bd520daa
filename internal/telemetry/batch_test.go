package telemetry

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// recorder is a span exporter that keeps each batch's span names and can
// hold an export until released: enough to watch the batcher decide when
// to export, which is what these tests are about (the OTLP encoding and
// the wire have their own tests).
type recorder struct {
	mu       sync.Mutex
	batches  [][]string
	shutdown bool
	exported chan int      // the size of each batch, as it is exported
	hold     chan struct{} // if set, each export waits for a receive from it
}

func newRecorder() *recorder { return &recorder{exported: make(chan int, 100)} }

func (r *recorder) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if r.hold != nil {
		select {
		case <-r.hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	names := make([]string, len(spans))
	for i, s := range spans {
		names[i] = s.Name()
	}
	r.mu.Lock()
	r.batches = append(r.batches, names)
	r.mu.Unlock()
	r.exported <- len(spans)
	return nil
}

func (r *recorder) Shutdown(context.Context) error {
	r.mu.Lock()
	r.shutdown = true
	r.mu.Unlock()
	return nil
}

func (r *recorder) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var all []string
	for _, b := range r.batches {
		all = append(all, b...)
	}
	return all
}

// waitExport waits for the next batch's size, failing the test when none
// comes (the limit only ends a test that would otherwise hang).
func (r *recorder) waitExport(t *testing.T) int {
	t.Helper()
	select {
	case n := <-r.exported:
		return n
	case <-time.After(20 * time.Second):
		t.Fatal("no export")
		return 0
	}
}

// batcherProvider is a tracer provider whose spans go through a spanBatcher
// to rec.
func batcherProvider(t *testing.T, rec *recorder, o batchOptions, opts ...sdktrace.TracerProviderOption) (*sdktrace.TracerProvider, *spanBatcher) {
	t.Helper()
	b := newSpanBatcher(rec, o)
	tp := sdktrace.NewTracerProvider(append(opts, sdktrace.WithSpanProcessor(b))...)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, b
}

func endSpans(tp *sdktrace.TracerProvider, names ...string) {
	for _, n := range names {
		_, s := tp.Tracer("test").Start(context.Background(), n)
		s.End()
	}
}

func TestBatcherExportsAFullBatchAtOnce(t *testing.T) {
	rec := newRecorder()
	tp, _ := batcherProvider(t, rec, batchOptions{delay: time.Hour, timeout: time.Minute, maxQueue: 16, maxBatch: 3})
	endSpans(tp, "a", "b")
	select {
	case n := <-rec.exported:
		t.Fatalf("a batch of %d went out before it was full or due", n)
	default:
	}
	endSpans(tp, "c")
	if n := rec.waitExport(t); n != 3 {
		t.Fatalf("exported %d spans, want the full batch of 3", n)
	}
}

func TestBatcherExportsWhenDue(t *testing.T) {
	rec := newRecorder()
	tp, _ := batcherProvider(t, rec, batchOptions{delay: 10 * time.Millisecond, timeout: time.Minute, maxQueue: 16, maxBatch: 8})
	endSpans(tp, "a")
	if n := rec.waitExport(t); n != 1 {
		t.Fatalf("exported %d spans, want 1", n)
	}
	endSpans(tp, "b", "c") // the schedule goes on after an export
	got := rec.waitExport(t)
	if got < 2 {
		got += rec.waitExport(t)
	}
	if got != 2 {
		t.Fatalf("exported %d more spans, want 2", got)
	}
}

func TestBatcherSplitsIntoBatchesAndDropsPastTheQueue(t *testing.T) {
	rec := newRecorder()
	rec.hold = make(chan struct{})
	tp, b := batcherProvider(t, rec, batchOptions{delay: time.Hour, timeout: time.Minute, maxQueue: 5, maxBatch: 2})
	endSpans(tp, "1", "2") // a full batch: the loop takes it and is held in the export
	waitQueue(t, b, 0)
	endSpans(tp, "3", "4", "5", "6", "7", "8") // 3..7 fill the queue; 8 is dropped
	waitQueue(t, b, 5)
	close(rec.hold)
	if err := b.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := "1 2 3 4 5 6 7"
	if got := strings.Join(rec.names(), " "); got != want {
		t.Fatalf("exported %q, want %q (8 dropped: the queue was full)", got, want)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, batch := range rec.batches {
		if len(batch) > 2 {
			t.Fatalf("a batch of %d spans, more than OTEL_BSP_MAX_EXPORT_BATCH_SIZE=2: %v", len(batch), rec.batches)
		}
	}
}

// waitQueue waits until b's queue holds n spans.
func waitQueue(t *testing.T, b *spanBatcher, n int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		b.mu.Lock()
		got := len(b.queue)
		b.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queue holds %d spans, want %d", got, n)
		}
	}
}

func TestBatcherFlushAndShutdown(t *testing.T) {
	rec := newRecorder()
	tp, b := batcherProvider(t, rec, batchOptions{delay: time.Hour, timeout: time.Minute, maxQueue: 16, maxBatch: 8})
	endSpans(tp, "a", "b")
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rec.names(), " "); got != "a b" {
		t.Fatalf("after ForceFlush: exported %q, want \"a b\"", got)
	}
	endSpans(tp, "c")
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rec.names(), " "); got != "a b c" {
		t.Fatalf("after Shutdown: exported %q, want \"a b c\"", got)
	}
	rec.mu.Lock()
	shut := rec.shutdown
	rec.mu.Unlock()
	if !shut {
		t.Fatal("Shutdown did not shut the exporter down")
	}
	// A span ended after shutdown (a call still running) is dropped.
	b.OnEnd(recordedSpan(t))
	if err := b.ForceFlush(context.Background()); err != nil {
		t.Fatalf("ForceFlush after Shutdown: %v", err)
	}
	if got := strings.Join(rec.names(), " "); got != "a b c" {
		t.Fatalf("a span ended after Shutdown was exported: %q", got)
	}
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatalf("a second Shutdown: %v", err)
	}
}

// recordedSpan is an ended, sampled span of a provider of its own.
func recordedSpan(t *testing.T) sdktrace.ReadOnlySpan {
	t.Helper()
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	_, s := tp.Tracer("test").Start(context.Background(), "late")
	s.End()
	return s.(sdktrace.ReadOnlySpan)
}

// recordOnly records every span and samples none: such spans reach the
// processor, and must not be exported.
type recordOnly struct{}

func (recordOnly) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	return sdktrace.SamplingResult{Decision: sdktrace.RecordOnly}
}
func (recordOnly) Description() string { return "recordOnly" }

func TestBatcherExportsSampledSpansOnly(t *testing.T) {
	rec := newRecorder()
	tp, _ := batcherProvider(t, rec, batchOptions{delay: time.Hour, timeout: time.Minute, maxQueue: 16, maxBatch: 8},
		sdktrace.WithSampler(recordOnly{}))
	endSpans(tp, "a", "b")
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := rec.names(); len(got) != 0 {
		t.Fatalf("spans not sampled were exported: %v", got)
	}
}

func TestBatchFromEnv(t *testing.T) {
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	o, err := batchFromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if want := (batchOptions{delay: 5 * time.Second, timeout: 30 * time.Second, maxQueue: 2048, maxBatch: 512}); o != want {
		t.Fatalf("defaults %+v, want the specification's %+v", o, want)
	}
	o, err = batchFromEnv(env(map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "250", "OTEL_BSP_EXPORT_TIMEOUT": " 1000 ",
		"OTEL_BSP_MAX_QUEUE_SIZE": "100", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "10"}))
	if err != nil {
		t.Fatal(err)
	}
	if want := (batchOptions{delay: 250 * time.Millisecond, timeout: time.Second, maxQueue: 100, maxBatch: 10}); o != want {
		t.Fatalf("got %+v, want %+v", o, want)
	}
	o, err = batchFromEnv(env(map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "64"}))
	if err != nil {
		t.Fatal(err)
	}
	if o.maxBatch != 64 {
		t.Fatalf("a batch of %d in a queue of 64: want it cut to the queue's size", o.maxBatch)
	}
	for _, bad := range []string{"0", "-5", "soon", "1.5"} {
		_, err := batchFromEnv(env(map[string]string{"OTEL_BSP_SCHEDULE_DELAY": bad}))
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "OTEL_BSP_SCHEDULE_DELAY") {
			t.Errorf("OTEL_BSP_SCHEDULE_DELAY=%q: got %v, want a config error naming the variable", bad, err)
		}
	}
}
