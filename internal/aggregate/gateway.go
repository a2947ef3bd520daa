package aggregate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/intercept"
	"github.com/mcp-gateway/mcp-gateway/internal/tasktable"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// Upstream is what the gateway needs of a server. *supervisor.Server
// implements it.
type Upstream interface {
	// Name is the server's key in the config; servers are ordered by it.
	Name() string
	// Do runs fn with a live session, waiting while the server restarts.
	// Errors name the server.
	Do(ctx context.Context, fn func(*mcp.ClientSession) error) error
}

// Options configure a Gateway. The zero value works.
type Options struct {
	Logger zerolog.Logger
	// PageSize is the number of items per list page. Zero means 1000.
	PageSize int
	// Version is reported to clients in serverInfo.
	Version string
	// Audit, if set, is called once per forwarded tool call, after it ends.
	// It receives sizes and outcome, never argument or result values.
	Audit func(CallRecord)
	// Interceptors, if set, filter tools lists and run around tool calls
	// (see hooks.go).
	Interceptors *intercept.Engine
	// ToolsView is the view of requests that ask for none (search.go).
	// Empty means ViewAll.
	ToolsView ToolsView
	// Telemetry, if set, traces and measures every request served and
	// forwarded (telemetry.go). Nil: off.
	Telemetry *telemetry.Telemetry
	// CallTimeout ends a forwarded request whose server has sent neither
	// its answer nor progress for this long, with an error naming the
	// server (callTimer). Zero: no limit.
	CallTimeout time.Duration
	// TaskKey signs the task ids 2026-era agents get (tasks2026.go): the
	// same key on every replica lets any of them route a task request.
	// Nil: a random key of this process, valid on no other replica.
	TaskKey []byte
}

// Gateway is the merged server. Create it with New, register upstreams with
// Add, feed it each upstream's offer with Sync after every (re)start, then
// call Open once every upstream has started, so that the first naming sees
// all servers. All methods are safe for concurrent use.
type Gateway struct {
	server   *mcp.Server
	log      zerolog.Logger
	pageSize int
	version  string
	sl       statelessShared // stateless.go: what 2026-era calls share
	audit    func(CallRecord)
	icpt     *intercept.Engine
	view     ToolsView            // the default (search.go)
	search   searchIndex          // the search view's index (search.go)
	tel      *telemetry.Telemetry // nil: off
	// decoded, if set, is called each time the raw path decodes a request's
	// params (Gateway.decode): tests count them. Nil otherwise.
	decoded func()

	calls *inflight // forwarded calls, for routing what servers send back
	// pending holds the calls of 2026-era agents that a 2025-era server
	// asked input for (pending.go).
	pending *pendingTable
	// taskIDs mints and opens the task ids of 2026-era agents
	// (tasks2026.go); tasks are 2025-era agents' task table.
	taskIDs *taskIDs
	tasks   *tasktable.ServerTasks
	// clientTasks are the tasks agents run for servers (clienttasks.go),
	// agents what their initialize said that the SDK's types drop.
	clientTasks *tasktable.AgentTasks
	agents      agentsInfo
	progress    *progressMap
	subs        *subscriptions
	listens     *listeners // the open subscriptions/listen streams (listen.go)
	// subChange orders the subscription changes of one server's URI,
	// from the check to the server's answer (see changeSubscription).
	subChange keyedLocks

	mu   sync.RWMutex
	open bool
	// Prompts and resources of the first start are listed in the background (see Sync): extrasOpen
	// is set, and extrasReady closed, once every server's are in and named. extrasGen tells a
	// listing that a restart superseded it. extrasWait is how long after Open they wait for a
	// server that has not listed them (extrasTimeout; tests shorten it).
	extrasWait    time.Duration
	extrasOpen    bool
	extrasReady   chan struct{}
	extrasPending map[string]*pendingExtras
	extrasGen     uint64
	upstreams     map[string]Upstream
	clients       map[string]*mcp.Client // per server, for roots
	caps          map[string]*mcp.ServerCapabilities
	instructions  map[string]string          // per server, as its initialize said
	taskCaps      map[string]json.RawMessage // per server, its tasks capability if any
	// taskCalls says, per server, whether it runs tool calls as tasks for
	// 2026-era agents (serverTaskCallsLocked, tasks2026.go).
	taskCalls map[string]bool
	reachable func(*mcp.ServerSession) bool // see SetReachable
	reachWake chan struct{}                 // closed at each AgentReachable (see awaitReachable)
	raws      map[string]rawConn            // per server, its latest start's
	tools     *named[*mcp.Tool]
	prompts   *named[*mcp.Prompt]
	res       *resourceSet
	// Encoded list pages by cursor, per list, for the current version of
	// each list (see ListPage).
	pages [numLists]pageCache
	// Per-session log levels, mirrored upstream (see session.go).
	levels  map[*mcp.ServerSession]mcp.LoggingLevel
	upLevel mcp.LoggingLevel
}

