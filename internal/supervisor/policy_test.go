package supervisor

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestBackoffDoublesToCap pins the documented numbers of the default policy:
// the wait after the nth fast failure lies in [d/2, d] with d = 100ms
// doubled n-1 times and capped at 30s. The jitter only ever shortens a wait
// to half, so both bounds hold for every draw.
func TestBackoffDoublesToCap(t *testing.T) {
	var p RestartPolicy
	p.defaults()
	if p.MinBackoff != 100*time.Millisecond || p.MaxBackoff != 30*time.Second || p.FailAfter != 5 || p.StableAfter != 10*time.Second {
		t.Fatalf("defaults = %+v, want 100ms, 30s, 5, 10s", p)
	}
	want := 100 * time.Millisecond
	for n := 1; n <= 64; n++ {
		lo, hi := want/2, want
		var least, most time.Duration = hi + 1, 0
		for range 300 {
			d := p.delay(n)
			if d < lo || d > hi {
				t.Fatalf("delay(%d) = %v, want within [%v, %v]", n, d, lo, hi)
			}
			least, most = min(least, d), max(most, d)
		}
		// The jitter spreads the draws over the range rather than pinning
		// one end (300 draws: a spread below a quarter of it is
		// astronomically unlikely unless the jitter is gone).
		if most-least < (hi-lo)/4 {
			t.Errorf("delay(%d): draws only in [%v, %v] of [%v, %v]: no jitter", n, least, most, lo, hi)
		}
		want = min(2*want, 30*time.Second)
	}
}

// TestBackoffHonoursCustomBounds: a policy's own MinBackoff and MaxBackoff
// (the gateway's --max-backoff) are the ones applied.
func TestBackoffHonoursCustomBounds(t *testing.T) {
	p := RestartPolicy{MinBackoff: 10 * time.Millisecond, MaxBackoff: 45 * time.Millisecond}
	p.defaults()
	for n, hi := range map[int]time.Duration{1: 10 * time.Millisecond, 2: 20 * time.Millisecond, 3: 40 * time.Millisecond, 4: 45 * time.Millisecond, 1000: 45 * time.Millisecond} {
		for range 100 {
			if d := p.delay(n); d < hi/2 || d > hi {
				t.Fatalf("delay(%d) = %v, want within [%v, %v]", n, d, hi/2, hi)
			}
		}
	}
}

