package aggregate

import (
	"context"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Per-session state the gateway mirrors upstream: the agents' roots and log
// levels. Upstreams are shared by every session, so what they get is the
// union of the sessions' roots and the most verbose level any session asked
// for; the SDK then filters log messages per session.

var levelOrder = []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// refreshRoots asks a session for its roots and pushes the union of all
// sessions' roots to every upstream client (which tells its server with
// roots/list_changed). It runs in the background: the session may only be
// able to answer once its client has opened a stream.
func (g *Gateway) refreshRoots(ss *mcp.ServerSession) {
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.RootsV2 == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := ss.ListRoots(ctx, nil)
		if err != nil {
			g.log.Debug().Err(err).Str("session", ss.ID()).Msg("roots/list")
			return
		}
		g.mu.Lock()
		if g.sessionRoots == nil {
			g.sessionRoots = make(map[*mcp.ServerSession][]*mcp.Root)
		}
		g.sessionRoots[ss] = res.Roots
		live := make(map[*mcp.ServerSession]bool)
		for s := range g.server.Sessions() {
			live[s] = true
		}
		var union []*mcp.Root
		seen := make(map[string]bool)
		for s, roots := range g.sessionRoots {
			if !live[s] {
				delete(g.sessionRoots, s)
				continue
			}
			for _, r := range roots {
				if r != nil && !seen[r.URI] {
					seen[r.URI] = true
					union = append(union, r)
				}
			}
		}
		slices.SortFunc(union, func(a, b *mcp.Root) int {
			if a.URI < b.URI {
				return -1
			}
			if a.URI > b.URI {
				return 1
			}
			return 0
		})
		old := g.roots
		g.roots = union
		clients := make([]*mcp.Client, 0, len(g.clients))
		for _, c := range g.clients {
			clients = append(clients, c)
		}
		g.mu.Unlock()
		var gone []string
		for _, r := range old {
			if !seen[r.URI] {
				gone = append(gone, r.URI)
			}
		}
		for _, c := range clients {
			if len(gone) > 0 {
				c.RemoveRoots(gone...)
			}
			if len(union) > 0 {
				c.AddRoots(union...)
			}
		}
	}()
}

// pushLogLevel records a session's logging/setLevel and, when the most
// verbose level over all sessions changes, sets it on every upstream that
// logs.
func (g *Gateway) pushLogLevel(ctx context.Context, req mcp.Request) {
	r, ok := req.(*mcp.ServerRequest[*mcp.SetLoggingLevelParams])
	if !ok || r.Params == nil {
		return
	}
	g.mu.Lock()
	if g.levels == nil {
		g.levels = make(map[*mcp.ServerSession]mcp.LoggingLevel)
	}
	g.levels[r.Session] = r.Params.Level
	lvl := g.logLevelLocked()
	changed := lvl != g.upLevel
	g.upLevel = lvl
	var ups []Upstream
	for name, c := range g.caps {
		if c.Logging != nil {
			ups = append(ups, g.upstreams[name])
		}
	}
	g.mu.Unlock()
	if !changed {
		return
	}
	for _, up := range ups {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = up.Do(ctx, func(cs *mcp.ClientSession) error {
				return cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: lvl})
			})
		}()
	}
}

// logLevelLocked is the most verbose level any live session asked for.
func (g *Gateway) logLevelLocked() mcp.LoggingLevel {
	best := -1
	live := make(map[*mcp.ServerSession]bool)
	for s := range g.server.Sessions() {
		live[s] = true
	}
	for s, l := range g.levels {
		if !live[s] {
			delete(g.levels, s)
			continue
		}
		if i := slices.Index(levelOrder, l); i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return levelOrder[best]
}

// restore renews on a (re)started server what agents set up before: their
// resource subscriptions and the log level.
func (g *Gateway) restore(ctx context.Context, server string, cs *mcp.ClientSession) {
	for _, orig := range g.subs.of(server) {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: orig}); err != nil {
			g.log.Warn().Err(err).Str("server", server).Msg("resubscribe after restart")
		}
	}
	g.mu.RLock()
	lvl := g.upLevel
	caps := g.caps[server]
	g.mu.RUnlock()
	if lvl != "" && caps != nil && caps.Logging != nil {
		_ = cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: lvl})
	}
}
