package aggregate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/rawjson"
)

// subscriptions/listen, merged over the servers (the 2026-07-28 era).
//
// A 2026-era agent hears of changes on one long-lived request: its filter
// asks for list changes (tools, prompts, resources) and for
// notifications/resources/updated of some URIs; the server acknowledges
// the part it honours, then sends each matching notification with the
// listen request's id as _meta's io.modelcontextprotocol/subscriptionId,
// until the agent closes the stream. The SDK's own handler knows nothing
// of the servers behind the gateway (it would acknowledge any URI, fail
// the whole listen when one server refused its subscription, send updates
// without the subscriptionId, and release the servers' subscriptions with
// an ended context, so that half of them stayed), so the gateway answers
// listen itself:
//
//   - list changes: those of the merged lists, which the gateway already
//     announces when a server's list changes (announce), for the kinds the
//     gateway advertises;
//   - resource URIs: each exported URI is subscribed at the server that
//     owns it (under its own URI), through the same reference-counted
//     table as a 2025-era session's resources/subscribe (changeSubscription),
//     the stream being the holder: a 2025 server gets resources/subscribe
//     on the shared session, a 2026 server a subscriptions/listen of its own
//     (the SDK's ClientSession.Subscribe); the URIs the gateway could not
//     route or subscribe are left out of the acknowledgement;
//   - task ids (the tasks extension's taskIds): the status of those tasks
//     as notifications/tasks (taskpush.go);
//   - when the stream closes, the URIs held only for it are released at
//     their servers, with a context of their own.
//
// Nothing outlives the open stream, which lives on the replica holding it:
// nothing for another replica to share.

// subscriptionIDKey is the _meta member naming the listen request a
// notification belongs to.
const subscriptionIDKey = "io.modelcontextprotocol/subscriptionId"

// listenReleaseTimeout bounds the release of a closed stream's
// subscriptions at the servers: the agent is gone, nothing waits on it.
const listenReleaseTimeout = 30 * time.Second

// listener is one open subscriptions/listen stream of a 2026-era agent.
type listener struct {
	id json.RawMessage // the listen request's JSON-RPC id: the subscriptionId
	// The list changes it asked for that the gateway honours.
	tools, prompts, resources bool
	// taskIDs are the tasks whose status it listens to (taskpush.go), set
	// before the stream is added.
	taskIDs []string
	// notify sends a notification on the stream (the listen request's own,
	// over HTTP; the connection, over stdio).
	notify func(method string, params json.RawMessage) error

	ended chan struct{} // closed when the gateway stops (EndListens)

	mu sync.Mutex // held while sending, so that the acknowledgement goes first
	// open is true from the acknowledgement until the stream closes; a
	// notification at another time is dropped.
	open bool
}

// send sends a notification with params (nil: none) on l's stream, with
// its subscriptionId in _meta.
func (l *listener) send(method string, params json.RawMessage) {
	params = withSubscriptionID(params, l.id)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open {
		_ = l.notify(method, params)
	}
}

// listeners are the open listen streams, for the list changes and the
// end at shutdown.
type listeners struct {
	mu     sync.Mutex
	set    map[*listener]struct{}
	ending bool          // EndListens was called: a new stream ends at once
	gone   chan struct{} // closed and replaced at each remove, for EndListens
}

func newListeners() *listeners {
	return &listeners{set: make(map[*listener]struct{}), gone: make(chan struct{})}
}

// add registers l, with its ended channel.
func (s *listeners) add(l *listener) {
	l.ended = make(chan struct{})
	s.mu.Lock()
	s.set[l] = struct{}{}
	if s.ending {
		close(l.ended)
	}
	s.mu.Unlock()
}

func (s *listeners) remove(l *listener) {
	s.mu.Lock()
	delete(s.set, l)
	close(s.gone)
	s.gone = make(chan struct{})
	s.mu.Unlock()
}

