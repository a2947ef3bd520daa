package aggregate

// The 2026-07-28 revision's caching hints: a cacheable result (see
// cacheableMethod) says for how long a client may reuse it (ttlMs) and
// whether a shared cache may hold it (cacheScope "public") or only the
// requesting user's client ("private"). A result the gateway merges from
// several servers must not loosen any server's hint: its ttlMs is the
// smallest, and it is private if any contributor's is.

// cacheHint is one result's ttlMs and cacheScope.
type cacheHint struct {
	TTLMs int
	Scope string // "public" or "private"
}

// legacyHint is the hint of a result from a 2025-era server, which gives
// none: immediately stale, for the requesting user only. An absent scope
// means "public" in the revision, but a 2025 server never chose that, and
// its lists may depend on the (shared) session.
func legacyHint() cacheHint { return cacheHint{TTLMs: 0, Scope: "private"} }

// mergeCacheHints is the hint of a result merged from results with hints:
// the smallest ttlMs (a negative one counts as 0), private if any is
// private or names a scope the revision does not know (an empty scope is
// the revision's default, public). No contributor: a legacy hint, since
// nothing vouches for a longer life.
func mergeCacheHints(hints ...cacheHint) cacheHint {
	if len(hints) == 0 {
		return legacyHint()
	}
	out := cacheHint{TTLMs: max(hints[0].TTLMs, 0), Scope: "public"}
	for _, h := range hints {
		out.TTLMs = min(out.TTLMs, max(h.TTLMs, 0))
		if h.Scope != "public" && h.Scope != "" {
			out.Scope = "private"
		}
	}
	return out
}

// listHint is the hint of a list merged over every server: each server's
// own hint, merged. Every upstream speaks the 2025 era on a shared session
// today, so each contributes legacyHint; a 2026 upstream's list result
// will carry its own.
func (g *Gateway) listHint() cacheHint {
	g.mu.RLock()
	servers := g.serversLocked()
	g.mu.RUnlock()
	hints := make([]cacheHint, 0, len(servers))
	for range servers {
		hints = append(hints, legacyHint())
	}
	return mergeCacheHints(hints...)
}
