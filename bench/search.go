package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/toolsearch"
)

// The search view's targets (docs/tool-search.md).
const (
	targetSearchP50   = time.Millisecond // search_tools at 3,000 tools, over HTTP
	targetSearchList  = 3 << 10          // the search view's tools/list, bytes
	searchTools       = 3000             // search_tools and the index build are judged here
	searchListTools   = 1000             // the views' tools/list sizes are compared here
	searchToolsPerSrv = 100
	searchCalls       = 300 // search_tools calls for the p50
)

// searchServer is a fixture with searchToolsPerSrv tools of its own named
// like real ones (verb_noun), so that searches match a few of them rather
// than all or none.
func searchServer(i int) fixture.Options {
	verbs := []string{"get", "list", "create", "update", "delete", "search", "run", "send", "read", "write"}
	nouns := []string{"issue", "file", "page", "user", "message", "record", "branch", "comment", "table", "event"}
	name := serverName(i)
	tools := make([]string, searchToolsPerSrv)
	for j := range tools {
		tools[j] = fmt.Sprintf("%s_%s_%s%d", verbs[j%len(verbs)], nouns[(j/len(verbs))%len(nouns)], name, j)
	}
	return fixture.Options{Name: name, Tools: []string{fixture.NoTools}, ExtraTools: tools}
}

// searchRuns measures the search view: the size of tools/list in each view
// at 1,000 tools, search_tools' p50 over HTTP and the index build at 3,000.
func (b *bench) searchRuns(ctx context.Context) error {
	listServers, servers, calls := searchListTools/searchToolsPerSrv, searchTools/searchToolsPerSrv, searchCalls
	if b.opt.quick {
		listServers, servers, calls = 2, 3, 20
	}
	b.logf("search view: tools/list sizes at %s tools", count(listServers*searchToolsPerSrv))
	bx, _, err := b.launch(ctx, "search-list", fixtureServers(listServers, searchServer))
	if err != nil {
		return err
	}
	hc := bx.httpClient()
	sizes := map[string]int{}
	for _, view := range []string{"all", "search"} {
		cs, err := connectView(ctx, bx, hc, view)
		if err != nil {
			return err
		}
		n, err := listBytes(ctx, cs)
		cs.Close()
		if err != nil {
			return fmt.Errorf("tools/list, view %s: %w", view, err)
		}
		sizes[view] = n
	}
	tools := listServers * searchToolsPerSrv
	b.tbl.add(fmt.Sprintf("tools/list size, %s tools, view all", count(tools)), fmt.Sprintf("%d KB", sizes["all"]>>10), "", none)
	b.tbl.add(fmt.Sprintf("tools/list size, %s tools, view search", count(tools)), fmt.Sprintf("%d bytes", sizes["search"]),
		"< 3 KB", judge(sizes["search"] < targetSearchList))
	if err := b.stop(bx); err != nil {
		return err
	}

	tools = servers * searchToolsPerSrv
	b.logf("search view: search_tools at %s tools, %d calls", count(tools), calls)
	bx, _, err = b.launch(ctx, "search-calls", fixtureServers(servers, searchServer))
	if err != nil {
		return err
	}
	hc = bx.httpClient()
	cs, err := connectView(ctx, bx, hc, "search")
	if err != nil {
		return err
	}
	defer cs.Close()
	queries := []string{"find the comments of an issue", "send a message to a user", "delete a branch",
		"read a file", "update a record in a table", "list the events"}
	var took []time.Duration
	for i := range calls + 1 {
		began := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: toolsearch.SearchToolName,
			Arguments: map[string]any{"query": queries[i%len(queries)]}})
		if err != nil {
			return fmt.Errorf("search_tools: %w", err)
		}
		if res.IsError || res.StructuredContent == nil {
			return fmt.Errorf("search_tools answered %+v", res)
		}
		if i > 0 { // the first builds the index
			took = append(took, time.Since(began))
		}
	}
	slices.Sort(took)
	p50 := took[len(took)/2]
	b.tbl.add(fmt.Sprintf("search_tools over HTTP, %s tools: p50", count(tools)), dur(p50), "< 1 ms",
		judge(p50 < targetSearchP50))

	// The index build, in this process over the same tools as listed.
	all, err := connectView(ctx, bx, hc, "all")
	if err != nil {
		return err
	}
	var docs []toolsearch.Doc
	for t, err := range all.Tools(ctx, nil) {
		if err != nil {
			all.Close()
			return err
		}
		docs = append(docs, toolsearch.Doc{Name: t.Name, Description: t.Description, Params: toolsearch.ParamsOf(t.InputSchema)})
	}
	all.Close()
	var builds []time.Duration
	for range 9 {
		began := time.Now()
		toolsearch.Build(docs, toolsearch.Options{})
		builds = append(builds, time.Since(began))
	}
	slices.Sort(builds)
	b.tbl.add(fmt.Sprintf("search index build, %s tools: median of 9", count(len(docs))), dur(builds[len(builds)/2]), "", none)
	return b.stop(bx)
}

// connectView opens a session in the given tool view (/mcp?tools=view).
func connectView(ctx context.Context, bx *box, hc *http.Client, view string) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-agent", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: "http://" + bx.addr + "/mcp?tools=" + view, HTTPClient: hc}
	cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: bx.protocol})
	if err != nil {
		return nil, fmt.Errorf("connect to gateway, view %s: %w", view, err)
	}
	return cs, nil
}

// listBytes is the size of every tools/list result of cs, all pages, as
// JSON: what an agent's model reads of the list.
func listBytes(ctx context.Context, cs *mcp.ClientSession) (int, error) {
	n := 0
	params := &mcp.ListToolsParams{}
	for {
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return 0, err
		}
		b, err := json.Marshal(res)
		if err != nil {
			return 0, err
		}
		n += len(b)
		if res.NextCursor == "" {
			return n, nil
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}
