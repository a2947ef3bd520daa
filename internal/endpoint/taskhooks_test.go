package endpoint

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/intercept"
)

// TestInterceptedTaskCalls: asking for a task does not get a call round
// the interceptors. A task call of a tool a size guard applies to, from a
// 2025-era session and from a 2026-era agent that declares the tasks
// extension, is refused over the guard's size without a task or the
// server, and within it runs to its end: the agent gets the tool's result
// at once (no task to poll, whose result would come back unseen by the
// interceptors), and the call has its audit line.
func TestInterceptedTaskCalls(t *testing.T) {
	set := testSettings(t, 0)
	set.Interceptors = func(specs []catalog.ServerSpec) *intercept.Engine {
		cfg, err := intercept.Parse([]byte(`{"interceptors":[{"name":"size","type":"sizeGuard","maxArgumentBytes":20}]}`))
		if err != nil {
			t.Fatal(err)
		}
		return intercept.New(cfg, specs, intercept.Options{})
	}
	logs := &syncBuffer{}
	url, token, _ := inProcessGatewayOf(t, set, logs, fixtureSpec("a", fixture.Options{Name: "a", Tasks: true}))

	check := func(era string, res json.RawMessage, wantText string) {
		t.Helper()
		var r struct {
			Task    json.RawMessage `json:"task"`
			TaskID  string          `json:"taskId"`
			IsError bool            `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if err := json.Unmarshal(res, &r); err != nil {
			t.Fatalf("%s: %s: %v", era, res, err)
		}
		if r.Task != nil || r.TaskID != "" || len(r.Content) != 1 || !strings.Contains(r.Content[0].Text, wantText) ||
			strings.Contains(string(res), "related-task") {
			t.Errorf("%s: %s; want the tool's result at once, saying %q", era, res, wantText)
		}
	}

	s := newRawSessionWith(t, url, token, `{}`)
	one := s.result
	check("2025, within the size", one(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"task_echo","arguments":{"n":7},"task":{"ttl":60000}}}`),
		`task result of a: {"n":7}`)
	check("2025, over the size", one(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"task_echo","arguments":{"n":7,"pad":"0123456789"},"task":{}}}`),
		"at most 20 are allowed")
	if got := one(`{"jsonrpc":"2.0","id":3,"method":"tasks/list","params":{}}`); strings.Contains(string(got), `"taskId"`) {
		t.Errorf("tasks/list after intercepted task calls: %s, want no task", got)
	}

	agent := &tasksAgent{t: t, url: url, token: token, declares: true}
	res := agent.ok("tools/call", fixture.TaskTool, `"name":"`+fixture.TaskTool+`","arguments":{"n":8}`)
	raw, _ := json.Marshal(res)
	check("2026, within the size", raw, `task result of a: {"n":8}`)
	res = agent.ok("tools/call", fixture.TaskTool, `"name":"`+fixture.TaskTool+`","arguments":{"n":8,"pad":"0123456789"}`)
	raw, _ = json.Marshal(res)
	check("2026, over the size", raw, "at most 20 are allowed")

	var audited int
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `"event":"call"`) && strings.Contains(l, `"tool":"task_echo"`) {
			audited++
		}
	}
	if audited != 4 {
		t.Errorf("%d audit lines of task_echo calls, want 4:\n%s", audited, logs.String())
	}
}
