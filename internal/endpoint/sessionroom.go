package endpoint

import (
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
)

// reservation holds room for one session being initialized, from before
// the SDK creates it until its id is admitted or the initialize failed.
type reservation struct {
	l    *sessionLimit
	once sync.Once
}

// release gives the room back unless admit took it. Safe to call twice.
func (r *reservation) release() {
	r.once.Do(func() {
		r.l.mu.Lock()
		r.l.pending--
		r.l.mu.Unlock()
	})
}

// reserve makes room for a new session before the SDK creates it: when the
// bound is reached, the least recently used session with no work in flight
// is closed; when every session has work in flight, nothing is closed and
// the reason for refusing the new session is returned. A session serving a
// request, or one whose request the SDK is still handling after its client
// went away, is never closed for room: that would cancel another agent's
// call.
func (l *sessionLimit) reserve() (*reservation, string) {
	l.mu.Lock()
	if len(l.seen)+l.pending < l.max {
		l.pending++
		l.mu.Unlock()
		return &reservation{l: l}, ""
	}
	// Sessions can end without us seeing it (a failed initialize, a
	// shutdown): count only the live ones.
	live := make(map[string]*mcp.ServerSession)
	for ss := range l.server.Sessions() {
		live[ss.ID()] = ss
	}
	for sid := range l.seen {
		if _, ok := live[sid]; !ok {
			delete(l.seen, sid)
		}
	}
	var evict []*mcp.ServerSession
	for len(l.seen)+l.pending >= l.max {
		victim := l.lruIdleLocked(live)
		if victim == "" {
			break
		}
		if e := l.log.Debug(); e.Enabled() {
			for sid, u := range l.seen {
				e = e.Dict(sid, zerolog.Dict().Uint64("last", u.last).Int("active", u.active))
			}
			e.Str("victim", victim).Msg("session eviction candidates")
		}
		delete(l.seen, victim)
		if ss := live[victim]; ss != nil {
			evict = append(evict, ss)
			if l.closing == nil {
				l.closing = make(map[string]struct{})
			}
			l.closing[victim] = struct{}{}
		}
	}
	if len(l.seen)+l.pending >= l.max {
		n, pending := len(l.seen), l.pending
		l.mu.Unlock()
		l.closeSessions(evict, n)
		why := fmt.Sprintf("mcp-gateway holds %d sessions, the most allowed (--max-sessions %d), and every one has a request in flight; retry when one is done, or end an unused session with DELETE", n, l.max)
		if pending > 0 {
			why = fmt.Sprintf("mcp-gateway holds %d sessions and %d being initialized, the most allowed (--max-sessions %d), and every one has a request in flight; retry when one is done, or end an unused session with DELETE", n, pending, l.max)
		}
		return nil, why
	}
	l.pending++
	n := len(l.seen) + l.pending
	l.mu.Unlock()
	l.closeSessions(evict, n)
	return &reservation{l: l}, ""
}

// closeSessions closes sessions picked for room. Requests that reach one of
// them meanwhile are refused (start), so the close cancels no work.
func (l *sessionLimit) closeSessions(evict []*mcp.ServerSession, n int) {
	for _, ss := range evict {
		id := ss.ID()
		l.log.Info().Str("session", id).Int("sessions", n).Int("max", l.max).Str("why", "room for a new session; it had no request in flight").Msg("closing the least recently used session")
		// Close waits for the session's in-flight handlers; the new
		// session's initialize must not wait with it.
		go func() {
			ss.Close()
			l.mu.Lock()
			delete(l.closing, id)
			if len(l.closing) == 0 {
				l.closing = nil // a map that grew keeps its size
			}
			l.mu.Unlock()
		}()
		if l.closed != nil {
			l.closed(id)
		}
	}
}

// admit records a new session, taking the room its initialize reserved
// (r). A session that appears without a reservation (nil r: the SDK
// answered a request other than initialize with a session id) is recorded
// too; if that exceeds the bound, only idle sessions are closed for it.
func (l *sessionLimit) admit(id string, r *reservation) {
	l.mu.Lock()
	if r != nil {
		took := false
		r.once.Do(func() { took = true })
		if took {
			l.pending--
		}
	}
	l.clock++
	if u, ok := l.seen[id]; ok {
		u.last = l.clock
	} else {
		l.seen[id] = &sessionUse{last: l.clock}
	}
	if len(l.seen)+l.pending <= l.max {
		l.mu.Unlock()
		return
	}
	live := make(map[string]*mcp.ServerSession)
	for ss := range l.server.Sessions() {
		live[ss.ID()] = ss
	}
	var evict []*mcp.ServerSession
	for len(l.seen)+l.pending > l.max {
		victim := l.lruIdleLocked(live)
		if victim == "" || victim == id {
			break
		}
		delete(l.seen, victim)
		if ss := live[victim]; ss != nil {
			evict = append(evict, ss)
			if l.closing == nil {
				l.closing = make(map[string]struct{})
			}
			l.closing[victim] = struct{}{}
		}
	}
	n := len(l.seen)
	l.mu.Unlock()
	l.closeSessions(evict, n)
}

// lruIdleLocked picks the least recently used session with no work in
// flight: no request being served (a POST of notifications or responses
// is not work to lose) and none the SDK is still handling. It returns ""
// when every session is busy.
func (l *sessionLimit) lruIdleLocked(live map[string]*mcp.ServerSession) string {
	best := ""
	var bestLast uint64
	for sid, u := range l.seen {
		if u.calls > 0 {
			continue
		}
		if ss := live[sid]; ss != nil && l.inSDK[ss] > 0 {
			continue
		}
		if best == "" || u.last < bestLast {
			best, bestLast = sid, u.last
		}
	}
	return best
}
