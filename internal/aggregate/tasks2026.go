package aggregate

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/rawjson"
)

// Tasks for 2026-era agents: the io.modelcontextprotocol/tasks extension
// (SEP-2663). A server that declared the extension may answer a tools/call
// of an agent that declared it too with a task handle (resultType "task",
// a flat CreateTaskResult), which the agent polls with tasks/get (the
// result or error inlined once the task is over), answers input for with
// tasks/update and cancels with tasks/cancel. There is no tasks/list and
// no blocking tasks/result.
//
// Behind the gateway a task runs on a server of either era:
//
//   - a 2026-era server that declared the extension gets the agent's
//     capabilities (callercaps.go) and decides; its handle, and its
//     answers to tasks/*, go to the agent as sent, the task id aside;
//   - a 2025-era server with task-augmented tools/call (capability
//     tasks.requests.tools.call) runs a tool whose execution.taskSupport is
//     "required", or "optional" when the agent declared the extension, as
//     a 2025 task: the gateway sends the call with "task", answers the
//     agent with the 2026 handle, and maps tasks/get to tasks/get plus, once
//     the task is over, tasks/result (inlined as result or error),
//     tasks/cancel to tasks/cancel. An agent that did not declare the
//     extension calling a "required" tool gets -32021 naming it, as the
//     revision asks of a server that cannot serve such a client without a
//     task (and as the conformance suite reads it for "required" tools).
//
// Task ids are stateless: no table, so that any replica routes a task
// request without shared state. The id an agent sees is
// gwt1.<payload>.<mac>, payload = base64url(server NUL server's id NUL
// replica), mac = HMAC-SHA256 over the rest under the gateway's task key
// (Options.TaskKey: the same on every replica, from the access token). The
// MAC makes ids unguessable even when a server's own are small numbers, and
// binds them to the server: another agent cannot reach a task without its
// id, nor forge one. replica is empty for a url server, which every replica
// reaches; for a stdio server it names the gateway process whose child runs
// the task, and another replica refuses it with -32602 (its own process of
// that server never heard of the task, or has another task of that id).

// tasksExtension is the extension's identifier, in capabilities'
// extensions.
const tasksExtension = "io.modelcontextprotocol/tasks"

// taskIDPrefix starts every 2026-era task id the gateway mints.
const taskIDPrefix = "gwt1."

// taskIDs mints and opens the gateway's 2026-era task ids.
type taskIDs struct {
	key     []byte
	replica string
}

// newTaskIDs returns the ids of replica, under key (nil: a random key of
// this process alone, so ids are valid on no other replica).
func newTaskIDs(key []byte, replica string) *taskIDs {
	if len(key) == 0 {
		key = make([]byte, 32)
		_, _ = rand.Read(key) // never fails (crypto/rand)
	}
	return &taskIDs{key: key, replica: replica}
}