// Sentinels registered with the SDK server only so that re-adding one makes
// the SDK send the matching list_changed notification to every session (the
// SDK has no other API for it). They are never listed or reachable: the
// gateway's middleware answers every list, call, get and read.
const (
	sentinelTool     = "mcp-gateway-internal-list-changed"
	sentinelPrompt   = "mcp-gateway-internal-list-changed"
	sentinelResource = "mcp-gateway-internal://list-changed"
)

// New returns a gateway with no upstreams.
func New(opts Options) *Gateway {
	if opts.PageSize <= 0 {
		opts.PageSize = 1000
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	g := &Gateway{
		log:          opts.Logger,
		pageSize:     opts.PageSize,
		version:      opts.Version,
		audit:        opts.Audit,
		icpt:         opts.Interceptors,
		view:         cmp.Or(opts.ToolsView, ViewAll),
		tel:          opts.Telemetry,
		calls:        newInflight(opts.CallTimeout),
		pending:      newPendingTable(),
		progress:     newProgressMap(),
		subs:         newSubscriptions(),
		listens:      newListeners(),
		upstreams:    make(map[string]Upstream),
		clients:      make(map[string]*mcp.Client),
		caps:         make(map[string]*mcp.ServerCapabilities),
		instructions: make(map[string]string),
		taskCaps:     make(map[string]json.RawMessage),
		taskCalls:    make(map[string]bool),
		agents:       agentsInfo{tasks: make(map[string]agentTasks)},
		raws:         make(map[string]rawConn),
		tools: newNamed(func(t *mcp.Tool) string { return t.Name },
			func(t *mcp.Tool, name string) *mcp.Tool { c := *t; c.Name = name; return &c }),
		prompts: newNamed(func(p *mcp.Prompt) string { return p.Name },
			func(p *mcp.Prompt, name string) *mcp.Prompt { c := *p; c.Name = name; return &c }),
		res:           newResourceSet(),
		extrasReady:   make(chan struct{}),
		extrasWait:    extrasTimeout,
		extrasPending: make(map[string]*pendingExtras),
	}
	g.sl.infoMeta = serverInfoMeta(g.serverInfo())
	g.server = mcp.NewServer(g.serverInfo(), &mcp.ServerOptions{
		// Everything on for the SDK's own checks (e.g. which notifications
		// a new-protocol session may listen to); what clients are told is
		// the union of what the upstreams offer (see advertise).
		Capabilities: &mcp.ServerCapabilities{
			Tools:       &mcp.ToolCapabilities{ListChanged: true},
			Prompts:     &mcp.PromptCapabilities{ListChanged: true},
			Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Logging:     &mcp.LoggingCapabilities{},
			Completions: &mcp.CompletionCapabilities{},
		},
		// The SDK keeps track of which session subscribed to which URI, so
		// that ResourceUpdated reaches exactly those sessions; the handlers
		// forward the subscription to the owning server.
		SubscribeHandler:        g.subscribe,
		UnsubscribeHandler:      g.unsubscribe,
		RootsListChangedHandler: func(context.Context, *mcp.RootsListChangedRequest) { g.rootsChanged() },
		// Servers ask for roots when the gateway starts them, before any
		// agent is there, and get none; some (server-filesystem) never ask
		// again. An agent with roots arriving is a change of the roots
		// they would get (see rootsRaw): they are told, and ask again.
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) { g.AgentReachable(req.Session) },
	})
	g.clientTasks = tasktable.NewAgentTasks(g.liveSessions)
	g.tasks = tasktable.NewServerTasks(g.liveSessions)
	g.announce(true, true, true)
	// Requests are answered by middleware rather than Server.AddTool and
	// friends: AddTool panics on input schemas real servers publish (no
	// "type", or ["object","null"]), and such tools must be served as
	// published; and each answer depends on live upstream state.
	g.server.AddReceivingMiddleware(g.tracedMiddleware, g.middleware)
	g.taskIDs = newTaskIDs(opts.TaskKey, g.pending.replica)
	g.registerTaskMethods()
	return g
}

