package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestStdioTasksExtension: `mcp-gateway stdio` serves the tasks extension
// to a 2026-era agent (a connection opened by server/discover) in front of
// a 2025-era task server (the stdio fixture): discover offers it, the call
// of the task tool answers a handle with the gateway's id, tasks/get polls
// it to its inlined result, and tasks/cancel ends a long one, whose
// status a listen on the connection (taskIds) gets as notifications/tasks. The 2026
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
	var notes []string // the lines call passed over
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
				notes = append(notes, line) // a notification, or the listen's answer
				continue
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
	// A listen on the connection with the long task's id: its status
	// comes as notifications/tasks, told apart by the subscriptionId.
	if _, err := io.WriteString(p.in, `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"taskIds":["`+long+`"]},`+meta+`}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	note := func(what string) string {
		t.Helper()
		got := make(chan string, 1)
		go func() {
			for {
				for i, l := range notes {
					if strings.Contains(l, what) {
						notes = append(notes[:i:i], notes[i+1:]...)
						got <- l
						return
					}
				}
				line, err := lines.ReadString('\n')
				if err != nil {
					close(got)
					return
				}
				notes = append(notes, line)
			}
		}()
		select {
		case l, ok := <-got:
			if !ok {
				t.Fatalf("the connection ended; want %s; stderr:\n%s", what, p.stderr)
			}
			return l
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s within 30 s", what)
		}
		return ""
	}
	if ack := note(`"notifications/subscriptions/acknowledged"`); !strings.Contains(ack, `"taskIds":["`+long+`"]`) || !strings.Contains(ack, `subscriptionId":"L"`) {
		t.Errorf("listen acknowledgement %s, want taskIds [%s] and subscriptionId L", ack, long)
	}
	if ack := call("tasks/cancel", `"taskId":"`+long+`"`); str(ack, "resultType") != "complete" || ack["taskId"] != nil {
		t.Errorf("tasks/cancel = %v, want an empty ack", ack)
	}
	if got := poll(long); str(got, "status") != "cancelled" {
		t.Errorf("after tasks/cancel: %v", got)
	}
	if pushed := note(`"notifications/tasks"`); !strings.Contains(pushed, `"taskId":"`+long+`"`) || !strings.Contains(pushed, `"status":"cancelled"`) || !strings.Contains(pushed, `subscriptionId":"L"`) {
		t.Errorf("notifications/tasks = %s, want the cancelled task on listen L", pushed)
	}
}

// tasks2026Server is a url MCP server of the 2026 revision alone that
// serves the tasks extension, written here as raw JSON-RPC over real HTTP
// because neither SDK at hand serves the extension (the Go SDK v1.8.0 and
// the TypeScript SDK 2.4.0 know nothing of it). It refuses the 2025
// handshake as a 2026-only server does, answers server/discover with the
// extension, and has two task tools, run as tasks only for a request that
// declares the extension: "approve" waits for an answer to its elicitation
// (inputRequests on tasks/get, the answer by tasks/update) and then
// completes with "approved for <name>"; "job" works until cancelled.
// Its task ids are its own (random), kept in one table: every gateway
// replica reaches this one server.
type tasks2026Server struct {
	mu    sync.Mutex
	tasks map[string]*serverTask
}

type serverTask struct {
	status, result string
}

