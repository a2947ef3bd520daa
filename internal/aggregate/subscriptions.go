package aggregate

import "sync"

// subscriptions counts the agents' resource subscriptions per server, so a
// restarted server is resubscribed and an update maps back to the URI the
// agents subscribed to.
type subscriptions struct {
	mu sync.Mutex
	m  map[string]map[string]*sub // server -> original URI
	// sessions are the holders subscribed to each exported URI: a
	// 2025-era agent's session (*mcp.ServerSession) or a 2026-era agent's
	// open subscriptions/listen stream (*listener).
	sessions map[string]map[holder]struct{}
}

// holder is who holds a subscription to an exported URI: an agent session
// (*mcp.ServerSession) or a listen stream (*listener, listen.go).
type holder any

// liveness reports whether a holder still exists: a session the SDK still
// holds, or a listen stream still open. A holder that is gone is forgotten.
type liveness func(holder) bool

type sub struct {
	exported string
	n        int
}

func newSubscriptions() *subscriptions {
	return &subscriptions{m: make(map[string]map[string]*sub), sessions: make(map[string]map[holder]struct{})}
}

// setSession records that ss subscribed to the exported uri, or
// unsubscribed, and reports whether it was subscribed before.
func (s *subscriptions) setSession(uri string, ss holder, on bool) (was bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.sessions[uri]
	_, was = m[ss]
	if on {
		if m == nil {
			m = make(map[holder]struct{})
			s.sessions[uri] = m
		}
		m[ss] = struct{}{}
		return was
	}
	delete(m, ss)
	if len(m) == 0 {
		delete(s.sessions, uri)
	}
	return was
}

// heldElsewhere reports whether a live holder other than ss is
// subscribed to the exported uri; holders that ended are forgotten.
func (s *subscriptions) heldElsewhere(uri string, ss holder, live liveness) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	held := false
	for o := range s.sessions[uri] {
		switch {
		case !live(o):
			delete(s.sessions[uri], o)
		case o != ss:
			held = true
		}
	}
	return held
}

// subscribers returns the live holders subscribed to the exported uri;
// holders that ended are forgotten.
func (s *subscriptions) subscribers(uri string, live liveness) []holder {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []holder
	for o := range s.sessions[uri] {
		if !live(o) {
			delete(s.sessions[uri], o)
			continue
		}
		out = append(out, o)
	}
	if len(s.sessions[uri]) == 0 {
		delete(s.sessions, uri)
	}
	return out
}

func (s *subscriptions) set(server, orig, exported string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.m[server]
	if m == nil {
		m = make(map[string]*sub)
		s.m[server] = m
	}
	e := m[orig]
	if on {
		if e == nil {
			e = &sub{exported: exported}
			m[orig] = e
		}
		e.n++
		return
	}
	if e != nil {
		if e.n--; e.n <= 0 {
			delete(m, orig)
		}
	}
}

func (s *subscriptions) of(server string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var uris []string
	for u := range s.m[server] {
		uris = append(uris, u)
	}
	return uris
}

func (s *subscriptions) exported(server, orig string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.m[server][orig]; e != nil {
		return e.exported
	}
	return orig
}