// liveSessions is the set of agent sessions the SDK holds.
func (g *Gateway) liveSessions() map[*mcp.ServerSession]bool {
	live := make(map[*mcp.ServerSession]bool)
	for ss := range g.server.Sessions() {
		live[ss] = true
	}
	return live
}

// Server is the merged MCP server, to be served over HTTP or stdio.
func (g *Gateway) Server() *mcp.Server { return g.server }

// Add registers an upstream. Add all upstreams before Open.
func (g *Gateway) Add(u Upstream) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.upstreams[u.Name()] = u
}

// Open computes the first naming over every upstream's items and starts
// serving them. Until Open, lists are only stored: naming them as each server
// comes up would let whichever server starts first take the plain names, and
// the contract gives them to the first server by name.
func (g *Gateway) Open() {
	g.mu.Lock()
	g.open = true
	servers := g.serversLocked()
	g.tools.rebuild(servers, g.upstreams)
	g.dropPagesLocked(toolsList)
	for server, p := range g.extrasPending {
		go g.listExtras(server, p)
	}
	if len(g.extrasPending) > 0 {
		time.AfterFunc(g.extrasWait, g.openExtrasAnyway)
	}
	g.openExtrasLocked(false)
	g.mu.Unlock()
}

// pendingExtras is a server's first listing of prompts and resources, to be
// done once the gateway is open (see Sync).
type pendingExtras struct {
	gen  uint64 // a later start of the server supersedes this one
	cs   *mcp.ClientSession
	caps *mcp.ServerCapabilities
	raw  RoundTrip
}

// openExtrasLocked names prompts and resources for the first time once the
// gateway is open and every server's first listing of them is in, or when
// forced to (openExtrasAnyway).
func (g *Gateway) openExtrasLocked(force bool) {
	if !g.open || g.extrasOpen || (!force && len(g.extrasPending) > 0) {
		return
	}
	g.extrasOpen = true
	servers := g.serversLocked()
	g.prompts.rebuild(servers, g.upstreams)
	g.res.rebuild(servers, g.upstreams)
	g.dropPagesLocked(promptsList, resourcesList, templatesList)
	close(g.extrasReady)
	// Sessions that listed (or waited) meanwhile learn nothing new from a
	// list_changed, but one that initialized before could have asked.
	go g.announce(false, true, true)
}

