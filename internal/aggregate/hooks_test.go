package aggregate_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/intercept"
)

// TestInterceptorsApply: the gateway's interceptors hide the tools a
// filter denies from the agent's list, and run around the calls they
// apply to: a size guard refuses a result past its bound (the server
// answered), and lets a small one through.
func TestInterceptorsApply(t *testing.T) {
	cfg, err := intercept.Parse([]byte(`{"interceptors":[` +
		`{"name":"no-crash","type":"toolFilter","deny":["crash"]},` +
		`{"name":"size","type":"sizeGuard","tools":["big"],"maxResultBytes":200}]}`))
	if err != nil {
		t.Fatal(err)
	}
	engine := intercept.New(cfg, []catalog.ServerSpec{{Name: "a"}}, intercept.Options{})
	t.Cleanup(engine.Close)
	url, _, _ := startGatewayOpts(t, map[string]fixture.Options{"a": {}}, aggregate.Options{Interceptors: engine})
	cs := connect(t, url, nil)
	ctx := ctxT(t)

	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if slices.Contains(names, "crash") || !slices.Contains(names, "big") {
		t.Errorf("tools %v: want big, and crash hidden by the filter", names)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"bytes": 1000}})
	if err != nil || !res.IsError || !strings.Contains(textOf(t, res), "at most 200") {
		t.Errorf("a 1000-byte result past the guard's 200: %+v %v, want it refused", res, err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"bytes": 10}})
	if err != nil || res.IsError || textOf(t, res) != strings.Repeat("x", 10) {
		t.Errorf("a 10-byte result: %+v %v, want it as sent", res, err)
	}
}