func newTasks2026Server(t *testing.T) string {
	s := &tasks2026Server{tasks: make(map[string]*serverTask)}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

func (s *tasks2026Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "the 2026 revision has no GET or DELETE", http.StatusMethodNotAllowed)
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name           string                     `json:"name"`
			TaskID         string                     `json:"taskId"`
			InputResponses map[string]json.RawMessage `json:"inputResponses"`
			Meta           struct {
				Caps struct {
					Extensions map[string]json.RawMessage `json:"extensions"`
				} `json:"io.modelcontextprotocol/clientCapabilities"`
			} `json:"_meta"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(req.ID) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	answer := func(result string) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, result)
	}
	fail := func(code int, msg, data string) {
		w.Header().Set("Content-Type", "application/json")
		if data == "" {
			data = "null"
		}
		m, _ := json.Marshal(msg)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s,"data":%s}}`, req.ID, code, m, data)
	}
	const times = `"createdAt":"2026-12-02T08:00:00Z","lastUpdatedAt":"2026-12-02T08:00:00Z","ttlMs":60000,"pollIntervalMs":10`
	_, declared := req.Params.Meta.Caps.Extensions["io.modelcontextprotocol/tasks"]
	s.mu.Lock()
	defer s.mu.Unlock()
	task := s.tasks[req.Params.TaskID]
	switch req.Method {
	case "initialize":
		fail(-32022, "Unsupported protocol version", `{"supported":["2026-07-28"],"requested":"2025-11-25"}`)
	case "server/discover":
		answer(`{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"extensions":{"io.modelcontextprotocol/tasks":{}}},"ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"tasks2026","version":"1"}}}`)
	case "tools/list":
		answer(`{"resultType":"complete","ttlMs":0,"cacheScope":"private","tools":[{"name":"approve","inputSchema":{"type":"object"}},{"name":"job","inputSchema":{"type":"object"}}]}`)
	case "tools/call":
		if !declared {
			answer(`{"resultType":"complete","content":[{"type":"text","text":"ran at once"}]}`)
			return
		}
		id := randomID()
		task = &serverTask{status: "working"}
		if req.Params.Name == "approve" {
			task.status = "input_required"
		}
		s.tasks[id] = task
		answer(`{"resultType":"task","taskId":"` + id + `","status":"` + task.status + `",` + times + `}`)
	case "tasks/get":
		if task == nil {
			fail(-32602, "Failed to retrieve task: Task not found", "")
			return
		}
		extra := ""
		switch task.status {
		case "input_required":
			extra = `,"inputRequests":{"ask-name":{"method":"elicitation/create","params":{"mode":"form","message":"Who approves?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}}`
		case "completed":
			extra = `,"result":{"content":[{"type":"text","text":` + task.result + `}]}`
		}
		answer(`{"resultType":"complete","taskId":"` + req.Params.TaskID + `","status":"` + task.status + `",` + times + extra + `}`)
	case "tasks/update":
		if task == nil {
			fail(-32602, "Task not found", "")
			return
		}
		var resp struct {
			Content struct {
				Name string `json:"name"`
			} `json:"content"`
		}
		if r, ok := req.Params.InputResponses["ask-name"]; ok && task.status == "input_required" && json.Unmarshal(r, &resp) == nil {
			b, _ := json.Marshal("approved for " + resp.Content.Name)
			task.status, task.result = "completed", string(b)
		}
		answer(`{"resultType":"complete"}`)
	case "tasks/cancel":
		if task == nil {
			fail(-32602, "Task not found", "")
			return
		}
		if task.status == "working" || task.status == "input_required" {
			task.status = "cancelled"
		}
		answer(`{"resultType":"complete"}`)
	default:
		fail(-32601, "Method not found: "+req.Method, "")
	}
}

func randomID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// post2026 sends a 2026-era request to sb over real HTTP, as an agent that
// declares the tasks extension (or not), with the revision's headers
// (Mcp-Name: the tool, or the task id), and returns its one reply.
func post2026(t *testing.T, sb *testbox, declares bool, method, name string, params map[string]any) reply {
	t.Helper()
	caps := map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}
	if declares {
		caps["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
	}
	p := map[string]any{"_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": caps,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "tasks-test", "version": "1"},
	}}
	for k, v := range params {
		p[k] = v
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": p})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest("POST", sb.url()+"/mcp", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Authorization": "Bearer " + sb.token, "Content-Type": "application/json",
		"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method, "Mcp-Name": name} {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: reading the answer: %v", method, err)
	}
	rs := replies(t, resp, b)
	if len(rs) != 1 {
		t.Fatalf("%s: HTTP %d, %d responses in %.500s; want one", method, resp.StatusCode, len(rs), b)
	}
	return rs[0]
}

