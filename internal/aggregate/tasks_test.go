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
