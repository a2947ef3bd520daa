package stdioserve

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStdioServesBothEras: through the stdio Transport, the SDK's
// server/discover lists both eras' versions, a call in the 2026 revision is
// served with its resultType, a version neither era has (1900-01-01, which
// the SDK alone would serve as a 2025-era request) gets -32022 naming both
// eras' versions, and a connection opened with initialize is a 2025-era
// session as before.
func TestStdioServesBothEras(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	server := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	connect := func() mcp.Connection {
		serverT, clientT := mcp.NewInMemoryTransports()
		ss, err := server.Connect(ctx, &Transport{Inner: serverT, Grace: time.Second}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		client, err := clientT.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.Close() })
		return client
	}
	client := connect()
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
	if !slices.Contains(disc.SupportedVersions, "2026-07-28") || !slices.Contains(disc.SupportedVersions, "2025-11-25") {
		t.Errorf("server/discover supportedVersions %v: want both eras' versions", disc.SupportedVersions)
	}

	resp = call(2, "tools/list", `{`+meta2026+`}`)
	if resp.Error != nil || !strings.Contains(string(resp.Result), `"resultType":"complete"`) || !strings.Contains(string(resp.Result), `"echo"`) {
		t.Fatalf("tools/list in the 2026 revision: %s %v; want the tools with resultType", resp.Result, resp.Error)
	}

	resp = call(3, "tools/list", `{`+strings.ReplaceAll(meta2026, "2026-07-28", "1900-01-01")+`}`)
	var werr *jsonrpc.Error
	if e, ok := resp.Error.(*jsonrpc.Error); ok {
		werr = e
	}
	if werr == nil || werr.Code != mcp.CodeUnsupportedProtocolVersion {
		t.Fatalf("tools/list claiming 1900-01-01: %s %v; want code %d", resp.Result, resp.Error, mcp.CodeUnsupportedProtocolVersion)
	}
	var data mcp.UnsupportedProtocolVersionData
	if err := json.Unmarshal(werr.Data, &data); err != nil {
		t.Fatal(err)
	}
	if data.Requested != "1900-01-01" || !slices.Contains(data.Supported, "2026-07-28") || !slices.Contains(data.Supported, "2025-11-25") {
		t.Errorf("-32022 data %+v: want requested 1900-01-01 and both eras' versions", data)
	}

	client = connect()
	resp = call(4, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`)
	if resp.Error != nil {
		t.Fatalf("initialize: %v", resp.Error)
	}
	if err := client.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if resp = call(5, "tools/list", `{}`); resp.Error != nil || strings.Contains(string(resp.Result), "resultType") {
		t.Fatalf("tools/list after initialize: %s %v; want the 2025 era's result", resp.Result, resp.Error)
	}
}
