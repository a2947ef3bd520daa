package aggregate

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestListPagesKept: ListPage keeps the pages it encodes, once per version
// of the list: the first page and those its next cursors point to, not a
// page at a cursor the gateway never handed out (an offset spelled another
// way), which any agent could send to grow the cache without bound.
func TestListPagesKept(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "fx"}, nil)
	for i := range 5 {
		mcp.AddTool(srv, &mcp.Tool{Name: fmt.Sprintf("t%d", i)}, func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
	}
	g, _, _ := memGatewayOf(t, Options{PageSize: 2}, srv, json.RawMessage(`{}`), nil)
	page := func(cursor string) json.RawMessage {
		t.Helper()
		b, _, ok, err := g.ListPage("tools/list", cursor)
		if !ok || err != nil || len(b) == 0 {
			t.Fatalf("ListPage(tools/list, %q): %s %v %v", cursor, b, ok, err)
		}
		return b
	}
	same := func(a, b json.RawMessage) bool { return &a[0] == &b[0] }
	first := page("")
	if !same(first, page("")) {
		t.Error("the first page is encoded again, not kept")
	}
	var next struct {
		NextCursor string `json:"nextCursor"`
	}
	if err := json.Unmarshal(first, &next); err != nil || next.NextCursor == "" {
		t.Fatalf("first page %s: no next cursor (%v)", first, err)
	}
	if !same(page(next.NextCursor), page(next.NextCursor)) {
		t.Errorf("the page at the next cursor %q is encoded again, not kept", next.NextCursor)
	}
	const other = "MDI" // "02": the second page's offset, spelled otherwise
	a, b := page(other), page(other)
	if same(a, b) {
		t.Errorf("the page at cursor %q, which the gateway never handed out, is kept", other)
	}
	g.mu.RLock()
	n := len(g.pages[toolsList].pages)
	g.mu.RUnlock()
	if n != 2 {
		t.Errorf("%d pages kept, want 2 (the first and the second)", n)
	}
}