// TestTasksExtensionAcrossReplicas: two gateways with the same config and
// token (replicas behind a load balancer without affinity), in front of a
// 2026-era url server that serves the tasks extension and a 2025-era stdio
// task server. A task of the url server made through one replica is polled,
// answered (tasks/update delivers the agent's input to the server's
// input_required task) and cancelled through the other: its id carries its
// server, signed with a key both replicas derive from the token. A task of
// the stdio server lives in one replica's child process: the other replica
// refuses its id, saying so. An agent without the extension gets the url
// server's synchronous result, its own capabilities having reached it.
func TestTasksExtensionAcrossReplicas(t *testing.T) {
	cfg := mcpConfig(t, map[string]any{
		"t26": map[string]any{"url": newTasks2026Server(t)},
		"fx":  map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "fx", Tools: []string{"echo"}, Tasks: true})},
	})
	a, b := newTestbox(t), newTestbox(t)
	b.token = a.token
	a.mustLaunch(cfg)
	b.mustLaunch(cfg)
	result := func(r reply, what string) map[string]json.RawMessage {
		t.Helper()
		var m map[string]json.RawMessage
		if r.Error != nil || json.Unmarshal(r.Result, &m) != nil {
			t.Fatalf("%s: %s %+v", what, r.Result, r.Error)
		}
		return m
	}
	str := func(m map[string]json.RawMessage, k string) string {
		var s string
		_ = json.Unmarshal(m[k], &s)
		return s
	}

	if disc := result(post2026(t, a, true, "server/discover", "", nil), "discover"); !strings.Contains(string(disc["capabilities"]), `"io.modelcontextprotocol/tasks"`) {
		t.Errorf("discover capabilities = %s, want the tasks extension", disc["capabilities"])
	}
	h := result(post2026(t, a, true, "tools/call", "approve", map[string]any{"name": "approve", "arguments": map[string]any{}}), "approve on A")
	id := str(h, "taskId")
	if str(h, "resultType") != "task" || !strings.HasPrefix(id, "gwt1.") || str(h, "status") != "input_required" {
		t.Fatalf("approve = %v, want the server's task handle with the gateway's id", h)
	}
	ref := map[string]any{"taskId": id}
	got := result(post2026(t, b, true, "tasks/get", id, ref), "tasks/get on B")
	if str(got, "taskId") != id || str(got, "status") != "input_required" || !strings.Contains(string(got["inputRequests"]), `"ask-name":{"method":"elicitation/create"`) {
		t.Fatalf("tasks/get on B = %v, want the server's input_required task with its inputRequests, under the gateway's id", got)
	}
	ack := result(post2026(t, b, true, "tasks/update", id, map[string]any{"taskId": id,
		"inputResponses": map[string]any{"ask-name": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}}), "tasks/update on B")
	if str(ack, "resultType") != "complete" {
		t.Errorf("tasks/update = %v", ack)
	}
	done := result(post2026(t, a, true, "tasks/get", id, ref), "tasks/get on A")
	if str(done, "status") != "completed" || !strings.Contains(string(done["result"]), "approved for Ada") {
		t.Errorf("after tasks/update: %v, want completed with the agent's answer", done)
	}

	job := str(result(post2026(t, a, true, "tools/call", "job", map[string]any{"name": "job", "arguments": map[string]any{}}), "job on A"), "taskId")
	result(post2026(t, b, true, "tasks/cancel", job, map[string]any{"taskId": job}), "tasks/cancel on B")
	if got := result(post2026(t, a, true, "tasks/get", job, map[string]any{"taskId": job}), "tasks/get of the job"); str(got, "status") != "cancelled" {
		t.Errorf("after tasks/cancel: %v", got)
	}

	if sync := result(post2026(t, a, false, "tools/call", "approve", map[string]any{"name": "approve", "arguments": map[string]any{}}), "approve without the extension"); !strings.Contains(string(sync["content"]), "ran at once") {
		t.Errorf("approve without the extension = %v, want the server's synchronous result", sync)
	}

	local := str(result(post2026(t, a, true, "tools/call", "task_echo", map[string]any{"name": "task_echo", "arguments": map[string]any{}}), "task_echo on A"), "taskId")
	if r := post2026(t, b, true, "tasks/get", local, map[string]any{"taskId": local}); r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, "another gateway replica") {
		t.Errorf("a stdio server's task on the other replica: %s %+v, want -32602 naming the replica", r.Result, r.Error)
	}
	if r := post2026(t, a, true, "tasks/get", local, map[string]any{"taskId": local}); r.Error != nil {
		t.Errorf("a stdio server's task on its own replica: %+v", r.Error)
	}
}