func (t *taskIDs) mac(payload string) string {
	m := hmac.New(sha256.New, t.key)
	m.Write([]byte(taskIDPrefix))
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// mint is the id of server's task orig; local binds it to this replica.
func (t *taskIDs) mint(server, orig string, local bool) string {
	rep := ""
	if local {
		rep = t.replica
	}
	payload := base64.RawURLEncoding.EncodeToString([]byte(server + "\x00" + orig + "\x00" + rep))
	return taskIDPrefix + payload + "." + t.mac(payload)
}

// open returns the server and server's task id of an id mint made, or the
// -32602 the revision asks for an unknown task.
func (t *taskIDs) open(id string) (server, orig string, err error) {
	rest, ok := strings.CutPrefix(id, taskIDPrefix)
	payload, mac, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || !hmac.Equal([]byte(mac), []byte(t.mac(payload))) {
		return "", "", invalidParams("unknown task %q", id)
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return "", "", invalidParams("unknown task %q", id)
	}
	s := string(b)
	i, j := strings.IndexByte(s, 0), strings.LastIndexByte(s, 0)
	if i < 0 || i == j {
		return "", "", invalidParams("unknown task %q", id)
	}
	if rep := s[j+1:]; rep != "" && rep != t.replica {
		return "", "", invalidParams("task %q runs in another gateway replica's process of server %q: send its requests to that replica (the Mcp-Name header carries the task id for a load balancer to route on)", id, s[:i])
	}
	return s[:i], s[i+1 : j], nil
}

// processLocal reports whether up's server is a child of this gateway
// process (stdio), not a url server every replica reaches.
func processLocal(up Upstream) bool {
	s, ok := up.(interface{ Spec() catalog.ServerSpec })
	return !ok || s.Spec().URL == ""
}

// upstream2026 reports whether up's server speaks the 2026 era.
func upstream2026(up Upstream) bool {
	ir, ok := up.(InitializeRawer)
	if !ok {
		return false
	}
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	return json.Unmarshal(ir.InitializeResultRaw(), &r) == nil && r.ProtocolVersion >= statelessRevision
}

// declaresTasksExtension reports whether the raw capabilities object caps
// has the tasks extension.
func declaresTasksExtension(caps json.RawMessage) bool {
	var c struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(caps, &c) != nil {
		return false
	}
	v, ok := c.Extensions[tasksExtension]
	return ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

// serverTaskCallsLocked reports whether server runs tools/call as tasks
// for 2026-era agents: a 2026 server that declared the extension, or a 2025
// server with task-augmented tools/call. Sync keeps its answer per server
// (taskCalls) after each (re)start. Callers hold g.mu.
func (g *Gateway) serverTaskCallsLocked(server string) bool {
	up := g.upstreams[server]
	if up == nil {
		return false
	}
	if upstream2026(up) {
		return declaresTasksExtension(serverCapabilities(up, g.caps[server]))
	}
	var c struct {
		Requests struct {
			Tools struct {
				Call json.RawMessage `json:"call"`
			} `json:"tools"`
		} `json:"requests"`
	}
	return json.Unmarshal(g.taskCaps[server], &c) == nil && len(c.Requests.Tools.Call) > 0 && string(c.Requests.Tools.Call) != "null"
}

// servesTasks2026 reports whether the gateway offers the tasks extension:
// some server runs tool calls as tasks.
func (g *Gateway) servesTasks2026() bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	for _, s := range g.serversLocked() {
		if g.taskCalls[s] {
			return true
		}
	}
	return false
}

// mayRunAsTask reports whether a 2026-era agent's call of r may run as a
// task, which taskCall2026 answers or taskHandle2026 maps on the SDK path:
// the stateless fast path (stateless.go) leaves such calls to it. A map
// lookup for every other server's tools.
func (g *Gateway) mayRunAsTask(r route) bool {
	if r.up == nil {
		return false
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	server := r.up.Name()
	if !g.taskCalls[server] {
		return false
	}
	if upstream2026(r.up) {
		return true
	}
	s := g.toolTaskSupportLocked(server, r.name)
	return s == "required" || s == "optional"
}

// capabilities2026Raw is capabilitiesRaw for server/discover: the 2025
// tasks capability gives way to the extension, offered when some server
// runs tasks.
func (g *Gateway) capabilities2026Raw() json.RawMessage {
	caps := g.capabilitiesRaw()
	var m map[string]json.RawMessage
	if json.Unmarshal(caps, &m) != nil {
		return caps
	}
	if _, ok := m["tasks"]; ok {
		caps = withoutMember(caps, "tasks")
	}
	if g.servesTasks2026() {
		if out, err := rawjson.SetMember(caps, "extensions", json.RawMessage(`{"`+tasksExtension+`":{}}`)); err == nil {
			caps = out
		}
	}
	return caps
}

// requestDeclaresTasks reports whether a 2026-era request's client
// capabilities (in its _meta) declare the extension.
func requestDeclaresTasks(req mcp.Request) bool {
	caps, ok := metaOf(req)["io.modelcontextprotocol/clientCapabilities"].(map[string]any)
	if !ok {
		return false
	}
	ext, _ := caps["extensions"].(map[string]any)
	_, ok = ext[tasksExtension]
	return ok
}

// missingTasksCapability is the revision's refusal of a task request (or
// of a call of a tool that runs only as a task) from an agent that did not
// declare the extension.
func missingTasksCapability() error {
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "Missing required client capability",
		Data: json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + tasksExtension + `":{}}}}`)}
}