// end ends every stream and waits until they are gone or ctx is done.
func (s *listeners) end(ctx context.Context) {
	s.mu.Lock()
	if !s.ending {
		s.ending = true
		for l := range s.set {
			close(l.ended)
		}
	}
	s.mu.Unlock()
	for {
		s.mu.Lock()
		n, gone := len(s.set), s.gone
		s.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-gone:
		case <-ctx.Done():
			return
		}
	}
}

func (s *listeners) has(l *listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.set[l]
	return ok
}

// listChanged sends the list_changed notifications of the kinds that
// changed to every stream that asked for them.
func (s *listeners) listChanged(tools, prompts, resources bool) {
	s.mu.Lock()
	all := make([]*listener, 0, len(s.set))
	for l := range s.set {
		all = append(all, l)
	}
	s.mu.Unlock()
	for _, l := range all {
		if tools && l.tools {
			l.send("notifications/tools/list_changed", nil)
		}
		if prompts && l.prompts {
			l.send("notifications/prompts/list_changed", nil)
		}
		if resources && l.resources {
			l.send("notifications/resources/list_changed", nil)
		}
	}
}

// EndListens ends every open subscriptions/listen stream as the revision
// asks of a server that shuts down: with the listen's (empty) result. It
// returns once every stream's handler has returned, or when ctx is done;
// a listen that comes after it ends at once.
func (g *Gateway) EndListens(ctx context.Context) { g.listens.end(ctx) }

// liveHolders is the liveness of subscription holders now: the agent
// sessions the SDK holds, and the listen streams still open.
func (g *Gateway) liveHolders() liveness {
	sessions := g.liveSessions()
	return func(h holder) bool {
		switch h := h.(type) {
		case *mcp.ServerSession:
			return sessions[h]
		case *listener:
			return g.listens.has(h)
		}
		return false
	}
}

// listen serves a 2026-era agent's subscriptions/listen (see above). It
// returns when the stream closes (ctx ends) or the gateway stops
// (EndListens), or at once when nothing of the filter is honoured. Without the request's id or the session's
// connection (a transport that does not pass them), the SDK's own handler
// serves it, unmerged.
func (g *Gateway) listen(ctx context.Context, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	id := rawID(req)
	a := agentConnOf(ss)
	if id == nil || a == nil {
		return next(ctx, "subscriptions/listen", req)
	}
	r, _ := req.(*mcp.SubscriptionsListenRequest)
	if r == nil || r.Params == nil || r.Params.Notifications == nil {
		return nil, invalidParams("subscriptions/listen: missing required 'notifications'")
	}
	want := r.Params.Notifications
	// The tasks extension's filter member, which the SDK's params lack.
	tasks := listenTaskIDs(rawParams(req))
	if len(tasks) > 0 && !requestDeclaresTasks(req) {
		return nil, missingTasksCapability()
	}
	l := &listener{id: id, notify: func(method string, params json.RawMessage) error {
		// The handler's context: over HTTP the SDK writes what is sent
		// with it on the listen request's stream.
		return a.notification(ctx, method, params)
	}}
	kinds := g.listKinds()
	honoured := mcp.NotificationSubscriptions{
		ToolsListChanged:     want.ToolsListChanged && kinds.tools,
		PromptsListChanged:   want.PromptsListChanged && kinds.prompts,
		ResourcesListChanged: want.ResourcesListChanged && kinds.resources,
	}
	l.tools, l.prompts, l.resources = honoured.ToolsListChanged, honoured.PromptsListChanged, honoured.ResourcesListChanged
	l.taskIDs = g.pushableTaskIDs(tasks)
	g.listens.add(l)
	defer g.listens.remove(l) // after the release below: l holds its URIs until then
	var held []string
	for _, uri := range want.ResourceSubscriptions {
		if slices.Contains(held, uri) {
			continue
		}
		if err := g.listenTo(ctx, ss, l, uri, true); err != nil {
			g.log.Info().Err(err).Str("uri", uri).Msg("subscriptions/listen: resource not subscribed")
			continue
		}
		held = append(held, uri)
	}
	honoured.ResourceSubscriptions = held
	stopping := false
	defer func() {
		if stopping {
			return // the servers are stopped next
		}
		release, cancel := context.WithTimeout(context.WithoutCancel(ctx), listenReleaseTimeout)
		defer cancel()
		for _, uri := range held {
			if err := g.listenTo(release, ss, l, uri, false); err != nil {
				g.log.Warn().Err(err).Str("uri", uri).Msg("subscriptions/listen: releasing a subscription")
			}
		}
	}()

	type acknowledged struct {
		mcp.NotificationSubscriptions
		TaskIDs []string `json:"taskIds,omitempty"` // the tasks extension's
	}
	ack, err := json.Marshal(struct {
		Meta          map[string]json.RawMessage `json:"_meta"`
		Notifications acknowledged               `json:"notifications"`
	}{map[string]json.RawMessage{subscriptionIDKey: id}, acknowledged{honoured, l.taskIDs}})
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	err = l.notify("notifications/subscriptions/acknowledged", ack)
	l.open = err == nil
	l.mu.Unlock()
	if err != nil {
		return nil, errors.Join(errors.New("subscriptions/listen: sending the acknowledgement"), err)
	}
	if len(held) > 0 || l.tools || l.prompts || l.resources || len(l.taskIDs) > 0 {
		select {
		case <-ctx.Done():
		case <-l.ended:
			stopping = true
		}
	}
	l.mu.Lock()
	l.open = false
	l.mu.Unlock()
	return &mcp.SubscriptionsListenResult{Meta: mcp.Meta{subscriptionIDKey: id}}, nil
}

