package supervisor

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// lifecycle is what both supervisors (Server for stdio, Remote for HTTP)
// keep about their upstream for callers and /health: its state, a channel
// closed on every change of it (callers waiting for a restart select on
// it), the restart count, the last exit and error, and how the first start
// ended. mu also guards the fields of the embedding supervisor.
type lifecycle struct {
	mu       sync.Mutex
	state    State
	changed  chan struct{} // closed and replaced on every state change
	restarts int
	lastExit string
	lastErr  string
	// started is closed once the first start has succeeded or failed;
	// startErr says which.
	started  chan struct{}
	startErr error
	// wake ends a restart's backoff early: a call that finds the upstream
	// restarting sends on it, so that it is started at once (the backoff
	// guards against crash loops, it is not meant to hold up callers).
	wake chan struct{}
	// retryFailed, when positive, lets a call wake a failed upstream too,
	// at most once per retryFailed (woken is when a call last did): a
	// remote that answered 404 to every reconnect is back the moment a
	// call finds it healthy, not after the slow retry. Zero (stdio
	// servers): a crash loop fails calls at once and waits for nothing.
	retryFailed time.Duration
	woken       time.Time
}

func (l *lifecycle) init() {
	l.state = StateStarting
	l.changed = make(chan struct{})
	l.started = make(chan struct{})
	l.wake = make(chan struct{}, 1)
}

// setStateLocked changes the state and wakes everyone waiting on changed.
func (l *lifecycle) setStateLocked(st State) {
	l.state = st
	close(l.changed)
	l.changed = make(chan struct{})
}

// WaitStarted blocks until the first start has succeeded or failed, or ctx
// is done. Launch uses it to decide between "ready" and a failure that
// names the server.
func (l *lifecycle) WaitStarted(ctx context.Context) error {
	select {
	case <-l.started:
		return l.startErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// markStarted records how the first start ended; later calls do nothing.
func (l *lifecycle) markStarted(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.started:
	default:
		l.startErr = err
		close(l.started)
	}
}

// statusLocked reports the lifecycle as the Status of server name with pid.
func (l *lifecycle) statusLocked(name string, pid int) Status {
	return Status{Name: name, State: l.state, PID: pid, Restarts: l.restarts, LastExit: l.lastExit, LastError: l.lastErr}
}

// lost records an instance (or a start) that ended with err after it began,
// resets the embedding supervisor's live instance with clearLocked, and
// waits out the backoff of p. failures counts fast failures in a row: it
// starts over after an instance that served calls (served: it was ready
// and answered at least one, so it is not crash-looping, however soon it
// was killed) or stayed up p.StableAfter, and at p.FailAfter the state is
// failed rather than restarting. While restarting, a call that arrives
// ends the backoff at once (await). It reports false if ctx ended first.
func (l *lifecycle) lost(ctx context.Context, p *RestartPolicy, failures *int, began time.Time, served bool, err error, clearLocked func()) bool {
	if served || time.Since(began) >= p.StableAfter {
		*failures = 0
	}
	*failures++
	l.mu.Lock()
	clearLocked()
	l.restarts++
	l.lastErr = firstLine(err.Error())
	// A wake left by a call of an earlier wait must not cut this one
	// short; calls that see the new state wake it again.
	select {
	case <-l.wake:
	default:
	}
	wake := l.wake
	if *failures >= p.FailAfter {
		l.setStateLocked(StateFailed)
		if l.retryFailed <= 0 {
			wake = nil // a crash loop: calls fail at once and wait for nothing
		}
	} else {
		l.setStateLocked(StateRestarting)
	}
	l.mu.Unlock()
	t := time.NewTimer(p.delay(*failures))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-wake:
		return true
	case <-ctx.Done():
		return false
	}
}

// await waits until usable, called with mu held and the current state,
// reports true (it then takes what it needs of the embedding supervisor),
// or fails at once when the upstream is failed or stopped, or when ctx ends
// first: calls wait for a restart, but never for a crash loop. With
// retryFailed set, a call that finds the upstream failed (and none did in
// the last retryFailed) has it tried at once, and waits for that try.
func (l *lifecycle) await(ctx context.Context, usable func(State) bool) error {
	retried := false // this call woke a failed upstream once already
	for {
		l.mu.Lock()
		if usable(l.state) {
			l.mu.Unlock()
			return nil
		}
		st, changed, lastErr := l.state, l.changed, l.lastErr
		retry := st == StateFailed && !retried && l.retryFailed > 0 && time.Since(l.woken) >= l.retryFailed
		if retry {
			l.woken, retried = time.Now(), true
		}
		l.mu.Unlock()
		switch {
		case st == StateRestarting, retry:
			select { // start it now rather than after the backoff
			case l.wake <- struct{}{}:
			default:
			}
		case st == StateFailed:
			return fmt.Errorf("%w: failed: %s", ErrUnavailable, lastErr)
		case st == StateStopped:
			return fmt.Errorf("%w: stopped", ErrUnavailable)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			if lastErr != "" {
				return fmt.Errorf("%w: still %s after: %s", ErrUnavailable, st, lastErr)
			}
			return fmt.Errorf("%w: still %s: %w", ErrUnavailable, st, ctx.Err())
		}
	}
}
