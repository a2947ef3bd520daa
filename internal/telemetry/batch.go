package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// batchOptions are the OTEL_BSP_* variables, with the specification's
// defaults.
type batchOptions struct {
	delay    time.Duration // OTEL_BSP_SCHEDULE_DELAY
	timeout  time.Duration // OTEL_BSP_EXPORT_TIMEOUT
	maxQueue int           // OTEL_BSP_MAX_QUEUE_SIZE
	maxBatch int           // OTEL_BSP_MAX_EXPORT_BATCH_SIZE
}

// batchFromEnv reads the OTEL_BSP_* variables through env; a value that is
// not a positive integer is refused, as every other OTEL_* variable is.
func batchFromEnv(env func(string) string) (batchOptions, error) {
	o := batchOptions{delay: 5 * time.Second, timeout: 30 * time.Second, maxQueue: 2048, maxBatch: 512}
	for _, v := range []struct {
		name string
		set  func(int)
	}{
		{"OTEL_BSP_SCHEDULE_DELAY", func(n int) { o.delay = time.Duration(n) * time.Millisecond }},
		{"OTEL_BSP_EXPORT_TIMEOUT", func(n int) { o.timeout = time.Duration(n) * time.Millisecond }},
		{"OTEL_BSP_MAX_QUEUE_SIZE", func(n int) { o.maxQueue = n }},
		{"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", func(n int) { o.maxBatch = n }},
	} {
		s := strings.TrimSpace(env(v.name))
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return o, fmt.Errorf("%w: %s=%q: want a positive integer", ErrConfig, v.name, s)
		}
		v.set(n)
	}
	// As the specification says: a batch is never larger than the queue.
	o.maxBatch = min(o.maxBatch, o.maxQueue)
	return o, nil
}

// spanBatcher is the span processor: it queues ended spans and exports
// them in batches, as the OTEL_BSP_* variables say.
//
// It does what the SDK's BatchSpanProcessor does, at a lower cost per
// span: that one hands every span to its export goroutine over a channel,
// which wakes the goroutine once per span (two per forwarded call); here a
// span is appended under a lock, and the goroutine wakes only when a batch
// is full, the schedule delay has passed, or a flush asks.
type spanBatcher struct {
	exp  sdktrace.SpanExporter
	opts batchOptions

	mu      sync.Mutex
	queue   []sdktrace.ReadOnlySpan
	stopped bool

	full    chan struct{}   // a batch is waiting; capacity 1
	flushes chan chan error // ForceFlush's requests
	stop    chan struct{}   // closed by Shutdown
	done    chan struct{}   // closed when the loop has exported the rest
	once    sync.Once
}

var _ sdktrace.SpanProcessor = (*spanBatcher)(nil)

func newSpanBatcher(exp sdktrace.SpanExporter, opts batchOptions) *spanBatcher {
	b := &spanBatcher{exp: exp, opts: opts, full: make(chan struct{}, 1),
		flushes: make(chan chan error), stop: make(chan struct{}), done: make(chan struct{})}
	go b.loop()
	return b
}

func (b *spanBatcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues s, or drops it when the queue is full (the exporter is
// behind): a slow collector must not hold up calls.
func (b *spanBatcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	b.mu.Lock()
	if b.stopped || len(b.queue) >= b.opts.maxQueue {
		b.mu.Unlock()
		return
	}
	b.queue = append(b.queue, s)
	n := len(b.queue)
	b.mu.Unlock()
	if n == b.opts.maxBatch {
		select {
		case b.full <- struct{}{}:
		default: // already signalled
		}
	}
}

// ForceFlush exports every span queued before it, within ctx.
func (b *spanBatcher) ForceFlush(ctx context.Context) error {
	res := make(chan error, 1)
	select {
	case b.flushes <- res:
	case <-b.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-res:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown exports what is queued and shuts the exporter down, within ctx;
// spans ended after it are dropped.
func (b *spanBatcher) Shutdown(ctx context.Context) error {
	var err error
	b.once.Do(func() {
		b.mu.Lock()
		b.stopped = true
		b.mu.Unlock()
		close(b.stop)
		select {
		case <-b.done:
		case <-ctx.Done():
			err = ctx.Err()
		}
		err = errors.Join(err, b.exp.Shutdown(ctx))
	})
	return err
}

// loop exports when a batch is full, the delay has passed, a flush asks,
// or at shutdown. Only it exports, so batches go out one at a time.
func (b *spanBatcher) loop() {
	defer close(b.done)
	timer := time.NewTimer(b.opts.delay)
	defer timer.Stop()
	var spare []sdktrace.ReadOnlySpan
	for {
		var flushed chan error
		select {
		case <-b.stop:
			if _, err := b.exportQueued(spare); err != nil {
				otel.Handle(err)
			}
			return
		case flushed = <-b.flushes:
		case <-b.full:
		case <-timer.C:
		}
		var err error
		spare, err = b.exportQueued(spare)
		if flushed != nil {
			flushed <- err
		} else if err != nil {
			otel.Handle(err) // where the SDK's own batcher reports it
		}
		timer.Reset(b.opts.delay)
	}
}

// exportQueued takes the whole queue, giving the queue spare's array in
// its place, and exports it in batches of at most maxBatch. It returns the
// taken array emptied, the next call's spare: two arrays serve the whole
// run.
func (b *spanBatcher) exportQueued(spare []sdktrace.ReadOnlySpan) ([]sdktrace.ReadOnlySpan, error) {
	b.mu.Lock()
	taken := b.queue
	b.queue = spare[:0]
	b.mu.Unlock()
	var errs []error
	for rest := taken; len(rest) > 0; {
		n := min(len(rest), b.opts.maxBatch)
		ctx, cancel := context.WithTimeout(context.Background(), b.opts.timeout)
		if err := b.exp.ExportSpans(ctx, rest[:n]); err != nil {
			errs = append(errs, err)
		}
		cancel()
		rest = rest[n:]
	}
	clear(taken) // the spans are not kept alive until the array is reused
	return taken[:0], errors.Join(errs...)
}
