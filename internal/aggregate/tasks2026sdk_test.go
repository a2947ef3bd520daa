package aggregate_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// ask2026 sends one 2026-era request (no session: the client's version,
// capabilities and info in _meta) to the SDK's streamable handler and
// returns its result or error.
func ask2026(t *testing.T, url, method, name, members string, declares bool) (result, rpcErr json.RawMessage) {
	t.Helper()
	caps := `{}`
	if declares {
		caps = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	}
	if members != "" {
		members += ","
	}
	params := `{` + members + `"_meta":{"io.modelcontextprotocol/protocolVersion":"` +
		aggregate.StatelessRevision + `","io.modelcontextprotocol/clientCapabilities":` + caps + `,"io.modelcontextprotocol/clientInfo":{"name":"agent","version":"1"}}}`
	b := post2026(t, url, method, name, params)
	data := strings.TrimSpace(b)
	for _, line := range strings.Split(b, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(d, `"id"`) {
			data = d
		}
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal([]byte(data), &msg); err != nil {
		t.Fatalf("%s: %q: %v", method, b, err)
	}
	return msg.Result, msg.Error
}

// TestTasksExtensionOnTheSDKPath: a 2026-era agent that declared the tasks
// extension, served on the SDK path, runs a 2025 server's task tool as a
// task of the extension: discover offers the extension (not the 2025
// capability), the call answers a flat handle with the gateway's id,
// tasks/get and tasks/cancel reach the server's task by it.
func TestTasksExtensionOnTheSDKPath(t *testing.T) {
	_, _, g := startGatewayG(t, map[string]fixture.Options{"a": {Name: "a", Tasks: true, Tools: []string{"echo"}}})
	// 2026-era requests go to the SDK's handler in its stateless mode, as
	// the endpoint sends those it does not answer itself.
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.Server() },
		&mcp.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true}))
	t.Cleanup(srv.Close)
	url := srv.URL
	disc, e := ask2026(t, url, "server/discover", "", "", true)
	if e != nil {
		t.Fatalf("server/discover: %s", e)
	}
	var d struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	if err := json.Unmarshal(disc, &d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(d.Capabilities["extensions"]), `"io.modelcontextprotocol/tasks":{}`) || d.Capabilities["tasks"] != nil {
		t.Errorf("discover capabilities = %s, want the tasks extension and no 2025 tasks capability", disc)
	}
	created, e := ask2026(t, url, "tools/call", fixture.TaskTool, `"name":"`+fixture.TaskTool+`","arguments":{"ms":600000}`, true)
	var h struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
		Status     string `json:"status"`
	}
	if e != nil || json.Unmarshal(created, &h) != nil || h.ResultType != "task" || !strings.HasPrefix(h.TaskID, "gwt1.") || h.Status != "working" {
		t.Fatalf("tools/call of %s: %s %s, want a 2026 task handle with the gateway's id", fixture.TaskTool, created, e)
	}
	got, e := ask2026(t, url, "tasks/get", h.TaskID, `"taskId":"`+h.TaskID+`"`, true)
	if e != nil || !strings.Contains(string(got), `"taskId":"`+h.TaskID+`"`) || !strings.Contains(string(got), `"status":"working"`) {
		t.Errorf("tasks/get: %s %s, want the task working under the gateway's id", got, e)
	}
	if ack, e := ask2026(t, url, "tasks/cancel", h.TaskID, `"taskId":"`+h.TaskID+`"`, true); e != nil {
		t.Errorf("tasks/cancel: %s %s", ack, e)
	}
	got, e = ask2026(t, url, "tasks/get", h.TaskID, `"taskId":"`+h.TaskID+`"`, true)
	if e != nil || !strings.Contains(string(got), `"status":"cancelled"`) {
		t.Errorf("tasks/get after tasks/cancel: %s %s, want cancelled", got, e)
	}
}

// TestTasksExtensionNeedsTaskCalls: a 2025 server that offers tasks but
// not task-augmented tools/call (no tasks.requests.tools.call) runs no
// call as a task: discover does not offer the extension for it.
func TestTasksExtensionNeedsTaskCalls(t *testing.T) {
	_, _, g := startGatewayG(t, map[string]fixture.Options{"a": {Name: "a", Tasks: true, TasksCapability: `{"list":{},"cancel":{}}`}})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.Server() },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	disc, e := ask2026(t, srv.URL, "server/discover", "", "", true)
	if e != nil || strings.Contains(string(disc), "io.modelcontextprotocol/tasks") {
		t.Errorf("server/discover: %s %s, want no tasks extension", disc, e)
	}
}
