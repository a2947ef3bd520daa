package aggregate

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Per-session state the gateway mirrors upstream: roots and log levels.
// Upstreams are shared by every session: a server asking for roots gets the
// roots of the session it is working for, and the log level upstream is the
// most verbose any session asked for; the SDK then filters log messages per
// session.

// levelRank is a log level's place from the most verbose (0: debug) to the
// least (7: emergency); -1 for a level MCP does not define.
func levelRank(l mcp.LoggingLevel) int {
	switch l {
	case "debug":
		return 0
	case "info":
		return 1
	case "notice":
		return 2
	case "warning":
		return 3
	case "error":
		return 4
	case "critical":
		return 5
	case "alert":
		return 6
	case "emergency":
		return 7
	}
	return -1
}

// sentinelRoot is added to upstream clients only to make the SDK send
// notifications/roots/list_changed; roots/list itself is answered by
// rootsRaw, so no server ever sees it.
const sentinelRoot = "mcp-gateway-internal://roots-changed"

// AgentReachable tells the servers that their roots may have changed when
// session ss has roots: an agent that can now be asked outside any call
// (initialized; over HTTP, its standalone stream open) changes what a
// server's roots/list outside a call gets (see rootsRaw). Servers ask for
// roots when the gateway starts them, before any agent is there, and get
// none; some (server-filesystem) never ask again unless told.
//
// Over HTTP it is called twice: at notifications/initialized and when the
// session's standalone stream opens. Only a session that can be asked
// counts: told earlier, a server would ask at once, and its request would
// wait for the stream (see rootsRaw) or, with none in time, get no roots.
// Each call also wakes the roots/list requests that wait for a stream.
func (g *Gateway) AgentReachable(ss *mcp.ServerSession) {
	g.mu.Lock()
	if g.reachWake != nil {
		close(g.reachWake) // wakes a server's roots/list waiting for it
		g.reachWake = nil
	}
	g.mu.Unlock()
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.RootsV2 == nil {
		return
	}
	g.mu.RLock()
	reachable := g.reachable
	g.mu.RUnlock()
	if reachable != nil && !reachable(ss) {
		return
	}
	g.rootsChanged()
}

// rootsChanged tells every server that the roots may have changed, when an
// agent says its roots changed.
func (g *Gateway) rootsChanged() {
	g.mu.RLock()
	clients := make([]*mcp.Client, 0, len(g.clients))
	for _, c := range g.clients {
		clients = append(clients, c)
	}
	g.mu.RUnlock()
	for _, c := range clients {
		c.AddRoots(&mcp.Root{URI: sentinelRoot})
	}
}

// pushLogLevel records a session's logging/setLevel and, when the most
// verbose level over all live sessions changes, sets it on every upstream
// that logs.
func (g *Gateway) pushLogLevel(ctx context.Context, req mcp.Request) {
	r, ok := req.(*mcp.ServerRequest[*mcp.SetLoggingLevelParams])
	if !ok || r.Params == nil {
		return
	}
	g.mu.Lock()
	if g.levels == nil {
		g.levels = make(map[*mcp.ServerSession]mcp.LoggingLevel)
	}
	if _, known := g.levels[r.Session]; !known {
		go g.forgetLevelWhenDone(r.Session)
	}
	g.levels[r.Session] = r.Params.Level
	lvl := g.logLevelLocked()
	changed := lvl != g.upLevel
	g.upLevel = lvl
	var ups []Upstream
	if changed {
		for name, c := range g.caps {
			if c.Logging != nil {
				ups = append(ups, g.upstreams[name])
			}
		}
	}
	g.mu.Unlock()
	if !changed {
		return
	}
	// The agent's next call may go to any of them: answer the agent once
	// they have the level, or it would miss that call's messages. A server
	// slow to answer gets the level in the background.
	var wg sync.WaitGroup
	for _, up := range ups {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = up.Do(ctx, func(cs *mcp.ClientSession) error {
				return cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: lvl})
			})
		})
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(levelPushWait):
	case <-ctx.Done():
	}
}

// levelPushWait bounds how long an agent's logging/setLevel waits for the
// servers to take the level.
const levelPushWait = 2 * time.Second

// forgetLevelWhenDone drops a session's level once the session ends
// (however it ends), so that g.levels holds live sessions only; the
// upstreams' level follows at the next logging/setLevel. Keeping this
// table, rather than checking every entry against the SDK's session list
// (which Server.Sessions copies), keeps a setLevel from costing a walk of
// every session.
func (g *Gateway) forgetLevelWhenDone(ss *mcp.ServerSession) {
	_ = ss.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.levels, ss)
}

// logLevelLocked is the most verbose level any live session asked for.
func (g *Gateway) logLevelLocked() mcp.LoggingLevel {
	var best mcp.LoggingLevel
	for _, l := range g.levels {
		if i := levelRank(l); i >= 0 && (best == "" || i < levelRank(best)) {
			best = l
		}
	}
	return best
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

// logsOutsideCallAt reports whether session ss gets a log message of level
// that belongs to no call: when it set no level (the server decides), or
// logsAt; a 2026-era request's session only by logsAt.
func (g *Gateway) logsOutsideCallAt(ss *mcp.ServerSession, level mcp.LoggingLevel) bool {
	if statelessSession(ss) {
		return g.logsAt(ss, level) // a 2026-era request's level is its own (era.go)
	}
	g.mu.RLock()
	_, set := g.levels[ss]
	g.mu.RUnlock()
	return !set || g.logsAt(ss, level)
}

// logsAt reports whether session ss gets log messages of level: it set a
// level at most as severe (logging/setLevel). A session that set none gets
// none, as the SDK decides for its own sessions.
func (g *Gateway) logsAt(ss *mcp.ServerSession, level mcp.LoggingLevel) bool {
	g.mu.RLock()
	set, ok := g.levels[ss]
	g.mu.RUnlock()
	if !ok {
		return false
	}
	return levelRank(level) >= levelRank(set)
}
