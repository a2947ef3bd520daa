package aggregate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/rawjson"
)

// Tasks (protocol 2025-11-25): a tools/call with "task" in its params makes
// the server answer at once with a task, which the agent then polls
// (tasks/get), fetches (tasks/result), lists (tasks/list) or cancels
// (tasks/cancel); the server reports changes with notifications/tasks/status.
// The Go SDK v1.8.0 knows none of these, so they are relayed as raw JSON.
// The gateway gives each task an id of its own: two servers may use the same
// ids, and an agent must reach only its own tasks (servers see one client,
// the gateway, for every agent session).

// IsTaskRequest reports whether a request is one Task answers: a tasks/*
// method, or a tools/call whose params ask for a task, of the 2025 era. A
// 2026-era request (its _meta names the revision) goes through the SDK to
// the tasks extension's handlers (tasks2026.go).
func IsTaskRequest(method string, params json.RawMessage) bool {
	return isLegacyTaskRequest(method, params) && !claims2026(params)
}

// claims2026 reports whether params' _meta names the 2026 revision.
func claims2026(params json.RawMessage) bool {
	v, claimed := ClaimedVersion(params)
	return claimed && v >= statelessRevision
}

func isLegacyTaskRequest(method string, params json.RawMessage) bool {
	switch method {
	case "tasks/get", "tasks/result", "tasks/list", "tasks/cancel":
		return true
	case "tools/call":
		// Most calls are not tasks: spare them the decoding (a key spelled
		// with escapes has a \u; other escapes, common in arguments, cannot
		// spell "task").
		if !bytes.Contains(params, []byte(`"task"`)) && !bytes.Contains(params, []byte(`\u`)) {
			return false
		}
		var p struct {
			Task json.RawMessage `json:"task"`
		}
		return json.Unmarshal(params, &p) == nil && len(p.Task) > 0 && string(p.Task) != "null"
	}
	return false
}

// Task answers a request of ss for which IsTaskRequest holds, with the
// result as raw JSON. Its params go to the server as the agent sent them,
// the tool name and task id mapped to the server's. h is the request's
// header (nil: none), which names its tool view: in the search view a
// call_tool with a task is the task call of the tool it names.
func (g *Gateway) Task(ctx context.Context, ss *mcp.ServerSession, h http.Header, method string, params json.RawMessage) (json.RawMessage, error) {
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	if method == "tools/call" {
		return g.callTask(ctx, ss, h, params)
	}
	if method == "tasks/list" {
		return g.listTasks(ctx, ss)
	}
	taskID := taskIDOf(params)
	if taskID == "" {
		return nil, invalidParams("%s: missing taskId", method)
	}
	t, ok := g.tasks.Lookup(taskID)
	if !ok || t.Session != ss {
		return nil, invalidParams("unknown task %q", taskID)
	}
	out, err := rawjson.SetString(params, "taskId", t.Orig)
	if err != nil {
		return nil, invalidParams("%s: %v", method, err)
	}
	server := t.Server
	g.mu.RLock()
	up := g.upstreams[server]
	g.mu.RUnlock()
	// tasks/result may run long, and the server may ask the agent things
	// meanwhile (elicitation, sampling): they go to this session.
	_, done := g.calls.begin(ctx, ss, server)
	res, err := callRaw(ctx, up, method, out)
	done()
	if err != nil {
		return nil, upstreamError(server, err)
	}
	switch method {
	case "tasks/get", "tasks/cancel": // a Task
		return rawjson.SetString(res, "taskId", taskID)
	case "tasks/result": // the request's result, which names its task in _meta
		return g.relatedTask(res, server, taskID), nil
	}
	return res, nil
}

// callRaw sends a raw request to up, which must take raw requests.
func callRaw(ctx context.Context, up Upstream, method string, params json.RawMessage) (json.RawMessage, error) {
	rc, ok := up.(RawCaller)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("server %q does not take %s through the gateway", up.Name(), method)}
	}
	res, err := tracedCallRaw(ctx, rc, method, params)
	if err == nil && (len(res) == 0 || res[0] != '{') {
		err = fmt.Errorf("%s result is not an object: %.40s", method, res)
	}
	return res, err
}

const relatedTaskKey = "io.modelcontextprotocol/related-task"

