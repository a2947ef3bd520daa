package supervisor

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
