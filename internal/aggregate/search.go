package aggregate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/naming"
	"github.com/mcp-gateway/mcp-gateway/internal/rawjson"
	"github.com/mcp-gateway/mcp-gateway/internal/toolsearch"
)

// A tool view is what tools/list shows an agent. ViewAll is every tool, as
// the servers list them. ViewSearch is two tools of the gateway's own,
// search_tools and call_tool (internal/toolsearch), whatever the number of
// servers: an agent with hundreds of tools reads two schemas each turn
// instead of hundreds, and finds the others by searching. Every tool stays
// callable by its exported name in either view.
//
// The view is chosen per request, not per session: over HTTP by the
// endpoint's URL (?tools=search, which an agent's client sends on every
// request, WithToolsView), else the gateway's default (Options.ToolsView;
// stdio mode's --tools). A request-level choice needs no session state,
// and works alike for the sessionless protocol era.
type ToolsView string

// The tool views.
const (
	ViewAll    ToolsView = "all"
	ViewSearch ToolsView = "search"
)

// ParseToolsView reads a view's name ("" is ViewAll).
func ParseToolsView(s string) (ToolsView, error) {
	switch ToolsView(s) {
	case "", ViewAll:
		return ViewAll, nil
	case ViewSearch:
		return ViewSearch, nil
	}
	return "", fmt.Errorf("unknown tool view %q: use %q or %q", s, ViewAll, ViewSearch)
}

// toolsViewKey is the RequestExtra.Header key that carries a request's
// view; like rawParamsKey it is no valid HTTP field name, so only the
// gateway sets it.
const toolsViewKey = "Mcp-Gateway tools view"

// WithToolsView returns a copy of h (nil: an empty header) that asks for
// view v in the gateway's handlers (see ToolsView).
func WithToolsView(h http.Header, v ToolsView) http.Header {
	out := h.Clone()
	if out == nil {
		out = make(http.Header, 1)
	}
	out[toolsViewKey] = []string{string(v)}
	return out
}

// viewOf is the view a request with header h (nil: none) is served.
func (g *Gateway) viewOf(h http.Header) ToolsView {
	if v := h[toolsViewKey]; len(v) == 1 {
		return ToolsView(v[0])
	}
	return g.view
}

func (g *Gateway) requestView(req mcp.Request) ToolsView {
	if ex := req.GetExtra(); ex != nil {
		return g.viewOf(ex.Header)
	}
	return g.view
}

// ViewOwns reports whether a request with header h (nil: the default
// view) is the search view's to answer on the SDK path: its tools/list,
// and calls of its own tools. A transport's raw path declines those (a
// batch holding one too).
func (g *Gateway) ViewOwns(h http.Header, method string, params json.RawMessage) bool {
	if g.viewOf(h) != ViewSearch {
		return false
	}
	switch method {
	case "tools/list":
		return true
	case "tools/call":
		var p struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(params, &p) != nil {
			return true // the SDK path's error
		}
		search, call := g.viewToolNames()
		return p.Name == search || p.Name == call
	}
	return false
}

// viewToolNames are the names of search_tools and call_tool: their own,
// unless a server's tool has it; then, by the naming rule, the gateway's
// tool is the later one and takes its key as a prefix, and the server's
// keeps working.
func (g *Gateway) viewToolNames() (search, call string) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	name := func(n string) string {
		if _, taken := g.tools.routes[n]; taken {
			return naming.Sanitize("mcp-gateway_" + n)
		}
		return n
	}
	return name(toolsearch.SearchToolName), name(toolsearch.CallToolName)
}

// searchIndex is the ranker's index over the merged tool list, built on
// the first search after the list changed (so a server's list_changed,
// and what interceptors hide, reach search as they reach tools/list).
type searchIndex struct {
	mu    sync.Mutex
	list  []*mcp.Tool // the merged list the index was built from
	ix    *toolsearch.Index
	tools []*mcp.Tool // by doc
}

