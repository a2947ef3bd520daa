package aggregate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// benchToolsPage is a tools/list result of n tools as the fixture servers of
// the launch benchmark send it (100 per server there).
func benchToolsPage(server string, n int) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"ttlMs":0,"cacheScope":"public","tools":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"description":"Returns the server and tool name.","inputSchema":{"type":"object","additionalProperties":true},"name":"%s_t%03d"}`, server, i)
	}
	b.WriteString(`]}`)
	return json.RawMessage(b.String())
}

// BenchmarkListToolsRaw is one server's first listing at start: 100 tools
// on one page.
func BenchmarkListToolsRaw(b *testing.B) {
	page := benchToolsPage("s00", 100)
	rt := func(context.Context, string, json.RawMessage) (json.RawMessage, error) { return page, nil }
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok := listToolsRaw(context.Background(), rt); !ok {
			b.Fatal("declined")
		}
	}
}

// BenchmarkRebuildTools is the first naming of 64 servers' 100 tools each,
// listed raw, as Open does it once every server has started.
func BenchmarkRebuildTools(b *testing.B) {
	const servers = 64
	type listed struct {
		tools []*mcp.Tool
		raw   map[string]json.RawMessage
	}
	var names []string
	ups := map[string]Upstream{}
	lists := map[string]listed{}
	for i := range servers {
		s := fmt.Sprintf("s%02d", i)
		page := benchToolsPage(s, 100)
		tools, raw, ok := listToolsRaw(context.Background(), func(context.Context, string, json.RawMessage) (json.RawMessage, error) { return page, nil })
		if !ok {
			b.Fatal("declined")
		}
		names = append(names, s)
		ups[s] = nil
		lists[s] = listed{tools, raw}
	}
	b.ReportAllocs()
	for b.Loop() {
		m := newNamed(func(t *mcp.Tool) string { return t.Name },
			func(t *mcp.Tool, name string) *mcp.Tool { c := *t; c.Name = name; return &c })
		for _, s := range names {
			m.setServer(s, lists[s].tools, lists[s].raw)
		}
		m.rebuild(names, ups)
	}
}
