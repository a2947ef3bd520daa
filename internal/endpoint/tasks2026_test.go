package endpoint

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// tasksAgent sends 2026-era requests over real HTTP as an agent that
// declares the tasks extension (or not), with the headers the revision
// asks for (Mcp-Name: the tool's name, or the task id of tasks/*).
type tasksAgent struct {
	t          *testing.T
	url, token string
	declares   bool
	n          int
}

func (a *tasksAgent) meta() string {
	caps := `{}`
	if a.declares {
		caps = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	}
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + aggregate.StatelessRevision + `","io.modelcontextprotocol/clientCapabilities":` + caps + `,"io.modelcontextprotocol/clientInfo":{"name":"tasks-agent","version":"1"}}`
}

// send posts method with params (a JSON object's members, without braces)
// and returns the HTTP status, the result and the error.
func (a *tasksAgent) send(method, name, members string) (int, map[string]json.RawMessage, *struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}) {
	a.t.Helper()
	a.n++
	if members != "" {
		members += ","
	}
	body := `{"jsonrpc":"2.0","id":` + jsonNumber(a.n) + `,"method":"` + method + `","params":{` + members + a.meta() + `}}`
	h := map[string]string{"Mcp-Protocol-Version": aggregate.StatelessRevision, "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	status, msg := statelessPost(a.t, a.url, a.token, body, h)
	var res map[string]json.RawMessage
	if msg["result"] != nil {
		if err := json.Unmarshal(msg["result"], &res); err != nil {
			a.t.Fatalf("%s: result %s: %v", method, msg["result"], err)
		}
	}
	var e *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if msg["error"] != nil {
		_ = json.Unmarshal(msg["error"], &e)
	}
	return status, res, e
}

// ok is send for a request that must succeed.
func (a *tasksAgent) ok(method, name, members string) map[string]json.RawMessage {
	a.t.Helper()
	status, res, e := a.send(method, name, members)
	if status != http.StatusOK || e != nil || res == nil {
		a.t.Fatalf("%s %s: %d, error %+v", method, members, status, e)
	}
	return res
}

func jsonNumber(n int) string { b, _ := json.Marshal(n); return string(b) }

func str(res map[string]json.RawMessage, k string) string {
	var s string
	_ = json.Unmarshal(res[k], &s)
	return s
}

// poll asks tasks/get until the task is over (or until a status it is
// told to stop at), as an agent does: each answer is an event, no clock
// decides the outcome (the loop's bound only ends a hung test).
func (a *tasksAgent) poll(id string, stopAt string) map[string]json.RawMessage {
	a.t.Helper()
	for range 2000 {
		res := a.ok("tasks/get", id, `"taskId":"`+id+`"`)
		switch s := str(res, "status"); s {
		case "completed", "failed", "cancelled", stopAt:
			return res
		}
		time.Sleep(5 * time.Millisecond) // the agent's poll interval
	}
	a.t.Fatalf("task %s never ended", id)
	return nil
}

// TestTasksExtensionFrom2025Server: a 2026-era agent calls a 2025-era
// server's task tool through the gateway over real HTTP, with the server a
// real stdio fixture that runs 2025-11-25 tasks. The agent sees the tasks
// extension: discover offers it (and not the 2025 capability), the call
// answers a flat handle whose id names no server's id, tasks/get inlines
// the result once done (tasks/result behind it), a tool error is completed
// with isError and a protocol error failed with the error, tasks/cancel
// acknowledges (also for a task that is over) and the task ends cancelled,
// an agent without the extension gets -32021 for tasks/* and for the call
// of a tool that runs only as a task, a forged id gets -32602, the removed
// methods 404.
func TestTasksExtensionFrom2025Server(t *testing.T) {
	url, token, _ := inProcessGatewayOf(t, testSettings(t, 0), io.Discard, fixtureSpec("a", fixture.Options{Name: "a", Tasks: true, Tools: []string{"echo"}}))
	agent := &tasksAgent{t: t, url: url, token: token, declares: true}

	disc := agent.ok("server/discover", "", "")
	var caps map[string]json.RawMessage
	if err := json.Unmarshal(disc["capabilities"], &caps); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(caps["extensions"]), `"io.modelcontextprotocol/tasks":{}`) || caps["tasks"] != nil {
		t.Errorf("discover capabilities = %s, want the tasks extension and no 2025 tasks capability", disc["capabilities"])
	}

	created := agent.ok("tools/call", fixture.TaskTool, `"name":"`+fixture.TaskTool+`","arguments":{"n":7}`)
	id := str(created, "taskId")
	if str(created, "resultType") != "task" || !strings.HasPrefix(id, "gwt1.") || str(created, "status") != "working" ||
		string(created["ttlMs"]) != "60000" || string(created["pollIntervalMs"]) != "20" || created["task"] != nil || created["ttl"] != nil ||
		str(created, "createdAt") == "" || str(created, "lastUpdatedAt") == "" {
		t.Fatalf("task handle = %v, want a flat 2026 CreateTaskResult with a gateway id", created)
	}
	done := agent.poll(id, "")
	if str(done, "resultType") != "complete" || str(done, "status") != "completed" || str(done, "taskId") != id {
		t.Fatalf("tasks/get at the end = %v", done)
	}
	if r := string(done["result"]); !strings.Contains(r, `task result of a: {\"n\":7}`) || strings.Contains(r, "related-task") {
		t.Errorf("inlined result = %s, want the tool's result without the 2025 related-task _meta", r)
	}

	toolErr := agent.poll(str(agent.ok("tools/call", fixture.TaskTool, `"name":"`+fixture.TaskTool+`","arguments":{"fail":"tool"}`), "taskId"), "")
	if str(toolErr, "status") != "completed" || !strings.Contains(string(toolErr["result"]), `"isError":true`) {
		t.Errorf("a tool error: %v, want completed with isError", toolErr)
	}
	protoErr := agent.poll(str(agent.ok("tools/call", fixture.TaskTool, `"name":"`+fixture.TaskTool+`","arguments":{"fail":"protocol"}`), "taskId"), "")
	if str(protoErr, "status") != "failed" || !strings.Contains(string(protoErr["error"]), `"code":-32603`) || protoErr["result"] != nil {
		t.Errorf("a protocol error: %v, want failed with the JSON-RPC error", protoErr)
	}

	long := str(agent.ok("tools/call", fixture.TaskTool, `"name":"`+fixture.TaskTool+`","arguments":{"ms":600000}`), "taskId")
	for i := range 2 { // the second on a task that is over: the same ack
		ack := agent.ok("tasks/cancel", long, `"taskId":"`+long+`"`)
		if str(ack, "resultType") != "complete" || ack["taskId"] != nil || ack["status"] != nil {
			t.Errorf("tasks/cancel %d = %v, want an empty ack", i, ack)
		}
		if got := agent.poll(long, ""); str(got, "status") != "cancelled" {
			t.Errorf("after tasks/cancel %d: %v, want cancelled", i, got)
		}
	}
	if ack := agent.ok("tasks/update", id, `"taskId":"`+id+`","inputResponses":{}`); str(ack, "resultType") != "complete" {
		t.Errorf("tasks/update = %v, want an ack", ack)
	}

	forged := id[:len(id)-2] + "AA"
	if forged == id {
		forged = id[:len(id)-2] + "BB"
	}
	if _, _, e := agent.send("tasks/get", forged, `"taskId":"`+forged+`"`); e == nil || e.Code != -32602 {
		t.Errorf("tasks/get of a forged id: %+v, want -32602", e)
	}
	if _, _, e := agent.send("tasks/get", "another-task", `"taskId":"`+id+`"`); e == nil || e.Code != -32020 {
		t.Errorf("tasks/get whose Mcp-Name is not its taskId: %+v, want -32020", e)
	}
	for _, m := range []string{"tasks/result", "tasks/list"} {
		if status, _, e := agent.send(m, "", `"taskId":"`+id+`"`); status != http.StatusNotFound || e == nil || e.Code != -32601 {
			t.Errorf("%s: %d %+v, want 404 / -32601 (removed by the extension)", m, status, e)
		}
	}

	plain := &tasksAgent{t: t, url: url, token: token}
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		if _, _, e := plain.send(m, id, `"taskId":"`+id+`","inputResponses":{}`); e == nil || e.Code != -32021 || !strings.Contains(string(e.Data), "io.modelcontextprotocol/tasks") {
			t.Errorf("%s without the extension: %+v, want -32021 naming it", m, e)
		}
	}
	if _, _, e := plain.send("tools/call", fixture.TaskTool, `"name":"`+fixture.TaskTool+`","arguments":{"n":8}`); e == nil || e.Code != -32021 || !strings.Contains(string(e.Data), "io.modelcontextprotocol/tasks") {
		t.Errorf("a required task tool called without the extension: %+v, want -32021 naming it", e)
	}
	if res := plain.ok("tools/call", "echo", `"name":"echo","arguments":{"text":"plain"}`); str(res, "resultType") != "complete" || !strings.Contains(string(res["content"]), "plain") {
		t.Errorf("echo without the extension = %v", res)
	}
}

