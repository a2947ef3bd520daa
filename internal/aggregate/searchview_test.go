package aggregate_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/toolsearch"
)

// serveView serves g's merged server a second time, with every request
// asking for tool view v in its header, as the endpoint marks the
// requests of its ?tools=search URL (aggregate.WithToolsView).
func serveView(t *testing.T, g *aggregate.Gateway, v aggregate.ToolsView) string {
	t.Helper()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.Server() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header = aggregate.WithToolsView(r.Header, v)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		for ss := range g.Server().Sessions() {
			ss.Close()
		}
		srv.Close()
	})
	return srv.URL
}

// toolNames lists a session's tools by name.
func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(ctxT(t), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	return names
}

// TestSearchViewPerRequest: the tool view is the request's. Of one
// gateway (default view: all), an agent whose requests ask for the search
// view lists search_tools and call_tool only, finds a tool with the one
// and calls it with the other, and can still call it by its name; an
// agent without the header lists the servers' tools, and the search
// view's tools are no tools of its: calling them is calling an unknown
// tool.
func TestSearchViewPerRequest(t *testing.T) {
	url, _, g := startGatewayG(t, map[string]fixture.Options{"a": {}})
	ctx := ctxT(t)
	plain := connect(t, url, nil)
	search := connect(t, serveView(t, g, aggregate.ViewSearch), nil)

	if got := toolNames(t, search); !slices.Equal(got, []string{toolsearch.SearchToolName, toolsearch.CallToolName}) {
		t.Errorf("tools of the search view: %v, want [%s %s]", got, toolsearch.SearchToolName, toolsearch.CallToolName)
	}
	if got := toolNames(t, plain); !slices.Contains(got, "echo") || slices.Contains(got, toolsearch.SearchToolName) {
		t.Errorf("tools of the default view: %v, want the server's", got)
	}

	res, err := search.CallTool(ctx, &mcp.CallToolParams{Name: toolsearch.SearchToolName, Arguments: map[string]any{"query": "returns text unchanged"}})
	if err != nil || res.IsError || !strings.Contains(textOf(t, res), "echo") {
		t.Fatalf("search_tools in the search view: %+v %v", res, err)
	}
	res, err = search.CallTool(ctx, &mcp.CallToolParams{Name: toolsearch.CallToolName,
		Arguments: map[string]any{"name": "echo", "arguments": map[string]any{"text": "found"}}})
	if err != nil || res.IsError || textOf(t, res) != "found" {
		t.Fatalf("call_tool of echo in the search view: %+v %v", res, err)
	}
	res, err = search.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "direct"}})
	if err != nil || res.IsError || textOf(t, res) != "direct" {
		t.Fatalf("echo by its name in the search view: %+v %v", res, err)
	}

	for _, name := range []string{toolsearch.SearchToolName, toolsearch.CallToolName} {
		res, err := plain.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"query": "echo", "name": "echo"}})
		if err == nil && !res.IsError {
			t.Errorf("%s in the default view answered %+v, want an unknown tool", name, res)
		}
	}

	// The endpoint's raw path leaves to the SDK path what the search view
	// answers, and only that.
	sv := aggregate.WithToolsView(nil, aggregate.ViewSearch)
	for _, c := range []struct {
		h      http.Header
		method string
		params string
		want   bool
	}{
		{sv, "tools/list", `{}`, true},
		{sv, "tools/call", `{"name":"call_tool"}`, true},
		{sv, "tools/call", `{"name":"search_tools"}`, true},
		{sv, "tools/call", `{"name":"echo"}`, false},
		{sv, "prompts/list", `{}`, false},
		{nil, "tools/list", `{}`, false},
		{nil, "tools/call", `{"name":"call_tool"}`, false},
	} {
		if got := g.ViewOwns(c.h, c.method, json.RawMessage(c.params)); got != c.want {
			t.Errorf("ViewOwns(%v, %s, %s) = %v, want %v", c.h, c.method, c.params, got, c.want)
		}
	}
}

// TestSearchViewTaskCall: in the search view, a task-augmented call_tool
// is the task call of the tool it names; in the default view call_tool is
// no tool, with a task or without.
func TestSearchViewTaskCall(t *testing.T) {
	url, _, g := startGatewayG(t, map[string]fixture.Options{"a": {Name: "a", Tasks: true}})
	ctx := ctxT(t)
	ss := sessionOf(t, g, rawInitialize(t, url))
	params := json.RawMessage(`{"name":"call_tool","arguments":{"name":"task_echo","arguments":{"x":1}},"task":{"ttl":60000}}`)
	res, err := g.Task(ctx, ss, aggregate.WithToolsView(nil, aggregate.ViewSearch), "tools/call", params)
	if err != nil || !strings.Contains(string(res), `"status":"working"`) {
		t.Fatalf("call_tool of task_echo as a task in the search view: %s %v", res, err)
	}
	if res, err := g.Task(ctx, ss, nil, "tools/call", params); err == nil {
		t.Errorf("call_tool as a task in the default view: %s, want an unknown tool", res)
	}
}