// listenTo subscribes l (a stream on session ss) to the exported uri at
// the server that owns it, or releases it (on false), through the
// reference-counted table 2025-era sessions use too. The typed
// ClientSession.Subscribe speaks each server's era: resources/subscribe
// to a 2025 server, a subscriptions/listen of its own to a 2026 one.
func (g *Gateway) listenTo(ctx context.Context, ss *mcp.ServerSession, l *listener, uri string, on bool) error {
	up, orig, err := g.subscriptionOwner(ctx, uri)
	if err != nil {
		return err
	}
	_, err = g.changeSubscription(ctx, ss, l, uri, up, orig, on, nil, nil, func(c *call, _ string) (json.RawMessage, bool, error) {
		ctx := c.ctx // ends when the server goes quiet (callTimer)
		return emptyResult(), true, up.Do(ctx, func(cs *mcp.ClientSession) error {
			if on {
				return cs.Subscribe(ctx, &mcp.SubscribeParams{URI: orig})
			}
			return cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: orig})
		})
	})
	return err
}

// listKinds are the list changes a listen stream can have: those of the
// lists the gateway advertises (capabilitiesRaw: tools always, prompts and
// resources when a server has them), each with listChanged.
func (g *Gateway) listKinds() (k struct{ tools, prompts, resources bool }) {
	var caps map[string]json.RawMessage
	if json.Unmarshal(g.capabilitiesRaw(), &caps) != nil {
		return k
	}
	has := func(name string) bool {
		v, ok := caps[name]
		return ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
	}
	k.tools, k.prompts, k.resources = has("tools"), has("prompts"), has("resources")
	return k
}

// withSubscriptionID returns params (nil: none) with id as _meta's
// subscriptionId, over one the server set (a 2026 server's own listen's),
// every other member as it was.
func withSubscriptionID(params, id json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(params)) == 0 {
		params = json.RawMessage(`{}`)
	}
	meta := json.RawMessage(`{}`)
	if m, ok, err := rawjson.MemberValue(params, "_meta"); err == nil && ok && len(m) > 0 && m[0] == '{' {
		meta = m
	}
	meta, err := rawjson.SetMember(meta, subscriptionIDKey, id)
	if err != nil {
		return params
	}
	out, err := rawjson.SetMember(params, "_meta", meta)
	if err != nil {
		return params
	}
	return out
}
