package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestStdioTasksExtension: `mcp-gateway stdio` serves the tasks extension
// to a 2026-era agent (a connection opened by server/discover) in front of
// a 2025-era task server (the stdio fixture): discover offers it, the call
// of the task tool answers a handle with the gateway's id, tasks/get polls
// it to its inlined result, and tasks/cancel ends a long one. The 2026
// tasks/* must reach the extension's handlers, not the 2025 era's raw task
// path, which knows none of the gateway's 2026 ids.
func TestStdioTasksExtension(t *testing.T) {
	dir := t.TempDir()
	cfg := mcpConfig(t, map[string]any{
		"a": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "a", Tools: []string{"echo"}, Tasks: true})},
	})
	p := startPiped(t, exec.Command(gatewayBin, "stdio", "--config", cfg, "--log-file", filepath.Join(dir, "stdio.log"),
		"--catalog", filepath.Join(dir, "catalog.json"), "--servers-dir", filepath.Join(dir, "servers")))
	lines := bufio.NewReader(p.out)
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`
	n := 0
	call := func(method, members string) map[string]json.RawMessage {
		t.Helper()
		n++
		if members != "" {
			members += ","
		}
		if _, err := io.WriteString(p.in, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s%s}}`+"\n", n, method, members, meta)); err != nil {
			t.Fatal(err)
		}
		for {
			line, err := lines.ReadString('\n')
			if err != nil {
				t.Fatalf("%s: %v; stderr:\n%s", method, err, p.stderr)
			}
			var msg struct {
				ID     json.RawMessage            `json:"id"`
				Result map[string]json.RawMessage `json:"result"`
				Error  json.RawMessage            `json:"error"`
			}
			if json.Unmarshal([]byte(line), &msg) != nil || string(msg.ID) != fmt.Sprint(n) {
				continue // a notification
			}
			if msg.Error != nil {
				t.Fatalf("%s: %s", method, msg.Error)
			}
			return msg.Result
		}
	}
	str := func(res map[string]json.RawMessage, k string) string {
		var s string
		_ = json.Unmarshal(res[k], &s)
		return s
	}
	poll := func(id string) map[string]json.RawMessage {
		t.Helper()
		for range 2000 {
			res := call("tasks/get", `"taskId":"`+id+`"`)
			if s := str(res, "status"); s == "completed" || s == "failed" || s == "cancelled" {
				return res
			}
			time.Sleep(5 * time.Millisecond) // the agent's poll interval
		}
		t.Fatalf("task %s never ended", id)
		return nil
	}

	if disc := call("server/discover", ""); !strings.Contains(string(disc["capabilities"]), `"extensions":{"io.modelcontextprotocol/tasks":{}}`) {
		t.Errorf("discover capabilities = %s, want the tasks extension", disc["capabilities"])
	}
	created := call("tools/call", `"name":"task_echo","arguments":{"n":3}`)
	id := str(created, "taskId")
	if str(created, "resultType") != "task" || !strings.HasPrefix(id, "gwt1.") {
		t.Fatalf("tools/call = %v, want a task handle with the gateway's id", created)
	}
	if done := poll(id); str(done, "status") != "completed" || !strings.Contains(string(done["result"]), `task result of a: {\"n\":3}`) {
		t.Errorf("tasks/get at the end = %v", done)
	}
	long := str(call("tools/call", `"name":"task_echo","arguments":{"ms":600000}`), "taskId")
	if ack := call("tasks/cancel", `"taskId":"`+long+`"`); str(ack, "resultType") != "complete" || ack["taskId"] != nil {
		t.Errorf("tasks/cancel = %v, want an empty ack", ack)
	}
	if got := poll(long); str(got, "status") != "cancelled" {
		t.Errorf("after tasks/cancel: %v", got)
	}
}
