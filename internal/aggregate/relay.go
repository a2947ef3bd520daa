package aggregate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/rawjson"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// NewClient returns the MCP client the gateway uses to talk to server. Its
// handlers carry the server's name, so that whatever the server sends is
// relayed to the right place.
func (g *Gateway) NewClient(server string) *mcp.Client {
	c := mcp.NewClient(&mcp.Implementation{Name: "mcp-gateway", Version: g.version}, &mcp.ClientOptions{
		Capabilities: UpstreamCapabilities(),
		ToolListChangedHandler: func(ctx context.Context, req *mcp.ToolListChangedRequest) {
			g.relist(server, req.Session, "tools")
		},
		PromptListChangedHandler: func(ctx context.Context, req *mcp.PromptListChangedRequest) {
			g.relist(server, req.Session, "prompts")
		},
		ResourceListChangedHandler: func(ctx context.Context, req *mcp.ResourceListChangedRequest) {
			g.relist(server, req.Session, "resources")
		},
		// From stdio servers, resources/updated is relayed as sent by
		// Intercept; this handler serves other transports.
		ResourceUpdatedHandler: func(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			if b, err := json.Marshal(req.Params); err == nil {
				g.relayResourceUpdated(server, b)
			}
		},
		// Progress and log messages from stdio servers are relayed by
		// Intercept, in order; these handlers serve other transports.
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			g.relayProgress(req.Params, nil)
		},
		LoggingMessageHandler: func(ctx context.Context, req *mcp.LoggingMessageRequest) {
			g.relayLog(server, req.Params, nil)
		},
		CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			c, err := g.caller(server, "sampling", func(caps *mcp.ClientCapabilities) bool { return caps.Sampling != nil })
			if err != nil {
				return nil, err
			}
			if c.ss == nil {
				return nil, noSessionFor("sampling")
			}
			defer c.hold()() // the agent is the one being waited on
			return c.ss.CreateMessage(c.ctx, req.Params)
		},
		// Set so that the elicitation capability is advertised upstream;
		// requests are answered by the middleware below.
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return g.elicit(server, req)
		},
	})
	// roots/list is answered as a stdio server's is (rootsRaw).
	// The SDK client checks a form elicitation's schema before its handler
	// runs and refuses schemas other clients accept (e.g. a titled
	// multi-select whose items carry "type" beside "anyOf"). The agent's
	// client is the one to judge the schema, so the gateway relays it as is.
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.ElicitRequest); ok && method == "elicitation/create" {
				return g.elicit(server, r)
			}
			if method == "roots/list" {
				// The rule of stdio servers' requests (rootsRaw): the
				// calling session's roots, or outside any call those of
				// the only session connected.
				var params json.RawMessage
				if r, ok := req.(*mcp.ListRootsRequest); ok && r.Params != nil {
					params, _ = json.Marshal(r.Params)
				}
				res, err := g.rootsRaw(ctx, server, params)
				if err != nil {
					return nil, err
				}
				return &rawResult{raw: res}, nil
			}
			return next(ctx, method, req)
		}
	})
	g.mu.Lock()
	g.clients[server] = c
	g.mu.Unlock()
	return c
}

// elicit relays an elicitation request to the calling agent session.
func (g *Gateway) elicit(server string, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	c, err := g.caller(server, "elicitation", func(caps *mcp.ClientCapabilities) bool { return caps.Elicitation != nil })
	if err != nil {
		return nil, err
	}
	if c.ss == nil {
		return nil, noSessionFor("elicitation")
	}
	defer c.hold()() // the agent is the one being waited on
	return c.ss.Elicit(c.ctx, req.Params)
}

// noSessionFor is the error of a server's request that reaches the SDK
// client's handlers (not ServeRequest) during a session-less 2026-era
// agent's call: there is no session to send it on, as there is none on the
// SDK path, whose stateless session refuses requests.
func noSessionFor(feature string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("mcp-gateway: %s request during a 2026-era agent's request, which has no session to send it on", feature)}
}

// Intercept relays progress and log notifications from a stdio server on the
// transport's reader, before any later message of that server is read. The
// SDK's client handles notifications on a separate goroutine and hands a
// call's result to the caller at once, so a progress notification sent just
// before the result could otherwise reach the agent after it (see the notes).
// It reports whether it consumed the message.
func (g *Gateway) Intercept(server string, req *jsonrpc.Request) bool {
	switch req.Method {
	case "notifications/progress":
		var p mcp.ProgressNotificationParams
		if json.Unmarshal(req.Params, &p) != nil {
			return false
		}
		g.relayProgress(&p, req.Params)
		return true
	case "notifications/message":
		var p mcp.LoggingMessageParams
		if json.Unmarshal(req.Params, &p) != nil {
			return false
		}
		g.relayLog(server, &p, req.Params)
		return true
	case "notifications/tasks/status":
		g.relayTaskStatus(server, req.Params)
		return true
	case "notifications/resources/updated":
		g.relayResourceUpdated(server, req.Params)
		return true
	}
	return false
}

