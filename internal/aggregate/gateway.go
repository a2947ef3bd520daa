// Package aggregate holds the merged MCP server: it collects the tools of
// every upstream, gives each one exported name, and routes calls to the
// server that owns the tool.
package aggregate

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
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
	// PageSize is the number of tools per tools/list page. Zero means 1000.
	PageSize int
	// Version is reported to clients in serverInfo.
	Version string
	// Audit, if set, is called once per forwarded tool call, after it ends.
	// It receives sizes and outcome, never argument or result values.
	Audit func(CallRecord)
}

// CallRecord describes one forwarded tool call for the audit log.
type CallRecord struct {
	Session  string        // downstream MCP session id ("" for stdio)
	Server   string        // upstream server name
	Tool     string        // the name the agent called
	Duration time.Duration // from receipt to result
	Outcome  string        // "ok", "tool_error" (isError result) or "error"
	Error    string        // for "error": the message the agent got
	BytesIn  int           // size of the arguments as received
	BytesOut int           // size of the result as JSON
}

// Gateway is the merged server. Create it with New, register upstreams, feed
// it each upstream's tools with Sync or SetTools, then call Open once every
// upstream has started, so that the first naming sees all servers.
type Gateway struct {
	server   *mcp.Server
	log      zerolog.Logger
	pageSize int
	version  string
	audit    func(CallRecord)

	mu        sync.RWMutex
	open      bool
	upstreams map[string]Upstream
	tools     map[string][]*mcp.Tool // per server, as published
	names     *namer
	routes    map[string]route // exported name -> owner
	list      []*mcp.Tool      // exported tools, in server order
	listJSON  []byte           // fingerprint of list, to detect changes
}

type route struct {
	up   Upstream
	tool string // the name the upstream knows
}

// listChangedSentinel is a tool registered with the SDK server only so that
// re-adding it makes the SDK send notifications/tools/list_changed to every
// session (the SDK has no other API for it). It is never listed or callable:
// tools/list and tools/call are answered by the gateway's middleware.
const listChangedSentinel = "mcp-gateway-internal-list-changed"

// New returns a gateway with no upstreams.
func New(opts Options) *Gateway {
	if opts.PageSize <= 0 {
		opts.PageSize = 1000
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	g := &Gateway{
		log:       opts.Logger,
		pageSize:  opts.PageSize,
		version:   opts.Version,
		audit:     opts.Audit,
		upstreams: make(map[string]Upstream),
		tools:     make(map[string][]*mcp.Tool),
		names:     newNamer(),
		routes:    make(map[string]route),
	}
	g.server = mcp.NewServer(&mcp.Implementation{Name: "mcp-gateway", Version: opts.Version}, &mcp.ServerOptions{
		// Advertise tools even before any server has published one: the
		// SDK computes capabilities at initialize and would omit them.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	g.server.AddTool(&mcp.Tool{Name: listChangedSentinel, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("not callable")
		})
	// Tools are served by middleware rather than Server.AddTool: AddTool
	// panics on input schemas real servers publish (no "type", or
	// ["object","null"]), and such tools must be served as published.
	g.server.AddReceivingMiddleware(g.middleware)
	return g
}

// Server is the merged MCP server, to be served over HTTP or stdio.
func (g *Gateway) Server() *mcp.Server { return g.server }

// Add registers an upstream. Add all upstreams before Open.
func (g *Gateway) Add(u Upstream) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.upstreams[u.Name()] = u
}

// Open computes the first naming over every upstream's tools and starts
// serving them. Until Open, tool lists are only stored: naming them as each
// server comes up would let whichever server starts first take the plain
// names, and the contract gives them to the first server by name.
func (g *Gateway) Open() {
	g.mu.Lock()
	g.open = true
	g.rebuildLocked()
	g.mu.Unlock()
}

// Sync lists the tools of server over cs (all pages) and updates the merged
// view. It is called after every start of the server and whenever the server
// says its tool list changed.
func (g *Gateway) Sync(ctx context.Context, server string, cs *mcp.ClientSession) error {
	var tools []*mcp.Tool
	if caps := cs.InitializeResult().Capabilities; caps != nil && caps.Tools != nil {
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return fmt.Errorf("list tools: %w", err)
			}
			tools = append(tools, t)
		}
	}
	g.SetTools(server, tools)
	return nil
}

// SetTools replaces the tools of server. Once open, a change in the merged
// list is announced to every session with notifications/tools/list_changed.
func (g *Gateway) SetTools(server string, tools []*mcp.Tool) {
	g.mu.Lock()
	g.tools[server] = tools
	changed := g.open && g.rebuildLocked()
	g.mu.Unlock()
	if changed {
		g.log.Info().Str("server", server).Int("tools", len(tools)).Msg("tool list changed")
		g.server.AddTool(&mcp.Tool{Name: listChangedSentinel, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return nil, errors.New("not callable")
			})
	}
}

