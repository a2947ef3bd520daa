package aggregate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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