// relatedTask rewrites the task id in a result's _meta related-task.
func (g *Gateway) relatedTask(res json.RawMessage, server, exported string) json.RawMessage {
	var r struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(res, &r) != nil || r.Meta[relatedTaskKey] == nil {
		return res
	}
	rel, err := rawjson.SetString(r.Meta[relatedTaskKey], "taskId", exported)
	if err != nil {
		return res
	}
	var meta json.RawMessage
	if err := json.Unmarshal(res, &struct {
		Meta *json.RawMessage `json:"_meta"`
	}{&meta}); err != nil {
		return res
	}
	if meta, err = rawjson.SetMember(meta, relatedTaskKey, rel); err != nil {
		return res
	}
	if out, err := rawjson.SetMember(res, "_meta", meta); err == nil {
		return out
	}
	return res
}

// callTask forwards a task-augmented tools/call and exports the task id of
// the CreateTaskResult.
func (g *Gateway) callTask(ctx context.Context, ss *mcp.ServerSession, h http.Header, params json.RawMessage) (json.RawMessage, error) {
	var p struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, invalidParams("tools/call: %v", err)
	}
	if inner, errResult := g.viewTaskCall(h, p.Name, params); errResult != nil {
		return errResult, nil
	} else if inner != nil {
		params = inner
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, invalidParams("tools/call: %v", err)
		}
	}
	g.mu.RLock()
	r, ok := g.tools.routes[p.Name]
	g.mu.RUnlock()
	if !ok {
		return nil, invalidParams("unknown tool %q", p.Name)
	}
	if r.name != p.Name {
		var err error
		if params, err = rawjson.SetString(params, "name", r.name); err != nil {
			return nil, invalidParams("tools/call: %v", err)
		}
	}
	server := r.up.Name()
	if g.hooked(server, r.name) {
		return g.hookedTaskCall(ctx, ss, r, p.Name, params)
	}
	_, done := g.calls.begin(ctx, ss, server)
	expected := g.tasks.Expect(server)
	res, err := callRaw(ctx, r.up, "tools/call", params)
	done()
	defer expected()
	if err != nil {
		return nil, upstreamError(server, err)
	}
	var created struct {
		Task json.RawMessage `json:"task"`
	}
	if json.Unmarshal(res, &created) != nil || len(created.Task) == 0 {
		return res, nil // a server that ran the call at once
	}
	var task struct {
		TaskID string   `json:"taskId"`
		TTL    *float64 `json:"ttl"`
	}
	if json.Unmarshal(created.Task, &task) != nil || task.TaskID == "" {
		return res, nil
	}
	id, early := g.tasks.Export(server, task.TaskID, ss, ttlOf(task.TTL))
	for _, p := range early {
		g.statusDown(ss, id, p)
	}
	t, err := rawjson.SetString(created.Task, "taskId", id)
	if err != nil {
		return nil, upstreamError(server, err)
	}
	return rawjson.SetMember(res, "task", t)
}

// listTasks merges tasks/list of every server that offers tasks, keeping
// the tasks of ss only, in server order; the merged list is one page.
func (g *Gateway) listTasks(ctx context.Context, ss *mcp.ServerSession) (json.RawMessage, error) {
	g.mu.RLock()
	var ups []Upstream
	for _, s := range g.serversLocked() {
		if g.taskCaps[s] != nil {
			ups = append(ups, g.upstreams[s])
		}
	}
	g.mu.RUnlock()
	var items []json.RawMessage
	var errs []error
	var only json.RawMessage // the one server's first page, when one has tasks
	for _, up := range ups {
		tasks, first, err := allTasks(ctx, up)
		if len(ups) == 1 {
			only = first
		}
		if err != nil {
			errs = append(errs, upstreamError(up.Name(), err))
			continue
		}
		for _, b := range tasks {
			taskID := taskIDOf(b)
			if taskID == "" {
				continue
			}
			r, ok := g.tasks.Exported(up.Name(), taskID)
			if !ok || r.Session != ss {
				continue // another session's, or not made through this gateway
			}
			if b, err = rawjson.SetString(b, "taskId", r.ID); err == nil {
				items = append(items, b)
			}
		}
	}
	if len(items) == 0 && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	list := rawjson.EncodeList("tasks", items, "")
	if only != nil && !bytes.Contains(only, []byte(`"nextCursor"`)) {
		// One server, one page: its result as it sent it (its _meta), with
		// the session's tasks.
		var page struct {
			Tasks json.RawMessage `json:"tasks"`
		}
		if json.Unmarshal(list, &page) == nil {
			if out, err := rawjson.SetMember(only, "tasks", page.Tasks); err == nil {
				return out, nil
			}
		}
	}
	return list, nil
}

