package gateway

import (
	"context"
	"testing"
	"time"
)

// TestMemTrimmerOncePerBurst: memory is handed back after a burst, and not
// again until new requests come; never when nothing happened. The test
// steps through the quiet periods itself (tick), so nothing waits on a
// clock.
func TestMemTrimmerOncePerBurst(t *testing.T) {
	trims := 0
	m := &memTrimmer{quiet: time.Hour, free: func() { trims++ }}
	periods := func(n int) {
		for range n {
			m.tick()
		}
	}
	periods(3) // idle from the start: nothing to trim
	if trims != 0 {
		t.Fatalf("trimmed %d times with no requests", trims)
	}
	// A burst of requests over three periods: no trim while it lasts.
	for range 3 {
		m.seen()
		m.seen()
		periods(1)
	}
	if trims != 0 {
		t.Fatalf("trimmed %d times during a burst", trims)
	}
	periods(1) // the first quiet period after the burst
	if trims != 1 {
		t.Fatalf("trimmed %d times after a burst and a quiet period, want 1", trims)
	}
	periods(5)
	if trims != 1 {
		t.Fatalf("trimmed again (%d times) with no new requests", trims)
	}
	m.seen() // a new burst of one: trimmed once more after a quiet period
	periods(2)
	if trims != 2 {
		t.Fatalf("trimmed %d times after a second burst, want 2", trims)
	}
}

// TestMemTrimmerRuns: run trims on its own clock and stops with ctx.
func TestMemTrimmerRuns(t *testing.T) {
	trimmed := make(chan struct{}, 1)
	m := &memTrimmer{quiet: 5 * time.Millisecond, free: func() {
		select {
		case trimmed <- struct{}{}:
		default:
		}
	}}
	m.seen()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.run(ctx); close(done) }()
	select {
	case <-trimmed:
	case <-time.After(30 * time.Second):
		t.Fatal("run never trimmed after a request")
	}
	cancel()
	<-done
}