// taskNameHeader checks the Mcp-Name header of a tasks/* request over
// HTTP: the extension has clients set it to the task id, for load
// balancers to route on, and a header that disagrees with the body is the
// revision's -32020 (as the SDK checks it for tools/call and the others).
func taskNameHeader(req mcp.Request) error {
	ex := req.GetExtra()
	if ex == nil || ex.Header == nil {
		return nil
	}
	name := ex.Header.Get("Mcp-Name")
	if name == "" {
		return nil
	}
	params := rawParams(req)
	if params == nil {
		if p, ok := req.GetParams().(*taskParams); ok && p != nil {
			params = p.raw
		}
	}
	if id := taskIDOf(params); name != id {
		return &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: "header mismatch: Mcp-Name header value '" + name + "' does not match body value '" + id + "'"}
	}
	return nil
}

// taskParams are the params of tasks/get, tasks/update and tasks/cancel,
// kept as sent: they go to a 2026 server as they are, the task id aside.
type taskParams struct {
	mcp.ParamsBase
	raw json.RawMessage
}

func (p *taskParams) UnmarshalJSON(b []byte) error {
	var v struct {
		Meta mcp.Meta `json:"_meta"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	p.Meta, p.raw = v.Meta, bytes.Clone(b)
	return nil
}

// registerTaskMethods makes the merged server take the extension's
// methods: the SDK knows none of them. A 2025-era agent's tasks/* never
// reach them (the endpoint and stdio mode answer those with Task).
func (g *Gateway) registerTaskMethods() {
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		err := mcp.AddReceivingCustomMethod(g.server, method, func(ctx context.Context, ss *mcp.ServerSession, p *taskParams) (*rawResult, error) {
			if !statelessSession(ss) {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: method + " is the 2026-07-28 tasks extension's: a 2025-era session's task requests take the 2025 tasks path"}
			}
			return g.taskRequest2026(ctx, method, p)
		})
		if err != nil {
			panic("aggregate: " + err.Error()) // only if the SDK takes the method over: a programming error
		}
	}
}

// taskRequest2026 answers a 2026-era agent's tasks/get, tasks/update or
// tasks/cancel (the middleware has checked the era and the extension).
func (g *Gateway) taskRequest2026(ctx context.Context, method string, p *taskParams) (*rawResult, error) {
	params := p.raw
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	id := taskIDOf(params)
	if id == "" {
		return nil, invalidParams("%s: missing taskId", method)
	}
	server, orig, err := g.taskIDs.open(id)
	if err != nil {
		return nil, err
	}
	g.mu.RLock()
	up := g.upstreams[server]
	g.mu.RUnlock()
	if up == nil {
		return nil, invalidParams("unknown task %q: its server %q is gone", id, server)
	}
	if upstream2026(up) {
		out, err := rawjson.SetString(withoutEnvelope(params), "taskId", orig)
		if err != nil {
			return nil, invalidParams("%s: %v", method, err)
		}
		res, err := callRaw(ctx, up, method, out)
		if err != nil {
			return nil, upstreamError(server, err)
		}
		if _, ok, _ := rawjson.MemberValue(res, "taskId"); ok {
			if res, err = rawjson.SetString(res, "taskId", id); err != nil {
				return nil, upstreamError(server, err)
			}
		}
		return &rawResult{raw: res}, nil
	}
	ref, _ := json.Marshal(map[string]string{"taskId": orig})
	switch method {
	case "tasks/get":
		return g.legacyTaskGet(ctx, up, id, ref)
	case "tasks/cancel":
		if _, err := callRaw(ctx, up, "tasks/cancel", ref); err != nil {
			// A 2025 server refuses to cancel a task that is over; the
			// revision acknowledges that too (cancel is idempotent).
			if _, gerr := callRaw(ctx, up, "tasks/get", ref); gerr != nil {
				return nil, upstreamError(server, err)
			}
		}
		return &rawResult{raw: json.RawMessage(`{}`)}, nil
	default: // tasks/update
		// A 2025 server asks for input with requests of its own, outside
		// tasks/get; the gateway has none to answer, and the revision lets
		// a server ignore responses to keys not outstanding.
		if _, err := callRaw(ctx, up, "tasks/get", ref); err != nil {
			return nil, upstreamError(server, err)
		}
		return &rawResult{raw: json.RawMessage(`{}`)}, nil
	}
}

// toolTaskSupport is the execution.taskSupport of server's tool name as
// listed ("" when it has none). Callers hold g.mu.
func (g *Gateway) toolTaskSupportLocked(server, name string) string {
	var t struct {
		Execution struct {
			TaskSupport string `json:"taskSupport"`
		} `json:"execution"`
	}
	if json.Unmarshal(g.tools.raw[server][name], &t) != nil {
		return ""
	}
	return t.Execution.TaskSupport
}

// taskCall2026 answers a 2026-era agent's tools/call of a 2025 server's
// tool that runs as a task (see the top of this file); handled is false for
// every other call, which goes its usual way.
func (g *Gateway) taskCall2026(ctx context.Context, req *mcp.CallToolRequest) (res mcp.Result, handled bool, err error) {
	if req.Params == nil {
		return nil, false, nil
	}
	g.mu.RLock()
	r, ok := g.tools.routes[req.Params.Name]
	var support string
	var server string
	if ok && g.taskCalls[r.up.Name()] && !upstream2026(r.up) {
		server = r.up.Name()
		support = g.toolTaskSupportLocked(server, r.name)
	}
	g.mu.RUnlock()
	declared := requestDeclaresTasks(req)
	if support == "required" && !declared {
		return nil, true, missingTasksCapability()
	}
	if support != "required" && (support != "optional" || !declared) {
		return nil, false, nil
	}
	params := rawParams(req)
	if params == nil {
		if params, err = json.Marshal(req.Params); err != nil {
			return nil, true, invalidParams("tools/call: %v", err)
		}
	}
	params = withoutEnvelope(params)
	if params, err = rawjson.SetString(params, "name", r.name); err == nil {
		params, err = rawjson.SetMember(params, "task", json.RawMessage(`{}`))
	}
	if err != nil {
		return nil, true, invalidParams("tools/call: %v", err)
	}
	if g.hooked(server, r.name) {
		out, err := g.hookedTaskCall(ctx, req.Session, r, req.Params.Name, params)
		if err != nil {
			return nil, true, err
		}
		return &rawResult{raw: out}, true, nil
	}
	call, done := g.calls.begin(ctx, req.Session, server)
	defer done()
	out, err := callRaw(call.ctx, r.up, "tools/call", params)
	if err != nil {
		return nil, true, call.expired(upstreamError(server, err))
	}
	var created struct {
		Task json.RawMessage `json:"task"`
	}
	if json.Unmarshal(out, &created) != nil || len(created.Task) == 0 {
		return &rawResult{raw: out}, true, nil // a server that ran the call at once
	}
	orig := taskIDOf(created.Task)
	if orig == "" {
		return nil, true, upstreamError(server, errors.New("tools/call: a task without taskId"))
	}
	t, err := fromLegacyTask(created.Task, g.taskIDs.mint(server, orig, processLocal(r.up)))
	if err != nil {
		return nil, true, upstreamError(server, err)
	}
	t.ResultType, t.InputRequests = "task", nil
	b, err := json.Marshal(t)
	if err != nil {
		return nil, true, upstreamError(server, err)
	}
	return &rawResult{raw: b}, true, nil
}

// taskHandle2026 gives a 2026 server's task handle (a tools/call result of
// resultType "task") the gateway's task id; any other result is returned
// as it is.
func (g *Gateway) taskHandle2026(req *mcp.CallToolRequest, res mcp.Result) (mcp.Result, error) {
	r, ok := res.(*rawResult)
	if !ok || r == nil || !bytes.Contains(r.raw, []byte(`"task"`)) || req.Params == nil {
		return res, nil
	}
	if rt, _ := stringMember(r.raw, "resultType"); rt != "task" {
		return res, nil
	}
	g.mu.RLock()
	route, ok := g.tools.routes[req.Params.Name]
	g.mu.RUnlock()
	orig := taskIDOf(r.raw)
	if !ok || orig == "" {
		return nil, invalidParams("tools/call: a task handle the gateway cannot route")
	}
	b, err := rawjson.SetString(r.raw, "taskId", g.taskIDs.mint(route.up.Name(), orig, processLocal(route.up)))
	if err != nil {
		return nil, upstreamError(route.up.Name(), err)
	}
	c := *r
	c.raw = b
	return &c, nil
}
