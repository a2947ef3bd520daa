package aggregate

import (
	"context"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestToolsListedPageByPage: an agent that lists tools on the SDK path
// with the cursor of each page gets the next page, until the last, each
// tool once; the first page also for a request without params.
func TestToolsListedPageByPage(t *testing.T) {
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "fx"}, nil)
	all := []string{"a", "b", "c", "d", "e"}
	for _, name := range all {
		mcp.AddTool(srv, &mcp.Tool{Name: name}, func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
	}
	st, ct := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	g := New(Options{PageSize: 2})
	cs, err := g.NewClient("fx").Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	g.Add(&memUpstream{name: "fx", cs: cs})
	if err := g.Sync(ctx, "fx", cs, nil); err != nil {
		t.Fatal(err)
	}
	g.Open()
	agent := connectAgent(t, ctx, g)
	var got []string
	var params *mcp.ListToolsParams // nil: the first request has no params
	for pages := 0; ; pages++ {
		if pages == len(all) {
			t.Fatalf("still listing after %d pages: %v", pages, got)
		}
		res, err := agent.ListTools(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tools) > 2 {
			t.Errorf("page %d has %d tools, want at most 2", pages, len(res.Tools))
		}
		for _, tool := range res.Tools {
			got = append(got, tool.Name)
		}
		if res.NextCursor == "" {
			break
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
	if !slices.Equal(got, all) {
		t.Errorf("listed %v page by page, want %v, each once", got, all)
	}
}