// TestFailAfterAndForgiveness drives lost, the one place the policy is
// applied, as a supervisor does: FailAfter-1 fast failures in a row leave
// the upstream restarting, the FailAfter-th marks it failed, and an
// instance that stayed up StableAfter wipes the count, so a server that
// crashes now and then is never failed for good.
func TestFailAfterAndForgiveness(t *testing.T) {
	p := RestartPolicy{MinBackoff: time.Microsecond, MaxBackoff: time.Microsecond, FailAfter: 4, StableAfter: time.Hour}
	p.defaults()
	var l lifecycle
	l.init()
	ctx := context.Background()
	failures := 0
	lose := func(began time.Time) State {
		t.Helper()
		if !l.lost(ctx, &p, &failures, began, false, errors.New("exit status 1"), func() {}) {
			t.Fatal("lost reported a cancelled context")
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.state
	}
	for i := 1; i < p.FailAfter; i++ {
		if st := lose(time.Now()); st != StateRestarting || failures != i {
			t.Fatalf("after fast failure %d: state %s, failures %d; want restarting, %d", i, st, failures, i)
		}
	}
	if st := lose(time.Now()); st != StateFailed {
		t.Fatalf("after %d fast failures: state %s, want failed", p.FailAfter, st)
	}
	// A run as long as StableAfter forgives everything before it: the
	// failure that ends it is the first of a new count.
	if st := lose(time.Now().Add(-p.StableAfter)); st != StateRestarting || failures != 1 {
		t.Fatalf("failure after a stable run: state %s, failures %d; want restarting, 1", st, failures)
	}
	// Just short of StableAfter is a fast failure.
	lose(time.Now().Add(-p.StableAfter + time.Minute))
	if failures != 2 {
		t.Fatalf("failure after a short run: failures %d, want 2", failures)
	}
	if l.restarts != p.FailAfter+2 {
		t.Errorf("restarts = %d, want %d (every loss counts, forgiven or not)", l.restarts, p.FailAfter+2)
	}
}

// transition is one change of a supervised server's state as a watcher saw it.
type transition struct {
	at       time.Time
	state    State
	restarts int
}

// watchStates records every state change of s until the test ends: it
// blocks on the lifecycle's change channel, so it sees each change as it
// happens rather than sampling.
func watchStates(t *testing.T, s *Server) func() []transition {
	t.Helper()
	var (
		mu   sync.Mutex
		seen []transition
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			s.mu.Lock()
			tr := transition{time.Now(), s.state, s.restarts}
			ch := s.changed
			s.mu.Unlock()
			mu.Lock()
			if n := len(seen); n == 0 || seen[n-1].state != tr.state || seen[n-1].restarts != tr.restarts {
				seen = append(seen, tr)
			}
			mu.Unlock()
			select {
			case <-ch:
			case <-stop:
				return
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return func() []transition {
		mu.Lock()
		defer mu.Unlock()
		return append([]transition(nil), seen...)
	}
}

// waitTransition waits until the watcher has seen a transition matching ok.
func waitTransition(t *testing.T, ctx context.Context, seen func() []transition, what string, ok func(transition) bool) transition {
	t.Helper()
	for {
		for _, tr := range seen() {
			if ok(tr) {
				return tr
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("never saw %s; transitions: %+v", what, seen())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestCrashLoopBacksOffThenFails runs a real server that exits at every
// start: the gaps between its restarts grow (each at least half the
// doubled backoff, so a backoff that never grows is seen), and it is
// failed exactly at the FailAfter-th failure, not one later.
func TestCrashLoopBacksOffThenFails(t *testing.T) {
	p := RestartPolicy{MinBackoff: 60 * time.Millisecond, MaxBackoff: 10 * time.Second, FailAfter: 4}
	s, _ := runServer(t, fixture.Options{ExitAtStart: 3}, Options{RestartPolicy: p})
	seen := watchStates(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	failed := waitTransition(t, ctx, seen, "failed", func(tr transition) bool { return tr.state == StateFailed })
	if failed.restarts != p.FailAfter {
		t.Errorf("failed after %d failures, want %d: %+v", failed.restarts, p.FailAfter, seen())
	}
	// The time between the nth and n+1th loss is the nth backoff plus a
	// start; the backoff alone is at least MinBackoff<<(n-1) / 2.
	var lossAt []time.Time
	for _, tr := range seen() {
		if tr.restarts == len(lossAt)+1 {
			lossAt = append(lossAt, tr.at)
		}
	}
	if len(lossAt) < p.FailAfter {
		t.Fatalf("saw %d losses, want %d: %+v", len(lossAt), p.FailAfter, seen())
	}
	for n := 1; n < len(lossAt); n++ {
		floor := (p.MinBackoff << (n - 1)) / 2
		if gap := lossAt[n].Sub(lossAt[n-1]); gap < floor {
			t.Errorf("restart %d came %v after the failure before it, want at least %v (backoff not growing)", n+1, gap, floor)
		}
	}
	if st := s.Status(); st.State != StateFailed || !strings.Contains(st.LastError, "exit status 3") {
		t.Errorf("status = %+v, want failed with the exit status", st)
	}
}

// TestOccasionalCrashIsForgiven: a real server that crashes once in a while,
// each time after running longer than StableAfter, keeps being restarted and
// is never failed, even with FailAfter at 2.
func TestOccasionalCrashIsForgiven(t *testing.T) {
	p := RestartPolicy{FailAfter: 2, StableAfter: 300 * time.Millisecond}
	s, _ := runServer(t, fixture.Options{}, Options{RestartPolicy: p})
	seen := watchStates(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := 1; i <= 3; i++ {
		ready := waitTransition(t, ctx, seen, "ready", func(tr transition) bool { return tr.state == StateReady && tr.restarts == i-1 })
		// The instance must outlive StableAfter: wait for that much uptime
		// (counted from when it was seen ready, later than its start).
		select {
		case <-time.After(time.Until(ready.at.Add(p.StableAfter))):
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
		if _, err := call(ctx, s, "crash", map[string]any{"code": 7}); err == nil || !strings.Contains(err.Error(), "exit status 7") {
			t.Fatalf("crash %d: %v", i, err)
		}
		after := waitTransition(t, ctx, seen, "the loss", func(tr transition) bool { return tr.restarts == i })
		if after.state != StateRestarting {
			t.Fatalf("crash %d after a stable run left the server %s, want restarting: %+v", i, after.state, seen())
		}
	}
	waitTransition(t, ctx, seen, "ready after the last crash", func(tr transition) bool { return tr.state == StateReady && tr.restarts == 3 })
}
