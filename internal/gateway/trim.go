package gateway

import (
	"context"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// memTrimmer hands memory back to the sandbox after a burst of requests.
// The Go runtime keeps freed heap for reuse and returns it to the OS only
// gradually; a gateway shares a small VM with the agent, and after a burst
// of calls it may sit idle for hours (or be snapshotted with the sandbox).
// Once requests have stopped for a quiet period, it forces a GC and returns
// free memory at once. It never touches sessions or servers.
type memTrimmer struct {
	requests atomic.Uint64 // requests seen so far
	quiet    time.Duration
	free     func() // nil: debug.FreeOSMemory

	// Used by tick only (the run goroutine): the request count at the
	// previous tick and at the latest trim.
	last, trimmed uint64
}

// seen records a request.
func (m *memTrimmer) seen() { m.requests.Add(1) }

// run trims after every burst until ctx is done.
func (m *memTrimmer) run(ctx context.Context) {
	t := time.NewTicker(m.quiet)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m.tick()
	}
}

// tick ends one quiet period: when no request came during it and some came
// since the last trim, memory is handed back.
func (m *memTrimmer) tick() {
	n := m.requests.Load()
	if n == m.last && n != m.trimmed {
		if m.free != nil {
			m.free()
		} else {
			debug.FreeOSMemory()
		}
		m.trimmed = n
	}
	m.last = n
}