// waitExtras waits until prompts and resources are named (openExtrasLocked),
// for requests about them that arrive right after the gateway is ready.
func (g *Gateway) waitExtras(ctx context.Context) error {
	select {
	case <-g.extrasReady:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// serversLocked returns the registered servers that have reported, sorted.
func (g *Gateway) serversLocked() []string {
	servers := make([]string, 0, len(g.caps))
	for name := range g.caps {
		if _, ok := g.upstreams[name]; ok {
			servers = append(servers, name)
		}
	}
	slices.Sort(servers)
	return servers
}

// sync is Sync: it lists everything server offers over cs (all pages) and
// updates the merged view. It is called after every start of the server;
// list_changed notifications re-list only what changed. raw, when not nil,
// sends requests on cs's connection past the SDK: tools are listed with it
// (listToolsRaw).
//
// At the first start, only the tools are listed before Sync returns: they
// are what "ready" promises. Prompts, resources and templates are listed
// once the gateway is open (ready), in the background, and requests about
// them wait until every server's are in (waitExtras). Listing them up front
// was three more round trips per server while all servers were starting:
// ~50 ms of a 64-server launch on 2 cores.
func (g *Gateway) sync(ctx context.Context, server string, cs *mcp.ClientSession, raw RoundTrip) error {
	caps := cs.InitializeResult().Capabilities
	if caps == nil {
		caps = &mcp.ServerCapabilities{}
	}
	// First, so that a list_changed the server sends while it is listed
	// here (server-everything sends one at once) re-lists as this does.
	g.mu.Lock()
	g.raws[server] = rawConn{cs, raw}
	g.mu.Unlock()
	tools, rawTools, err := listTools(ctx, cs, caps, raw)
	if err != nil {
		return err
	}
	tools = g.visibleTools(ctx, server, tools)
	g.mu.Lock()
	deferred := !g.extrasOpen
	if deferred {
		g.extrasGen++
		p := &pendingExtras{gen: g.extrasGen, cs: cs, caps: caps, raw: raw}
		g.extrasPending[server] = p
		if g.open { // a restart between ready and the first listing
			go g.listExtras(server, p)
		}
	}
	g.caps[server] = caps
	g.instructions[server] = cs.InitializeResult().Instructions
	g.taskCaps[server] = tasksCapability(g.upstreams[server])
	g.taskCalls[server] = g.serverTaskCallsLocked(server)
	g.tools.setServer(server, tools, rawTools)
	g.rebuildLocked(true, false, false)
	g.mu.Unlock()
	if deferred {
		g.restore(ctx, server, cs)
		return nil
	}
	prompts, rawPrompts, err := listPrompts(ctx, cs, caps, raw)
	if err != nil {
		return err
	}
	res, err := listResources(ctx, cs, caps, raw)
	if err != nil {
		return err
	}
	g.mu.Lock()
	delete(g.extrasPending, server) // a late first listing, superseded
	g.prompts.setServer(server, prompts, rawPrompts)
	g.res.setServer(server, res.resources, res.templates, res.raw, res.tplRaw)
	g.rebuildLocked(false, true, true)
	g.mu.Unlock()
	// Resubscribe what agents subscribed to before the restart, and push
	// the sessions' roots; both are lost with the old process.
	g.restore(ctx, server, cs)
	return nil
}

// rawConn is a server's session with the raw round trip on its connection,
// so that a re-listing after list_changed lists as the start did (tools
// listed raw keep their schemas as bytes; listed through the SDK, as maps,
// and the two never compare equal).
type rawConn struct {
	cs  *mcp.ClientSession
	raw RoundTrip
}

// extrasTimeout bounds the background listing of one server's prompts and
// resources, like the handshake, and the wait of requests for all of them
// after Open: requests waiting for them must not hang.
const extrasTimeout = 30 * time.Second

// listExtras lists a server's prompts, resources and templates after its
// first start (see Sync). When the server answers with an error, it serves
// none of that kind until its next start or list_changed (logged). When the
// listing fails because the instance went away or hung, the server stays
// pending: its next start lists again, so the first naming still includes
// it; openExtrasAnyway ends the wait if it never comes back.
func (g *Gateway) listExtras(server string, p *pendingExtras) {
	ctx, cancel := context.WithTimeout(context.Background(), extrasTimeout)
	defer cancel()
	prompts, rawPrompts, perr := listPrompts(ctx, p.cs, p.caps, p.raw)
	res, rerr := listResources(ctx, p.cs, p.caps, p.raw)
	g.mu.Lock()
	defer g.mu.Unlock()
	if cur := g.extrasPending[server]; cur == nil || cur.gen != p.gen {
		return // a restart of the server is listing again
	}
	if err := errors.Join(perr, rerr); err != nil {
		var wire *jsonrpc.Error
		if !errors.As(err, &wire) {
			g.log.Warn().Err(err).Str("server", server).Msg("listing prompts and resources failed; waiting for the server's next start")
			return
		}
		g.log.Warn().Err(err).Str("server", server).Msg("listing prompts and resources failed; serving none for now")
	}
	if perr == nil {
		g.prompts.setServer(server, prompts, rawPrompts)
	}
	if rerr == nil {
		g.res.setServer(server, res.resources, res.templates, res.raw, res.tplRaw)
	}
	delete(g.extrasPending, server)
	if g.extrasOpen { // late, after openExtrasAnyway
		g.rebuildLocked(false, true, true)
		return
	}
	g.openExtrasLocked(false)
}

// openExtrasAnyway names prompts and resources without the servers whose
// first listing has not come in extrasTimeout after Open: a server that
// died and does not come back must not hold every request about prompts
// and resources. Its items are named when it lists them later.
func (g *Gateway) openExtrasAnyway() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.extrasOpen {
		return
	}
	for server := range g.extrasPending {
		g.log.Warn().Str("server", server).Msg("prompts and resources not listed in time; naming the others without them")
	}
	g.openExtrasLocked(true)
}

// rebuildLocked recomputes the named views and announces those that changed.
func (g *Gateway) rebuildLocked(tools, prompts, resources bool) {
	if !g.open {
		return
	}
	servers := g.serversLocked()
	prompts, resources = prompts && g.extrasOpen, resources && g.extrasOpen
	tc := tools && g.tools.rebuild(servers, g.upstreams)
	if tc {
		g.dropPagesLocked(toolsList)
	}
	pc := prompts && g.prompts.rebuild(servers, g.upstreams)
	if pc {
		g.dropPagesLocked(promptsList)
	}
	rc := resources && g.res.rebuild(servers, g.upstreams)
	if rc {
		g.dropPagesLocked(resourcesList, templatesList)
	}
	if tc || pc || rc {
		g.log.Info().Bool("tools", tc).Bool("prompts", pc).Bool("resources", rc).Msg("merged lists changed")
		// The SDK debounces and sends on its own goroutine; no lock
		// ordering issue with g.mu.
		go g.announce(tc, pc, rc)
	}
}

// announce makes the SDK send list_changed notifications to every 2025-era
// session, and sends them on the listen streams that asked (listen.go).
func (g *Gateway) announce(tools, prompts, resources bool) {
	g.listens.listChanged(tools, prompts, resources)
	if tools {
		g.server.AddTool(&mcp.Tool{Name: sentinelTool, InputSchema: map[string]any{"type": "object"}}, unreachableTool)
	}
	if prompts {
		g.server.AddPrompt(&mcp.Prompt{Name: sentinelPrompt}, unreachablePrompt)
	}
	if resources {
		g.server.AddResource(&mcp.Resource{URI: sentinelResource, Name: sentinelResource}, unreachableResource)
	}
}

func unreachableTool(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return nil, errors.New("unreachable")
}

func unreachablePrompt(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return nil, errors.New("unreachable")
}

func unreachableResource(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return nil, errors.New("unreachable")
}

// ToolCount returns the number of exported tools, per server and in all.
func (g *Gateway) ToolCount() (perServer map[string]int, total int) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	perServer = make(map[string]int, len(g.tools.perServer))
	for s, ts := range g.tools.perServer {
		perServer[s] = len(ts)
		total += len(ts)
	}
	return perServer, total
}

