package aggregate_test

import (
	"encoding/json"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestToolCalledWithoutArguments: a call whose params have no arguments
// member at all (a tool that takes none: MCP makes arguments optional) is
// forwarded and answered like any other.
func TestToolCalledWithoutArguments(t *testing.T) {
	url, _ := startGateway(t, map[string]fixture.Options{"a": {Tools: []string{"pid"}}})
	sid := rawInitialize(t, url)
	events := rawCall(t, url, sid, 2, `{"name":"pid"}`)
	if len(events) == 0 {
		t.Fatal("no answer to a call without arguments")
	}
	var msg struct {
		Result *struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(events[len(events)-1]), &msg); err != nil || msg.Result == nil || msg.Result.IsError ||
		len(msg.Result.Content) != 1 || msg.Result.Content[0].Text == "" {
		t.Errorf("pid without arguments: %s, want the server's pid", events[len(events)-1])
	}
}