// allTasks returns every task a server lists, all pages, as raw JSON, and
// its first page's result.
func allTasks(ctx context.Context, up Upstream) (all []json.RawMessage, first json.RawMessage, err error) {
	seen := make(map[string]bool)
	params := json.RawMessage(`{}`)
	for {
		res, err := callRaw(ctx, up, "tasks/list", params)
		if err != nil {
			return nil, nil, err
		}
		if first == nil {
			first = res
		}
		page, next, err := rawjson.ItemsOf(res, "tasks")
		if err != nil {
			return nil, nil, err
		}
		all = append(all, page...)
		if next == "" || seen[next] {
			return all, first, nil
		}
		seen[next] = true
		if params, err = json.Marshal(map[string]string{"cursor": next}); err != nil {
			return nil, nil, err
		}
	}
}

// InitializeRawer is an Upstream that keeps its server's initialize result
// as raw JSON, for what the SDK's types do not hold (the tasks capability).
type InitializeRawer interface {
	InitializeResultRaw() json.RawMessage
}

// tasksCapability is the tasks capability up's server offered, or nil.
func tasksCapability(up Upstream) json.RawMessage {
	ir, ok := up.(InitializeRawer)
	if !ok {
		return nil
	}
	var r struct {
		Capabilities struct {
			Tasks json.RawMessage `json:"tasks"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(ir.InitializeResultRaw(), &r) != nil || len(r.Capabilities.Tasks) == 0 || string(r.Capabilities.Tasks) == "null" {
		return nil
	}
	return r.Capabilities.Tasks
}

// mergeObjects returns the union of two JSON objects, recursively; a's
// value wins where both have a member that is not an object in both.
func mergeObjects(a, b json.RawMessage) json.RawMessage {
	if a == nil {
		return b
	}
	var ma, mb map[string]json.RawMessage
	if json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil || ma == nil || mb == nil {
		return a
	}
	for k, vb := range mb {
		if va, ok := ma[k]; ok {
			ma[k] = mergeObjects(va, vb)
		} else {
			ma[k] = vb
		}
	}
	out, err := json.Marshal(ma)
	if err != nil {
		return a
	}
	return out
}

// relayTaskStatus sends a server's notifications/tasks/status to the agent
// session that owns the task, with the task's exported id. A status for a
// task the gateway does not know is held while a task-augmented call to
// that server is in flight (the task it makes may be this one, its answer
// still on the way; see callTask); otherwise it may be the status of a
// 2026-era agent's task, pushed to the listen streams that listen to it
// (taskpush.go), and is dropped when none does.
func (g *Gateway) relayTaskStatus(server string, params json.RawMessage) {
	taskID := taskIDOf(params)
	if taskID == "" {
		return
	}
	r, ok := g.tasks.Exported(server, taskID)
	if !ok {
		g.tasks.Hold(server, taskID, params)
		g.pushTaskStatus(server, taskID, params) // a 2026-era agent's task (taskpush.go)
		return
	}
	g.statusDown(r.Session, r.ID, params)
}

// statusDown sends a server's task status to agent session ss, with the
// task's exported id.
func (g *Gateway) statusDown(ss *mcp.ServerSession, id string, params json.RawMessage) {
	p, err := rawjson.SetString(params, "taskId", id)
	if err != nil {
		return
	}
	if a := agentConnOf(ss); a != nil {
		_ = a.notification(context.Background(), "notifications/tasks/status", p)
	}
}

// taskIDOf reads the taskId of a task request's params, a status
// notification's params or a listed task; "" when there is none.
func taskIDOf(b json.RawMessage) string {
	var v struct {
		TaskID string `json:"taskId"`
	}
	if json.Unmarshal(b, &v) != nil {
		return ""
	}
	return v.TaskID
}
