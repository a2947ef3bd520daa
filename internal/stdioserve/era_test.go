package stdioserve

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStdioDoesNotClaimStatelessRevision: the SDK's server/discover, served
// through the stdio Transport, lists only the 2025-era versions, so that a
// client that probes falls back to initialize; a call made in the stateless
// revision anyway gets -32022 naming them, and a 2025-era session is served.
func TestStdioDoesNotClaimStatelessRevision(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	server := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, &Transport{Inner: serverT, Grace: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	client, err := clientT.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	call := func(id float64, method, params string) *jsonrpc.Response {
		t.Helper()
		rid, _ := jsonrpc.MakeID(id)
		if err := client.Write(ctx, &jsonrpc.Request{ID: rid, Method: method, Params: json.RawMessage(params)}); err != nil {
			t.Fatal(err)
		}
		for {
			msg, err := client.Read(ctx)
			if err != nil {
				t.Fatalf("%s: %v", method, err)
			}
			if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID == rid {
				return resp
			}
		}
	}
	const meta2026 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}`

	resp := call(1, "server/discover", `{`+meta2026+`}`)
	if resp.Error != nil {
		t.Fatalf("server/discover: %v", resp.Error)
	}
	var disc struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	if err := json.Unmarshal(resp.Result, &disc); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(disc.SupportedVersions, "2026-07-28") || !slices.Contains(disc.SupportedVersions, "2025-11-25") {
		t.Errorf("server/discover supportedVersions %v: want the 2025-era versions only", disc.SupportedVersions)
	}

	resp = call(2, "tools/list", `{`+meta2026+`}`)
	if resp.Error == nil {
		t.Fatalf("tools/list in the stateless revision answered %s; want -32022", resp.Result)
	}
	var werr *jsonrpc.Error
	if e, ok := resp.Error.(*jsonrpc.Error); ok {
		werr = e
	}
	if werr == nil || werr.Code != mcp.CodeUnsupportedProtocolVersion {
		t.Fatalf("tools/list in the stateless revision: %v; want code %d", resp.Error, mcp.CodeUnsupportedProtocolVersion)
	}
	var data mcp.UnsupportedProtocolVersionData
	if err := json.Unmarshal(werr.Data, &data); err != nil {
		t.Fatal(err)
	}
	if data.Requested != "2026-07-28" || slices.Contains(data.Supported, "2026-07-28") || !slices.Contains(data.Supported, "2025-11-25") {
		t.Errorf("-32022 data %+v: want requested 2026-07-28 and the 2025-era versions", data)
	}

	resp = call(3, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`)
	if resp.Error != nil {
		t.Fatalf("initialize: %v", resp.Error)
	}
	if err := client.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if resp = call(4, "tools/list", `{}`); resp.Error != nil {
		t.Fatalf("tools/list after initialize: %v", resp.Error)
	}
}