// index returns the index of the current merged tool list.
func (g *Gateway) index() (*toolsearch.Index, []*mcp.Tool) {
	g.mu.RLock()
	list := g.tools.list
	g.mu.RUnlock()
	s := &g.search
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ix != nil && sameList(s.list, list) {
		return s.ix, s.tools
	}
	docs := make([]toolsearch.Doc, len(list))
	g.mu.RLock()
	for i, t := range list {
		server := g.tools.routes[t.Name].up.Name()
		title := t.Title
		if title == "" && t.Annotations != nil {
			title = t.Annotations.Title
		}
		docs[i] = toolsearch.Doc{Name: t.Name, Title: title, Description: t.Description,
			Params: toolsearch.ParamsOf(t.InputSchema), Server: server, ServerText: g.instructions[server]}
	}
	g.mu.RUnlock()
	s.list, s.ix, s.tools = list, toolsearch.Build(docs, toolsearch.Options{}), list
	return s.ix, s.tools
}

// sameList reports whether a and b are the same version of the merged
// list: every rebuild makes a new one.
func sameList(a, b []*mcp.Tool) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// listToolsOfView answers tools/list in the request's view.
func (g *Gateway) listToolsOfView(req *mcp.ListToolsRequest) (mcp.Result, error) {
	if g.requestView(req) == ViewSearch {
		return g.searchViewList(req)
	}
	return g.listTools(req)
}

// callToolOfView answers tools/call: the search view's own tools, or the
// named tool of any server.
func (g *Gateway) callToolOfView(ctx context.Context, req *mcp.CallToolRequest) (mcp.Result, error) {
	if res, ok, err := g.searchViewCall(ctx, req); ok {
		return res, err
	}
	return g.callTool(ctx, req)
}

// searchViewList answers tools/list in the search view.
func (g *Gateway) searchViewList(req *mcp.ListToolsRequest) (mcp.Result, error) {
	if req.Params != nil && req.Params.Cursor != "" {
		return nil, invalidParams("invalid cursor")
	}
	search, call := g.viewToolNames()
	return &rawResult{raw: toolsearch.ListResult(search, call)}, nil
}

// searchViewCall answers a call of search_tools or call_tool in the
// search view; ok is false for any other call.
func (g *Gateway) searchViewCall(ctx context.Context, req *mcp.CallToolRequest) (res mcp.Result, ok bool, err error) {
	if req.Params == nil || g.requestView(req) != ViewSearch {
		return nil, false, nil
	}
	search, call := g.viewToolNames()
	switch req.Params.Name {
	case search:
		return g.searchTools(req.Params.Arguments), true, nil
	case call:
		res, err := g.callFound(ctx, req)
		return res, true, err
	}
	return nil, false, nil
}

// searchTools runs search_tools.
func (g *Gateway) searchTools(args json.RawMessage) mcp.Result {
	a, err := toolsearch.ParseSearchArgs(args)
	if err != nil {
		return &rawResult{raw: toolsearch.ErrorResult(err)}
	}
	ix, tools := g.index()
	var keep func(int) bool
	if a.Server != "" {
		keep = func(i int) bool { return ix.Doc(i).Server == a.Server }
	}
	hits := ix.Search(a.Query, a.Limit, keep)
	found := make([]toolsearch.Found, len(hits))
	for i, h := range hits {
		t, d := tools[h.Doc], ix.Doc(h.Doc)
		schema, _ := t.InputSchema.(json.RawMessage)
		if schema == nil && t.InputSchema != nil {
			schema, _ = json.Marshal(t.InputSchema)
		}
		found[i] = toolsearch.Found{Name: t.Name, Server: d.Server, Title: d.Title, Description: t.Description, InputSchema: schema}
	}
	b, err := toolsearch.SearchResult(a.Query, found)
	if err != nil {
		return &rawResult{raw: toolsearch.ErrorResult(err)}
	}
	return &rawResult{raw: b}
}

