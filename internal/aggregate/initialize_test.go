package aggregate_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestInitializeCapabilitiesMerged: two servers offering different tasks
// capabilities are offered to the agent at initialize as their union,
// member by member and nested, not as the first server's; the lists are
// announced as changing, and subscribe (which a server offers) is a
// member of resources only.
func TestInitializeCapabilitiesMerged(t *testing.T) {
	url, _ := startGateway(t, map[string]fixture.Options{
		"a": {Name: "a", Tasks: true, TasksCapability: `{"list":{},"requests":{"tools":{"call":{}}}}`},
		"b": {Name: "b", Tasks: true, TasksCapability: `{"cancel":{},"requests":{"tools":{"call":{"x-b":true}}}}`},
	})
	var caps struct {
		Tasks     any `json:"tasks"`
		Tools     any `json:"tools"`
		Prompts   any `json:"prompts"`
		Resources any `json:"resources"`
	}
	if err := json.Unmarshal(capabilitiesOf(t, initializeResult(t, url)), &caps); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		got  any
		want string
	}{
		{"tools", caps.Tools, `{"listChanged":true}`},
		{"prompts", caps.Prompts, `{"listChanged":true}`},
		{"resources", caps.Resources, `{"listChanged":true,"subscribe":true}`},
	} {
		var want any
		_ = json.Unmarshal([]byte(c.want), &want)
		if !reflect.DeepEqual(c.got, want) {
			got, _ := json.Marshal(c.got)
			t.Errorf("%s capability %s, want %s", c.name, got, c.want)
		}
	}
	var want any
	_ = json.Unmarshal([]byte(`{"list":{},"cancel":{},"requests":{"tools":{"call":{"x-b":true}}}}`), &want)
	if !reflect.DeepEqual(caps.Tasks, want) {
		got, _ := json.Marshal(caps.Tasks)
		t.Errorf("tasks capability %s, want the union of both servers'", got)
	}
}
