package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// clientTaskStep is one step's report of test/ts/clienttasks.mjs: the fixture's ClientTaskReport, or the call's
// error.
type clientTaskStep struct {
	Error       string          `json:"error"`
	ClientTasks json.RawMessage `json:"clientTasks"`
	Created     struct {
		Task struct {
			TaskID string `json:"taskId"`
			Status string `json:"status"`
		} `json:"task"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	} `json:"created"`
	List struct {
		Tasks []struct {
			TaskID string `json:"taskId"`
		} `json:"tasks"`
	} `json:"list"`
	Get struct {
		TaskID string `json:"taskId"`
		Status string `json:"status"`
	} `json:"get"`
	Result struct {
		Content json.RawMessage `json:"content"`
		Action  string          `json:"action"`
		Meta    struct {
			Related struct {
				TaskID string `json:"taskId"`
			} `json:"io.modelcontextprotocol/related-task"`
		} `json:"_meta"`
	} `json:"result"`
	Cancel struct {
		TaskID string `json:"taskId"`
		Status string `json:"status"`
	} `json:"cancel"`
	Statuses []struct {
		TaskID string `json:"taskId"`
		Status string `json:"status"`
	} `json:"statuses"`
}

func runClientTasks(t *testing.T, ts string, args ...string) map[string]clientTaskStep {
	t.Helper()
	cmd := exec.Command("node", append([]string{filepath.Join(ts, "clienttasks.mjs")}, args...)...)
	cmd.Dir = ts
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("clienttasks.mjs: %v: %s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var steps map[string]clientTaskStep
	if err := json.Unmarshal(out, &steps); err != nil {
		t.Fatalf("clienttasks.mjs output %s: %v", out, err)
	}
	return steps
}

// checkClientTask checks one completed client task as the server saw it: created as id, polled to completed, its
// result fetched with id in its related-task _meta, listed, and its status notification relayed with id.
func checkClientTask(t *testing.T, step string, s clientTaskStep, id, resultHas string) {
	t.Helper()
	if s.Error != "" || s.Created.Error != nil {
		t.Fatalf("%s: %+v", step, s)
	}
	if got := strings.Join(strings.Fields(string(s.ClientTasks)), ""); got != `{"list":{},"cancel":{},"requests":{"sampling":{"createMessage":{}},"elicitation":{"create":{}}}}` {
		t.Errorf("%s: the server was offered tasks %s, want list, cancel, sampling and elicitation", step, s.ClientTasks)
	}
	if s.Created.Task.TaskID != id || s.Get.TaskID != id || s.Get.Status != "completed" {
		t.Errorf("%s: created %+v, tasks/get %+v; want task %q completed", step, s.Created.Task, s.Get, id)
	}
	if s.Result.Meta.Related.TaskID != id {
		t.Errorf("%s: tasks/result's related task %q, want %q", step, s.Result.Meta.Related.TaskID, id)
	}
	if !strings.Contains(string(s.Result.Content), resultHas) {
		t.Errorf("%s: tasks/result %+v, want the agent's answer %q", step, s.Result, resultHas)
	}
	listed := false
	for _, tk := range s.List.Tasks {
		listed = listed || tk.TaskID == id
	}
	if !listed {
		t.Errorf("%s: tasks/list %+v lacks %q", step, s.List.Tasks, id)
	}
	if len(s.Statuses) == 0 || s.Statuses[len(s.Statuses)-1].TaskID != id || s.Statuses[len(s.Statuses)-1].Status != "completed" {
		t.Errorf("%s: statuses the server got %+v, want the agent's completed status of %q", step, s.Statuses, id)
	}
}

// checkClientTaskCancelled checks a client task the server cancelled.
func checkClientTaskCancelled(t *testing.T, step string, s clientTaskStep, id string) {
	t.Helper()
	if s.Error != "" || s.Created.Error != nil || s.Created.Task.TaskID != id || s.Created.Task.Status != "working" {
		t.Fatalf("%s: %+v, want task %q working", step, s, id)
	}
	if s.Cancel.TaskID != id || s.Cancel.Status != "cancelled" {
		t.Errorf("%s: tasks/cancel %+v, want %q cancelled", step, s.Cancel, id)
	}
}

// TestClientTasksHTTP: servers are offered the client-side tasks capability; a task-augmented sampling or elicitation
// request reaches the calling agent, which runs it as a task (the official TypeScript SDK client's task store); the
// server's tasks/get, tasks/result, tasks/list and tasks/cancel reach the session that holds the task, and that
// session's notifications/tasks/status reach the server. Two agents make equal task ids: the first keeps its own, the
// second's is replaced for the server (and mapped back). An agent whose client declares no tasks makes the server get
// -32601 at once.
func TestClientTasksHTTP(t *testing.T) {
	ts := tsHarness(t)
	t.Parallel()
	sb := newTestbox(t)
	sb.mustLaunch(mcpConfig(t, map[string]any{"fx": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "fx", Tasks: true})}}))
	steps := runClientTasks(t, ts, "http", sb.url()+"/mcp", sb.token)

	checkClientTask(t, "A sampling", steps["A sampling"], "1", "A sampled")

	b := steps["B elicitation"]
	bid := b.Created.Task.TaskID
	if !strings.HasPrefix(bid, "mcp-gateway-task-") {
		t.Errorf("B's task %q: A's live task of the same server has id 1 too; want an id of the gateway's", bid)
	}
	checkClientTask(t, "B elicitation", b, bid, `"name":"B"`)
	var listed []string
	for _, tk := range b.List.Tasks {
		listed = append(listed, tk.TaskID)
	}
	if strings.Join(listed, ",") != "1,"+bid {
		t.Errorf("tasks/list during B's call: %v, want A's task 1 and B's %s", listed, bid)
	}

	c := steps["C sampling"]
	if c.Created.Error == nil || c.Created.Error.Code != -32601 || !strings.Contains(c.Created.Error.Message, "task-augmented sampling/createMessage") {
		t.Errorf("C (no tasks capability): the server got %+v, want -32601 naming task-augmented sampling", c.Created)
	}

	checkClientTaskCancelled(t, "A elicitation cancelled", steps["A elicitation cancelled"], "2")
}

// TestClientTasksStdio: the same through `mcp-gateway stdio`, one agent.
func TestClientTasksStdio(t *testing.T) {
	ts := tsHarness(t)
	t.Parallel()
	cfg := mcpConfig(t, map[string]any{"fx": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "fx", Tasks: true})}})
	steps := runClientTasks(t, ts, append([]string{"stdio"}, gatewayStdioArgs(t.TempDir(), cfg)...)...)
	checkClientTask(t, "A sampling", steps["A sampling"], "1", "A sampled")
	checkClientTaskCancelled(t, "A elicitation cancelled", steps["A elicitation cancelled"], "2")
}
