package aggregate

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// namedUpstream is an Upstream of which only the name is used.
type namedUpstream string

func (u namedUpstream) Name() string { return string(u) }
func (u namedUpstream) Do(context.Context, func(*mcp.ClientSession) error) error {
	return nil
}

// TestTaskStatusOfUnknownTask: a server's status for a task the gateway
// does not know is given to nobody and makes no entry; while a
// task-augmented call to that server is in flight it is held, and goes to
// the session the call's task belongs to once its answer comes.
func TestTaskStatusOfUnknownTask(t *testing.T) {
	g := New(Options{})
	g.Add(namedUpstream("s"))
	g.relayTaskStatus("s", json.RawMessage(`{"taskId":"7","status":"working"}`))
	if n := g.tasks.Len(); n != 0 {
		t.Fatalf("a status of an unknown task made %d entries", n)
	}
	ss := &mcp.ServerSession{}
	done := g.tasks.Expect("s")
	g.relayTaskStatus("s", json.RawMessage(`{"taskId":"7","status":"working"}`))
	g.relayTaskStatus("s", json.RawMessage(`{"taskId":"8","status":"working"}`))
	if n := g.tasks.Len(); n != 0 {
		t.Fatalf("a held status made %d entries", n)
	}
	id, early := g.tasks.Export("s", "7", ss, 0)
	done()
	if len(early) != 1 || !strings.Contains(string(early[0]), `"taskId":"7"`) || !strings.HasPrefix(id, "task-") {
		t.Errorf("held statuses for task 7: %s (id %s)", early, id)
	}
	if g.tasks.Hold("s", "8", json.RawMessage(`{"taskId":"8","status":"working"}`)) {
		t.Error("a status is still held after the call ended")
	}
}

// TestIsTaskRequest: the 2025 task path takes tasks/* and a tools/call
// whose params ask for a task, unless the request claims the 2026 revision
// or a later one (the tasks extension's handlers answer those); a "task"
// elsewhere (in the arguments) or a null task is a plain call.
func TestIsTaskRequest(t *testing.T) {
	claim := func(v string) string { return `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + v + `"}` }
	for _, c := range []struct {
		method, params string
		want           bool
	}{
		{"tasks/get", `{"taskId":"t"}`, true},
		{"tasks/list", ``, true},
		{"tools/call", `{"name":"t","task":{}}`, true},
		{"tools/call", `{"name":"t","task":{"ttl":60000},` + claim("2025-11-25") + `}`, true},
		{"tools/call", `{"name":"t","task":{},` + claim(StatelessRevision) + `}`, false},
		{"tools/call", `{"name":"t","task":{},` + claim("2027-01-01") + `}`, false},
		{"tasks/get", `{"taskId":"t",` + claim(StatelessRevision) + `}`, false},
		{"tools/call", `{"name":"t","\u0074ask":{}}`, true},
		{"tools/call", `{"name":"t"}`, false},
		{"tools/call", `{"name":"t","arguments":{"task":{"due":"today"}}}`, false},
		{"tools/call", `{"name":"t","arguments":{"\u00e9":"task"}}`, false},
		{"tools/call", `{"name":"t","task":null}`, false},
		{"tools/call", `{"name":"t","task":{}`, false},
		{"prompts/get", `{"name":"t","task":{}}`, false},
	} {
		if got := IsTaskRequest(c.method, json.RawMessage(c.params)); got != c.want {
			t.Errorf("IsTaskRequest(%s, %s) = %v, want %v", c.method, c.params, got, c.want)
		}
	}
}