// relayResourceUpdated sends a server's notifications/resources/updated to
// every agent session and listen stream subscribed to the URI (under the
// URI the agents subscribed to, which may be a rewritten one), with the
// params as the server sent them otherwise (a listen stream's carry its
// subscriptionId). The gateway keeps who subscribed
// (changeSubscription): subscriptions made on the fast path never reach
// the SDK's own table.
func (g *Gateway) relayResourceUpdated(server string, params json.RawMessage) {
	var p struct {
		URI string `json:"uri"`
	}
	if json.Unmarshal(params, &p) != nil || p.URI == "" {
		return
	}
	uri := g.subs.exported(server, p.URI)
	if uri != p.URI {
		b, err := rawjson.SetString(params, "uri", uri)
		if err != nil {
			return
		}
		params = b
	}
	for _, h := range g.subs.subscribers(uri, g.liveHolders()) {
		switch h := h.(type) {
		case *mcp.ServerSession:
			if a := agentConnOf(h); a != nil {
				_ = a.notification(context.Background(), "notifications/resources/updated", params)
			}
		case *listener:
			h.send("notifications/resources/updated", params) // listen.go
		}
	}
}

// relayProgress sends a server's progress notification to the call it
// belongs to, with the caller's own token. raw is the notification's params
// as the server sent them, when known.
//
// A call the agent cancelled keeps its token until the server is done with
// it (see settle): a server connected directly would still deliver the
// progress it goes on sending, so the gateway relays it too, on the
// session's own stream (the call's has ended), where the agent's client
// treats it as it would directly: as progress of a request it gave up on.
func (g *Gateway) relayProgress(p *mcp.ProgressNotificationParams, raw json.RawMessage) {
	r, ok := g.progress.lookup(p.ProgressToken)
	if !ok {
		return
	}
	r.call.progressed() // the server is at work: its wait starts again
	if !r.call.hasAgent() {
		return
	}
	tok := r.raw // the caller's token as it wrote it
	if tok == nil {
		tok, _ = json.Marshal(r.token)
	}
	if raw == nil {
		raw, _ = json.Marshal(p)
	}
	out, err := rawjson.SetMember(raw, progressKey, tok)
	if err != nil {
		return
	}
	ctx := r.call.ctx
	switch {
	case ctx.Err() != nil:
		ctx = context.Background() // the session's own stream
	case r.call.notify != nil:
		_ = r.call.notify("notifications/progress", out)
		return
	}
	if r.call.ss == nil {
		return // a session-less agent's request that is over: no stream is left
	}
	if a := agentConnOf(r.call.ss); a != nil {
		// As the server sent it, with the caller's token (the SDK's
		// NotifyProgress would encode it anew).
		_ = a.notification(ctx, "notifications/progress", out)
		return
	}
	typed := *p
	typed.ProgressToken = r.token
	_ = r.call.ss.NotifyProgress(ctx, &typed)
}

// settling is the error of a request the caller cancelled, for which the
// server may still send progress until Settled is closed
// (supervisor.CancelledError).
type settling interface {
	error
	Settled() <-chan struct{}
}

// settle runs release, which forgets a call's progress token, at once; or,
// when the call was cancelled while the server may still send its
// progress, once the server is done with it.
func settle(err error, release func()) {
	var s settling
	if errors.As(err, &s) {
		go func() {
			<-s.Settled()
			release()
		}()
		return
	}
	release()
}

// relayLog sends a server's log message to the session of the call it most
// likely belongs to (see inflight.latest), or to every session when no call
// is in flight. The logger field names the server (added where servers
// that name a logger put it, before data, when the server named none).
// Each session's logging/setLevel is honored by the SDK.
func (g *Gateway) relayLog(server string, p *mcp.LoggingMessageParams, raw json.RawMessage) {
	out := *p
	if out.Logger == "" {
		out.Logger = server
	} else {
		out.Logger = server + "/" + out.Logger
	}
	c, _ := g.calls.latest(server)
	if c != nil && c.notify != nil && c.ctx.Err() == nil {
		// The SDK filters by the session's level; here the gateway does.
		if !g.logsAt(c.ss, out.Level) {
			return
		}
		var b json.RawMessage
		var err error
		if raw != nil {
			b, err = rawjson.SetStringBefore(raw, "logger", out.Logger, "data")
		} else {
			b, err = logParams(&out)
		}
		if err == nil {
			_ = c.notify("notifications/message", b)
		}
		return
	}
	// As the server sent it, tagged, when it came raw; the gateway applies
	// each session's level as the SDK's Log would.
	var tagged json.RawMessage
	if raw != nil {
		tagged, _ = rawjson.SetStringBefore(raw, "logger", out.Logger, "data")
	} else {
		tagged, _ = logParams(&out)
	}
	send := func(ctx context.Context, ss *mcp.ServerSession, admit func(*mcp.ServerSession, mcp.LoggingLevel) bool) {
		if a := agentConnOf(ss); a != nil && tagged != nil {
			if admit(ss, out.Level) {
				_ = a.notification(ctx, "notifications/message", tagged)
			}
			return
		}
		_ = ss.Log(ctx, &out)
	}
	if c != nil && c.hasAgent() && c.ctx.Err() == nil {
		if c.ss != nil {
			send(c.ctx, c.ss, g.logsAt)
		}
		// A session-less agent's request on the raw path: it set no log
		// level (or it would not be there), so nothing reaches it, as on
		// the SDK path.
		return
	}
	// Outside any call, a session that set no level gets the message too:
	// the server decided to send it, as it would to a client connected
	// directly (the spec leaves what to send before logging/setLevel to
	// the server). During a call, only sessions that set a level get the
	// call's messages, so that the fast path answers every other call with
	// plain JSON.
	for ss := range g.server.Sessions() {
		send(context.Background(), ss, g.logsOutsideCallAt)
	}
}

