package aggregate_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestListPageCompact: a server that writes its lists with spaces (valid
// JSON an encoder would write without them) is listed to agents
// compacted, as the SDK path's encoder sends lists: ListPage's bytes are
// the SDK path's for every list.
func TestListPageCompact(t *testing.T) {
	url, _, g := startGatewayG(t, map[string]fixture.Options{"a": {Spaced: true}})
	cs := connect(t, url, nil)
	// The SDK path waits for every server's prompts to be named; ListPage
	// leaves them to it until then.
	if _, err := cs.ListPrompts(ctxT(t), nil); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"} {
		page, _, ok, err := g.ListPage(m, "")
		if !ok || err != nil {
			t.Fatalf("ListPage(%s): %v %v", m, ok, err)
		}
		var out bytes.Buffer
		if err := json.Compact(&out, page); err != nil || !bytes.Equal(out.Bytes(), page) {
			t.Errorf("ListPage(%s) is not compact: %s", m, page)
		}
	}
}

// TestPromptsPagedThroughTheSDKPath: an agent that pages through the
// prompts with the cursor it was given gets each prompt once, in order,
// one page each, the last without a next cursor.
func TestPromptsPagedThroughTheSDKPath(t *testing.T) {
	url, _, _ := startGatewayOpts(t, map[string]fixture.Options{"a": {Name: "a"}, "b": {Name: "b"}}, aggregate.Options{PageSize: 1})
	cs := connect(t, url, nil)
	var pages [][]string
	cursor := ""
	for range 3 {
		res, err := cs.ListPrompts(ctxT(t), &mcp.ListPromptsParams{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range res.Prompts {
			names = append(names, p.Name)
		}
		pages = append(pages, names)
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	// The last page has no next cursor (not one to an empty page).
	if want := [][]string{{"greet"}, {"b_greet"}}; !slices.EqualFunc(pages, want, slices.Equal) || cursor != "" {
		t.Errorf("prompt pages %v (next cursor %q), want %v and no more", pages, cursor, want)
	}
}
