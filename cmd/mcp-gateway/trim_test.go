package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestMemTrimmerOncePerBurst: memory is handed back after a burst, and not
// again until new requests come; never when nothing happened.
func TestMemTrimmerOncePerBurst(t *testing.T) {
	var trims atomic.Int32
	m := &memTrimmer{quiet: 20 * time.Millisecond, free: func() { trims.Add(1) }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	time.Sleep(100 * time.Millisecond) // idle from the start: nothing to trim
	if n := trims.Load(); n != 0 {
		t.Fatalf("trimmed %d times with no requests", n)
	}
	// A burst of requests, then quiet.
	end := time.Now().Add(150 * time.Millisecond)
	for time.Now().Before(end) {
		m.seen()
		time.Sleep(2 * time.Millisecond)
	}
	deadline := time.Now().Add(10 * time.Second)
	for trims.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	after := trims.Load()
	if after == 0 {
		t.Fatal("no trim after a burst")
	}
	time.Sleep(100 * time.Millisecond) // several more quiet periods
	if n := trims.Load(); n != after {
		t.Fatalf("trimmed again (%d -> %d) with no new requests", after, n)
	}
}
