package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
)

// TestOfferWrite: the initialize request gets the offered capabilities
// beside its own; other messages are left as they are.
func TestOfferWrite(t *testing.T) {
	offer := map[string]json.RawMessage{"tasks": json.RawMessage(`{"list":{}}`)}
	id, _ := jsonrpc.MakeID(float64(1))
	for _, c := range []struct{ params, want string }{
		{`{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"g","version":"1"}}`,
			`{"capabilities":{"roots":{"listChanged":true},"tasks":{"list":{}}},"clientInfo":{"name":"g","version":"1"},"protocolVersion":"2025-11-25"}`},
		{`{"protocolVersion":"2025-11-25"}`, `{"capabilities":{"tasks":{"list":{}}},"protocolVersion":"2025-11-25"}`},
	} {
		msg, err := offerWrite(&jsonrpc.Request{ID: id, Method: "initialize", Params: json.RawMessage(c.params)}, offer)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(msg.(*jsonrpc.Request).Params); got != c.want {
			t.Errorf("initialize params %s\n got %s\nwant %s", c.params, got, c.want)
		}
	}
	other := &jsonrpc.Request{ID: id, Method: "tools/list", Params: json.RawMessage(`{}`)}
	if msg, err := offerWrite(other, offer); err != nil || msg != jsonrpc.Message(other) {
		t.Errorf("tools/list rewritten: %v %v", msg, err)
	}
	if _, err := offerWrite(&jsonrpc.Request{ID: id, Method: "initialize", Params: json.RawMessage(`[1]`)}, offer); err == nil {
		t.Error("initialize params that are not an object: no error")
	}
}

// TestOfferRemote: a remote's initialize request, which the SDK's
// streamable client sends through its own connection, carries the offered
// capabilities on the wire, as the remote receives it.
func TestOfferRemote(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "offered", Version: "1"}, nil)
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	inits := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if strings.Contains(string(body), `"method":"initialize"`) {
			select {
			case inits <- string(body):
			default:
			}
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		sdk.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r, _ := runRemote(t, catalog.ServerSpec{URL: srv.URL}, RemoteOptions{ProbeInterval: -1,
		OfferCapabilities: map[string]json.RawMessage{"tasks": json.RawMessage(`{"list":{}}`)}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case body := <-inits:
		var msg struct {
			Params struct {
				Capabilities map[string]json.RawMessage `json:"capabilities"`
			} `json:"params"`
		}
		if err := json.Unmarshal([]byte(body), &msg); err != nil {
			t.Fatalf("initialize body %s: %v", body, err)
		}
		if got := string(msg.Params.Capabilities["tasks"]); got != `{"list":{}}` {
			t.Errorf("initialize capabilities %s: tasks = %q, want the offered {\"list\":{}}", body, got)
		}
	default:
		t.Fatal("the remote received no initialize request")
	}
}