// rebuildLocked recomputes names, routes and the exported list. It reports
// whether the exported list changed.
func (g *Gateway) rebuildLocked() bool {
	servers := make([]string, 0, len(g.tools))
	for name := range g.tools {
		if _, ok := g.upstreams[name]; ok {
			servers = append(servers, name)
		}
	}
	slices.Sort(servers)
	var present []key
	for _, s := range servers {
		for _, t := range g.tools[s] {
			present = append(present, key{s, t.Name})
		}
	}
	names := g.names.assign(present)
	routes := make(map[string]route, len(present))
	list := make([]*mcp.Tool, 0, len(present))
	for _, s := range servers {
		for _, t := range g.tools[s] {
			name := names[key{s, t.Name}]
			routes[name] = route{up: g.upstreams[s], tool: t.Name}
			exported := t
			if name != t.Name {
				c := *t
				c.Name = name
				exported = &c
			}
			list = append(list, exported)
		}
	}
	fp, _ := json.Marshal(list)
	changed := !bytes.Equal(fp, g.listJSON)
	g.routes, g.list, g.listJSON = routes, list, fp
	return changed
}

// ToolCount returns the number of exported tools, per server and in all.
func (g *Gateway) ToolCount() (perServer map[string]int, total int) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	perServer = make(map[string]int, len(g.tools))
	for s, ts := range g.tools {
		perServer[s] = len(ts)
		total += len(ts)
	}
	return perServer, total
}

func (g *Gateway) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list":
			if r, ok := req.(*mcp.ListToolsRequest); ok {
				return g.listTools(r)
			}
		case "tools/call":
			if r, ok := req.(*mcp.CallToolRequest); ok {
				return g.callTool(ctx, r)
			}
		}
		return next(ctx, method, req)
	}
}

func (g *Gateway) listTools(req *mcp.ListToolsRequest) (*mcp.ListToolsResult, error) {
	start := 0
	if req.Params != nil && req.Params.Cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(req.Params.Cursor)
		n, err2 := strconv.Atoi(string(b))
		if err != nil || err2 != nil || n < 0 {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor"}
		}
		start = n
	}
	g.mu.RLock()
	list := g.list
	g.mu.RUnlock()
	res := &mcp.ListToolsResult{Tools: []*mcp.Tool{}}
	if start < len(list) {
		end := min(start+g.pageSize, len(list))
		res.Tools = list[start:end]
		if end < len(list) {
			res.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end)))
		}
	}
	return res, nil
}

func (g *Gateway) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p := req.Params
	if p == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing params"}
	}
	g.mu.RLock()
	r, ok := g.routes[p.Name]
	g.mu.RUnlock()
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", p.Name)}
	}
	var args any
	if a := bytes.TrimSpace(p.Arguments); len(a) > 0 && !bytes.Equal(a, []byte("null")) {
		if a[0] != '{' {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("tool %q: arguments must be a JSON object", p.Name)}
		}
		args = json.RawMessage(a)
	}
	began := time.Now()
	var res *mcp.CallToolResult
	err := r.up.Do(ctx, func(cs *mcp.ClientSession) error {
		var err error
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Meta: p.Meta, Name: r.tool, Arguments: args})
		return err
	})
	if err != nil {
		err = upstreamError(r.up.Name(), err)
	}
	if g.audit != nil {
		g.audit(g.record(req, r.up.Name(), began, res, err))
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (g *Gateway) record(req *mcp.CallToolRequest, server string, began time.Time, res *mcp.CallToolResult, err error) CallRecord {
	rec := CallRecord{
		Server:   server,
		Tool:     req.Params.Name,
		Duration: time.Since(began),
		BytesIn:  len(req.Params.Arguments),
		Outcome:  "ok",
	}
	if req.Session != nil {
		rec.Session = req.Session.ID()
	}
	switch {
	case err != nil:
		rec.Outcome, rec.Error = "error", err.Error()
	case res != nil && res.IsError:
		rec.Outcome = "tool_error"
	}
	if res != nil {
		if b, err := json.Marshal(res); err == nil {
			rec.BytesOut = len(b)
		}
	}
	return rec
}

// upstreamError turns a failed forwarded call into the JSON-RPC error the
// agent sees. The message always names the server.
func upstreamError(server string, err error) error {
	var wire *jsonrpc.Error
	if errors.As(err, &wire) {
		return &jsonrpc.Error{Code: wire.Code, Message: fmt.Sprintf("server %q: %s", server, wire.Message), Data: wire.Data}
	}
	msg := err.Error()
	if !bytes.HasPrefix([]byte(msg), []byte("server ")) {
		msg = fmt.Sprintf("server %q: %s", server, msg)
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}
}