// logParams encodes a log message that came decoded (through the SDK
// client: a remote's standalone stream) in the schema's member order, level,
// logger, data, as servers send it, rather than the SDK type's.
func logParams(p *mcp.LoggingMessageParams) (json.RawMessage, error) {
	v := struct {
		Meta   mcp.Meta         `json:"_meta,omitempty"`
		Level  mcp.LoggingLevel `json:"level"`
		Logger string           `json:"logger,omitempty"`
		Data   any              `json:"data"`
	}{p.Meta, p.Level, p.Logger, p.Data}
	return json.Marshal(&v)
}

// caller finds the agent session a server-to-client request belongs to and
// checks that its client supports the feature; otherwise the server gets a
// proper error at once instead of a hang.
func (g *Gateway) caller(server, feature string, supports func(*mcp.ClientCapabilities) bool) (*call, error) {
	c, exact := g.calls.latest(server)
	if c == nil || !c.hasAgent() {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: fmt.Sprintf("mcp-gateway: %s request from %q outside any agent request; nothing to route it to", feature, server)}
	}
	if !exact {
		// Written on the server's reader, outside any request's context:
		// the call it routes to gives the line its trace.
		g.log.Info().Ctx(c.ctx).Str("server", server).Str("feature", feature).Msg("several sessions call this server; routing to the latest caller")
	}
	if ip := c.initializeParams(); ip != nil && (ip.Capabilities == nil || !supports(ip.Capabilities)) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: fmt.Sprintf("mcp-gateway: the agent's client does not support %s", feature)}
	}
	return c, nil
}

// relist re-lists one kind of item of a server after it announced a change.
// It runs off the notification goroutine: the SDK handles an upstream's
// notifications one at a time, and listing waits for responses.
//
// A change announced while one agent session's calls are in flight to the
// server is most likely that call's doing (a tool that adds tools): the
// re-list's log lines carry that call's trace ids (telemetry.WithIDsOf),
// not its context, whose end must not end the re-list. The gateway cannot
// tell such a change from one the server made on its own; with calls of
// several sessions in flight it does not guess.
func (g *Gateway) relist(server string, cs *mcp.ClientSession, kind string) {
	about := context.Background()
	if g.tel != nil {
		if c, exact := g.calls.latest(server); c != nil && exact {
			about = c.ctx
		}
	}
	go func() {
		// Bounded like the first listing: a server that stops answering
		// must not hold this goroutine forever.
		ctx, cancel := context.WithTimeout(context.Background(), extrasTimeout)
		defer cancel()
		ctx = telemetry.WithIDsOf(ctx, about)
		caps := cs.InitializeResult().Capabilities
		if caps == nil {
			return
		}
		g.mu.RLock()
		rc, ok := g.raws[server]
		g.mu.RUnlock()
		if !ok || rc.cs != cs {
			// A session whose start has not reached Sync yet (Sync lists
			// it), or one a restart replaced.
			return
		}
		var err error
		switch kind {
		case "tools":
			var tools []*mcp.Tool
			var rawTools map[string]json.RawMessage
			if tools, rawTools, err = listTools(ctx, cs, caps, rc.raw); err == nil {
				tools = g.visibleTools(ctx, server, tools)
				g.mu.Lock()
				g.tools.setServer(server, tools, rawTools)
				g.rebuildLocked(true, false, false)
				g.mu.Unlock()
			}
		case "prompts":
			var prompts []*mcp.Prompt
			var rawPrompts map[string]json.RawMessage
			if prompts, rawPrompts, err = listPrompts(ctx, cs, caps, rc.raw); err == nil {
				g.mu.Lock()
				g.prompts.setServer(server, prompts, rawPrompts)
				g.rebuildLocked(false, true, false)
				g.mu.Unlock()
			}
		case "resources":
			var res resourceListing
			if res, err = listResources(ctx, cs, caps, rc.raw); err == nil {
				g.mu.Lock()
				g.res.setServer(server, res.resources, res.templates, res.raw, res.tplRaw)
				g.rebuildLocked(false, false, true)
				g.mu.Unlock()
			}
		}
		if err != nil {
			g.log.Warn().Ctx(ctx).Err(err).Str("server", server).Str("kind", kind).Msg("re-list after list_changed")
		}
	}()
}