// TestTasksExtensionNotOffered: with no server that runs tasks, discover
// offers no tasks extension.
func TestTasksExtensionNotOffered(t *testing.T) {
	url, token, _ := inProcessGateway(t, testSettings(t, 0), io.Discard)
	disc := (&tasksAgent{t: t, url: url, token: token, declares: true}).ok("server/discover", "", "")
	if strings.Contains(string(disc["capabilities"]), "io.modelcontextprotocol/tasks") || strings.Contains(string(disc["capabilities"]), `"extensions"`) {
		t.Errorf("discover capabilities = %s, want no tasks extension", disc["capabilities"])
	}
}

// TestTaskStatusPushedOnListen: a 2026-era agent that declared the tasks
// extension listens to its task's status (subscriptions/listen with
// taskIds, over real HTTP) while a real stdio fixture runs the task as a
// 2025-era task. The acknowledgement names the task's id and leaves out a
// forged one; when the server announces the task completed, the stream
// gets notifications/tasks with the gateway's id, the status, and the
// result inlined (tasks/result behind it), with the listen's
// subscriptionId. A second stream hears only of its own task, a cancelled
// one (a status that is not terminal goes as the server sent it). An agent
// that did not declare the extension gets -32021 for a listen with taskIds.
func TestTaskStatusPushedOnListen(t *testing.T) {
	url, token, _ := inProcessGatewayOf(t, testSettings(t, 0), io.Discard, fixtureSpec("a", fixture.Options{Name: "a", Tasks: true, Tools: []string{"echo"}}))
	agent := &tasksAgent{t: t, url: url, token: token, declares: true}

	// A second stream listens to a task that works until it is cancelled:
	// it hears of that task alone.
	long := str(agent.ok("tools/call", fixture.TaskTool, `"name":"`+fixture.TaskTool+`","arguments":{"ms":600000}`), "taskId")
	l2 := openListenWith(t, url, token, `"T2"`, agent.meta(), `{"taskIds":["`+long+`"]}`)
	if m := l2.next(t, "the acknowledgement"); !strings.Contains(string(m["params"]), long) {
		t.Fatalf("acknowledgement %s, want taskIds [%s]", m["params"], long)
	}

	// The listen must be open before the task ends: when a tasks/get after
	// the acknowledgement finds the task over already, the test starts
	// again with a task that works longer (the server's clock alone ends a
	// task; the test decides on what it observes).
	var id, args string
	var l *listenStream
	for ms := 300; ; ms *= 4 {
		if ms > 300*4*4*4 {
			t.Fatal("every task was over before the listen was acknowledged")
		}
		args = `{"n":9,"ms":` + jsonNumber(ms) + `}`
		created := agent.ok("tools/call", fixture.TaskTool, `"name":"`+fixture.TaskTool+`","arguments":`+args)
		id = str(created, "taskId")
		forged := id[:len(id)-2] + "AA"
		if forged == id {
			forged = id[:len(id)-2] + "BB"
		}
		l = openListenWith(t, url, token, `"T1"`, agent.meta(), `{"taskIds":["`+id+`","`+forged+`","`+id+`"]}`)
		ack := l.next(t, "the acknowledgement")
		var params struct {
			Notifications struct {
				TaskIDs []string `json:"taskIds"`
			} `json:"notifications"`
		}
		if string(ack["method"]) != `"notifications/subscriptions/acknowledged"` || json.Unmarshal(ack["params"], &params) != nil ||
			len(params.Notifications.TaskIDs) != 1 || params.Notifications.TaskIDs[0] != id {
			t.Fatalf("acknowledgement %s %s; want taskIds [%s] alone", ack["method"], ack["params"], id)
		}
		if str(agent.ok("tasks/get", id, `"taskId":"`+id+`"`), "status") == "working" {
			break
		}
		l.close()
	}

	m := l.next(t, "notifications/tasks")
	var task map[string]json.RawMessage
	if string(m["method"]) != `"notifications/tasks"` || json.Unmarshal(m["params"], &task) != nil {
		t.Fatalf("got %s %s; want notifications/tasks", m["method"], m["params"])
	}
	if str(task, "taskId") != id || str(task, "status") != "completed" || task["resultType"] != nil ||
		str(task, "createdAt") == "" || str(task, "lastUpdatedAt") == "" || string(task["ttlMs"]) != "60000" {
		t.Errorf("notifications/tasks params = %s; want the completed task under the gateway's id", m["params"])
	}
	if r := string(task["result"]); !strings.Contains(r, `task result of a: `+strings.ReplaceAll(args, `"`, `\"`)) || strings.Contains(r, "related-task") {
		t.Errorf("inlined result = %s, want the tool's result", r)
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(task["_meta"], &meta) != nil || string(meta["io.modelcontextprotocol/subscriptionId"]) != `"T1"` {
		t.Errorf("notifications/tasks _meta = %s, want the listen's subscriptionId", task["_meta"])
	}

	// A status that is not terminal goes as the server sent it, the
	// first on the second stream (task 1's completion did not reach it).
	agent.ok("tasks/cancel", long, `"taskId":"`+long+`"`)
	m = l2.next(t, "notifications/tasks of the cancelled task")
	task = nil
	if string(m["method"]) != `"notifications/tasks"` || json.Unmarshal(m["params"], &task) != nil ||
		str(task, "taskId") != long || str(task, "status") != "cancelled" || task["result"] != nil {
		t.Errorf("second stream got %s %s; want notifications/tasks of %s, cancelled", m["method"], m["params"], long)
	}

	plain := &tasksAgent{t: t, url: url, token: token}
	body := `{"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":{` + plain.meta() + `,"notifications":{"taskIds":["gwt1.unknown"]}}}` // no stream to hang on when the check is gone
	_, msg := statelessPost(t, url, token, body, map[string]string{"Mcp-Protocol-Version": aggregate.StatelessRevision, "Mcp-Method": "subscriptions/listen"})
	var e struct {
		Code int64           `json:"code"`
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal(msg["error"], &e) != nil || e.Code != -32021 || !strings.Contains(string(e.Data), "io.modelcontextprotocol/tasks") {
		t.Errorf("listen with taskIds without the extension: %s, want -32021 naming it", msg)
	}
}