// callFound runs call_tool: the call of the named tool, made as the agent
// would make it directly (callTool: interceptors, progress with the
// agent's token, cancellation, the server's requests to the agent, the
// audit line naming the tool), with call_tool's _meta.
func (g *Gateway) callFound(ctx context.Context, req *mcp.CallToolRequest) (mcp.Result, error) {
	a, err := toolsearch.ParseCallArgs(req.Params.Arguments)
	if err != nil {
		return &rawResult{raw: toolsearch.ErrorResult(err)}, nil
	}
	g.mu.RLock()
	_, known := g.tools.routes[a.Name]
	g.mu.RUnlock()
	if !known {
		search, _ := g.viewToolNames()
		return &rawResult{raw: toolsearch.ErrorResult(fmt.Errorf("%w: no tool is named %q: find it with %s first",
			toolsearch.ErrArguments, a.Name, search))}, nil
	}
	args := a.Arguments
	if args == nil {
		args = json.RawMessage(`{}`)
	}
	inner := &mcp.CallToolRequest{Session: req.Session,
		Params: &mcp.CallToolParamsRaw{Meta: req.Params.Meta, Name: a.Name, Arguments: args}}
	var h http.Header
	if ex := req.GetExtra(); ex != nil {
		h = WithoutRawParams(ex.Header)
	}
	if raw := rawParams(req); raw != nil {
		// call_tool's params as the agent sent them, made the tool's:
		// its _meta (the progress token) goes on as the agent wrote it.
		if p, err := innerParams(raw, a.Name, args); err == nil {
			h = WithRawParams(h, p)
		}
	}
	if h != nil {
		inner.Extra = &mcp.RequestExtra{Header: h}
	}
	return g.callTool(ctx, inner)
}

// innerParams is a tools/call's params for the tool named by call_tool's
// raw params: name and arguments replaced, the rest (_meta) kept.
func innerParams(raw json.RawMessage, name string, args json.RawMessage) (json.RawMessage, error) {
	p, err := rawjson.SetString(raw, "name", name)
	if err != nil {
		return nil, err
	}
	p, err = rawjson.SetMember(p, "arguments", args)
	if err != nil {
		return nil, errors.Join(errors.New("call_tool params"), err)
	}
	return p, nil
}

// viewTaskCall makes a task-augmented call of the search view's call_tool
// (named name, params as the agent sent them) the task call of the tool it
// names: its params with that tool's name and arguments, the task and
// _meta kept. inner is nil for any other call; errResult is the tool error
// call_tool answers for arguments it cannot take or a tool no one has.
func (g *Gateway) viewTaskCall(h http.Header, name string, params json.RawMessage) (inner, errResult json.RawMessage) {
	if g.viewOf(h) != ViewSearch {
		return nil, nil
	}
	search, call := g.viewToolNames()
	if name != call {
		return nil, nil
	}
	var p struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, toolsearch.ErrorResult(fmt.Errorf("%w: %v", toolsearch.ErrArguments, err))
	}
	a, err := toolsearch.ParseCallArgs(p.Arguments)
	if err != nil {
		return nil, toolsearch.ErrorResult(err)
	}
	g.mu.RLock()
	_, known := g.tools.routes[a.Name]
	g.mu.RUnlock()
	if !known {
		return nil, toolsearch.ErrorResult(fmt.Errorf("%w: no tool is named %q: find it with %s first",
			toolsearch.ErrArguments, a.Name, search))
	}
	args := a.Arguments
	if args == nil {
		args = json.RawMessage(`{}`)
	}
	inner, err = innerParams(params, a.Name, args)
	if err != nil {
		return nil, toolsearch.ErrorResult(fmt.Errorf("%w: %v", toolsearch.ErrArguments, err))
	}
	return inner, nil
}
