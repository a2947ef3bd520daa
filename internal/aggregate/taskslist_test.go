package aggregate_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// sameJSON reports whether a and b are the same JSON value, whatever the
// order of their members.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}

// TestTaskCapabilitiesMerged: two servers that offer different parts of
// tasks give the agent's initialize their union, merged member by member
// (requests of both), not the first or the last server's alone.
func TestTaskCapabilitiesMerged(t *testing.T) {
	url, _ := startGateway(t, map[string]fixture.Options{
		"a": {Name: "a", Tasks: true, TasksCapability: `{"list":{},"requests":{"tools":{"call":{}}}}`},
		"b": {Name: "b", Tasks: true, TasksCapability: `{"cancel":{},"requests":{"sampling":{"createMessage":{}}}}`},
	})
	var caps struct {
		Tasks json.RawMessage `json:"tasks"`
	}
	if err := json.Unmarshal(capabilitiesOf(t, initializeResult(t, url)), &caps); err != nil {
		t.Fatal(err)
	}
	want := `{"list":{},"cancel":{},"requests":{"tools":{"call":{}},"sampling":{"createMessage":{}}}}`
	if len(caps.Tasks) == 0 || !sameJSON(t, caps.Tasks, []byte(want)) {
		t.Errorf("tasks capability %s, want the union %s", caps.Tasks, want)
	}
}

// TestTasksListAsTheServerSent: with one server offering tasks, an agent's
// tasks/list is that server's result as it sent it (its _meta too), with
// the session's tasks under their exported ids, each once; with two, the
// merged list holds each server's tasks once and neither server's _meta.
func TestTasksListAsTheServerSent(t *testing.T) {
	const meta = `{"example.com/listed-by":"a"}`
	type task struct {
		TaskID string `json:"taskId"`
	}
	list := func(res json.RawMessage) (ids []string, meta json.RawMessage) {
		var l struct {
			Tasks []task          `json:"tasks"`
			Meta  json.RawMessage `json:"_meta"`
		}
		if err := json.Unmarshal(res, &l); err != nil {
			t.Fatalf("tasks/list result %s: %v", res, err)
		}
		for _, tk := range l.Tasks {
			ids = append(ids, tk.TaskID)
		}
		return ids, l.Meta
	}
	t.Run("one server", func(t *testing.T) {
		url, _, g := startGatewayG(t, map[string]fixture.Options{"a": {Name: "a", Tasks: true, TasksListMeta: meta}})
		ss := sessionOf(t, g, rawInitialize(t, url))
		ctx := ctxT(t)
		res, err := g.Task(ctx, ss, nil, "tools/call", json.RawMessage(`{"name":"task_echo","arguments":{},"task":{}}`))
		if err != nil {
			t.Fatal(err)
		}
		taskID := createdTask(t, res)
		got, err := g.Task(ctx, ss, nil, "tasks/list", nil)
		if err != nil {
			t.Fatal(err)
		}
		ids, m := list(got)
		if len(ids) != 1 || ids[0] != taskID {
			t.Errorf("tasks/list %s: tasks %v, want only %s, once", got, ids, taskID)
		}
		if len(m) == 0 || !sameJSON(t, m, []byte(meta)) {
			t.Errorf("tasks/list %s: _meta %s, want the server's %s", got, m, meta)
		}
	})
	t.Run("two servers", func(t *testing.T) {
		url, _, g := startGatewayG(t, map[string]fixture.Options{
			"a": {Name: "a", Tasks: true, TasksListMeta: meta},
			"b": {Name: "b", Tasks: true, TasksListMeta: `{"example.com/listed-by":"b"}`},
		})
		ss := sessionOf(t, g, rawInitialize(t, url))
		ctx := ctxT(t)
		var want []string
		for _, name := range []string{"task_echo", "b_task_echo"} {
			res, err := g.Task(ctx, ss, nil, "tools/call", json.RawMessage(`{"name":"`+name+`","arguments":{},"task":{}}`))
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, createdTask(t, res))
		}
		got, err := g.Task(ctx, ss, nil, "tasks/list", nil)
		if err != nil {
			t.Fatal(err)
		}
		ids, m := list(got)
		if !reflect.DeepEqual(ids, want) {
			t.Errorf("tasks/list %s: tasks %v, want %v, each once, in server order", got, ids, want)
		}
		if m != nil {
			t.Errorf("tasks/list %s: _meta %s, want none (it is one server's)", got, m)
		}
	})
}

// TestTaskErrorsAsTheServerSent: a task's tasks/result that the server
// answers with a JSON-RPC error reaches the agent as that error, its code
// and message, the server named.
func TestTaskErrorsAsTheServerSent(t *testing.T) {
	url, _, g := startGatewayG(t, map[string]fixture.Options{"a": {Name: "a", Tasks: true}})
	ss := sessionOf(t, g, rawInitialize(t, url))
	ctx := ctxT(t)
	res, err := g.Task(ctx, ss, nil, "tools/call", json.RawMessage(`{"name":"task_echo","arguments":{"fail":"protocol","ms":1},"task":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	taskID := createdTask(t, res)
	_, err = g.Task(ctx, ss, nil, "tasks/result", json.RawMessage(`{"taskId":"`+taskID+`"}`))
	var wire *jsonrpc.Error
	if !errors.As(err, &wire) || wire.Code != -32603 || !strings.Contains(wire.Message, "task failed as asked") || !strings.Contains(wire.Message, `"a"`) {
		t.Errorf("tasks/result of a failed task: %v, want the server's -32603 \"task failed as asked\", naming server a", err)
	}
}

// TestTasksListPastAFailingServer: a server whose tasks/list fails does
// not hide the session's tasks on another server; with no task to list,
// the failure is the answer, naming that server.
func TestTasksListPastAFailingServer(t *testing.T) {
	url, _, g := startGatewayG(t, map[string]fixture.Options{
		"a": {Name: "a", Tasks: true},
		"b": {Name: "b", Tasks: true, TasksListFails: true},
	})
	ctx := ctxT(t)
	ss := sessionOf(t, g, rawInitialize(t, url))
	res, err := g.Task(ctx, ss, nil, "tools/call", json.RawMessage(`{"name":"task_echo","arguments":{},"task":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	taskID := createdTask(t, res)
	list, err := g.Task(ctx, ss, nil, "tasks/list", nil)
	if err != nil || !strings.Contains(string(list), `"taskId":"`+taskID+`"`) {
		t.Errorf("tasks/list with b failing: %s %v, want a's task", list, err)
	}
	other := sessionOf(t, g, rawInitialize(t, url))
	list, err = g.Task(ctx, other, nil, "tasks/list", nil)
	var wire *jsonrpc.Error
	if !errors.As(err, &wire) || !strings.Contains(wire.Message, "tasks/list failed as asked") || !strings.Contains(wire.Message, `"b"`) {
		t.Errorf("tasks/list of a session without tasks, b failing: %s %v, want b's error", list, err)
	}
}

// createdTask is the taskId of a CreateTaskResult.
func createdTask(t *testing.T, res json.RawMessage) string {
	t.Helper()
	var created struct {
		Task struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	if err := json.Unmarshal(res, &created); err != nil || created.Task.TaskID == "" {
		t.Fatalf("not a created task: %s %v", res, err)
	}
	return created.Task.TaskID
}