func (g *Gateway) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch req.(type) {
		case *mcp.ListPromptsRequest, *mcp.GetPromptRequest, *mcp.ListResourcesRequest,
			*mcp.ListResourceTemplatesRequest, *mcp.ReadResourceRequest, *mcp.CompleteRequest:
			if err := g.waitExtras(ctx); err != nil {
				return nil, err
			}
		}
		if statelessEra(req) {
			if method == "subscriptions/listen" {
				return g.listen(ctx, req, next) // listen.go
			}
			return g.handleStateless(ctx, method, req, next) // era.go
		}
		return g.handle(ctx, method, req, next)
	}
}

// advertise replaces the capabilities in an initialize or discover result
// with the union of what the upstreams offer, so that an agent sees the
// prompts capability only if some server has prompts, and so on.
func (g *Gateway) advertise(res mcp.Result) mcp.Result {
	switch r := res.(type) {
	case *mcp.InitializeResult:
		return g.initializeResult(r)
	case *mcp.DiscoverResult:
		return g.discoverResult(r)
	}
	return res
}

// mergedInstructions are the servers' instructions for the agent: those of
// the only server that has any, verbatim, as the agent would get them
// connected directly; with several, each one under a heading that names its
// server, in server order, so the model knows which tools they are about.
func (g *Gateway) mergedInstructions() string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var with []string
	for _, s := range g.serversLocked() {
		if g.instructions[s] != "" {
			with = append(with, s)
		}
	}
	if len(with) == 1 {
		return g.instructions[with[0]]
	}
	var b strings.Builder
	for i, s := range with {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "## Server %q\n\n%s", s, g.instructions[s])
	}
	return b.String()
}

// upstreamError turns a failed forwarded request into the JSON-RPC error the
// agent sees. The message always names the server.
func upstreamError(server string, err error) error {
	var wire *jsonrpc.Error
	if errors.As(err, &wire) {
		msg := wire.Message
		if !strings.HasPrefix(msg, "server ") {
			msg = fmt.Sprintf("server %q: %s", server, msg)
		}
		return &jsonrpc.Error{Code: wire.Code, Message: msg, Data: wire.Data}
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "server ") {
		msg = fmt.Sprintf("server %q: %s", server, msg)
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}
}

// serverError is the error the agent sees for a request that went to the
// one server the agent's name or URI chose: the server's own JSON-RPC error
// as the server sent it (code, message and data), as a direct connection
// shows it. Any other failure (the server not running, its connection
// lost) is the gateway's, and names the server (upstreamError).
func serverError(server string, err error) error {
	var wire *jsonrpc.Error
	if errors.As(err, &wire) {
		return wire
	}
	return upstreamError(server, err)
}

func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}
