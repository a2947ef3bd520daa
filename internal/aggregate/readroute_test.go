package aggregate_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestReadGoesWhereTheURICanBe: a resources/read goes to the servers the
// URI can be on, and its error says so. Of three servers, a has no
// resources, b lists one, c has a template. A URI of c's template goes to
// c alone, which answers as it would directly (its own error, as it sent
// it); a URI nobody names goes to every server with resources (b, c: not
// a), tried in turn, and the error says whose it is (the first's).
func TestReadGoesWhereTheURICanBe(t *testing.T) {
	noResources := mcp.NewServer(&mcp.Implementation{Name: "a", Version: "1"}, nil)
	mcp.AddTool(noResources, &mcp.Tool{Name: "tool"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	listed := mcp.NewServer(&mcp.Implementation{Name: "b", Version: "1"}, nil)
	listed.AddResource(&mcp.Resource{URI: "b://doc", Name: "doc"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "b's doc"}}}, nil
	})
	templated := mcp.NewServer(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	templated.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "c://item/{id}", Name: "item"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			if strings.HasSuffix(req.Params.URI, "/missing") {
				return nil, &jsonrpc.Error{Code: mcp.CodeResourceNotFound, Message: "c has no item missing"}
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "c's item"}}}, nil
		})
	url, _, _ := memGatewayOf(t, map[string]*mcp.Server{"a": noResources, "b": listed, "c": templated})
	cs := connect(t, url, nil)
	ctx := ctxT(t)

	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "c://item/1"})
	if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "c's item" {
		t.Fatalf("read of c's template: %+v %v", res, err)
	}
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "c://item/missing"})
	if err == nil || !strings.Contains(err.Error(), "c has no item missing") || strings.Contains(err.Error(), `server "`) {
		t.Errorf("read of c's template that c refuses: %v, want c's own error as it sent it", err)
	}
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "nope://x"})
	if err == nil || !strings.Contains(err.Error(), `server "b"`) {
		t.Errorf("read of a URI nobody names: %v, want the error of b, the first server with resources", err)
	}
}

// TestCompletionOfARenamedPrompt: a completion/complete of a prompt
// exported under another name (b's verbatim, after a's took the name)
// reaches b with b's own name in its ref, on the SDK path and on the raw
// path (Route and Send, as the endpoint sends it), where the rest of the
// params stays as the agent wrote it.
func TestCompletionOfARenamedPrompt(t *testing.T) {
	url, _, g := startGatewayG(t, map[string]fixture.Options{"a": {Verbatim: true}, "b": {Verbatim: true}})
	sid := rawInitialize(t, url)
	const params = `{"ref":{"type":"ref/prompt","name":"b_verbatim"},"argument":{"name":"topic","value":"a"}}`
	if got := rawRequest(t, url, sid, "completion/complete", params); string(got) != fixture.VerbatimCompletionJSON {
		t.Errorf("completion of b_verbatim on the SDK path: %s", got)
	}
	f, ok := g.Route("completion/complete", json.RawMessage(params), false)
	if !ok {
		t.Fatal("Route declined the completion of b_verbatim")
	}
	if got, err := g.Send(ctxT(t), sessionOf(t, g, sid), &f, nil, nil); err != nil || string(got) != fixture.VerbatimCompletionJSON {
		t.Errorf("completion of b_verbatim on the raw path: %s %v", got, err)
	}
	res := rawRequest(t, url, sid, "tools/call", `{"name":"b_`+fixture.ParamsSeenTool+`","arguments":{"method":"completion/complete"}}`)
	var seen struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	var got []json.RawMessage
	if err := json.Unmarshal(res, &seen); err != nil || len(seen.Content) != 1 {
		t.Fatalf("params_seen: %s %v", res, err)
	}
	if err := json.Unmarshal([]byte(seen.Content[0].Text), &got); err != nil || len(got) != 2 {
		t.Fatalf("params b saw: %s %v, want two requests'", seen.Content[0].Text, err)
	}
	want := strings.Replace(params, "b_verbatim", "verbatim", 1)
	if canonical(t, got[0]) != canonical(t, json.RawMessage(want)) {
		t.Errorf("b saw the SDK path's completion/complete with params %s, want %s", got[0], want)
	}
	if string(got[1]) != want {
		t.Errorf("b saw the raw path's completion/complete with params %s, want %s", got[1], want)
	}
}

// canonical is JSON re-encoded with sorted keys.
func canonical(t *testing.T, b json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// TestResourcesListPages: resources/list comes in pages of the gateway's
// page size, each cursor leading to the next page, until every resource
// has been listed once.
func TestResourcesListPages(t *testing.T) {
	url, _, _ := startGatewayOpts(t, map[string]fixture.Options{"a": {Name: "a"}}, aggregate.Options{PageSize: 1})
	sid := rawInitialize(t, url)
	var uris []string
	cursor := ""
	for range 10 {
		params := `{}`
		if cursor != "" {
			params = `{"cursor":` + strconv.Quote(cursor) + `}`
		}
		var page struct {
			Resources []struct {
				URI string `json:"uri"`
			} `json:"resources"`
			NextCursor string `json:"nextCursor"`
		}
		if res := rawRequest(t, url, sid, "resources/list", params); json.Unmarshal(res, &page) != nil || len(page.Resources) != 1 {
			t.Fatalf("page after cursor %q: %s, want one resource", cursor, res)
		}
		uris = append(uris, page.Resources[0].URI)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if !slices.Contains(uris, fixture.SharedResourceURI) || !slices.Contains(uris, fixture.ResourceURI("a")) || len(slices.Compact(slices.Sorted(slices.Values(uris)))) != len(uris) {
		t.Errorf("resources listed page by page: %v, want each of a's once", uris)
	}
}
