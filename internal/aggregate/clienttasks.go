package aggregate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/rawjson"
)

// Client-side tasks (protocol 2025-11-25): a client that declares
// capabilities.tasks.requests.sampling.createMessage (or
// .elicitation.create) lets a server send that request with "task" in its
// params; the client answers at once with a CreateTaskResult whose task id
// it made, runs the request in the background, and the server polls it
// with tasks/get, tasks/result, tasks/list and tasks/cancel, while the
// client may report changes with notifications/tasks/status.
//
// The gateway offers servers the union of what agents can do (UpstreamOffer)
// and relays each such request, like any other server request, to the agent
// session whose call the server is handling. The task then lives on that
// agent: the server's tasks/* requests for it go to that session, and the
// session's notifications/tasks/status go to that server.
//
// Task ids: the agent makes them, and a server sees one client, the
// gateway, for every agent session; two agents may make the same id (a
// counter, say) for tasks of the same server. The gateway passes an agent's
// id on unchanged unless another session's live task of that server already
// has it; then the server gets an id of the gateway's
// ("mcp-gateway-task-<random>") for it, mapped back in everything the
// gateway relays about that task (params of tasks/*, their results, the
// related-task _meta of tasks/result, status notifications). So ids stay
// as the agent wrote them whenever that is unambiguous.

// UpstreamOffer is what the gateway offers every server at initialize
// beyond UpstreamCapabilities, as raw JSON by capability name: what the Go
// SDK's ClientCapabilities cannot say. Whether the agent session a request
// goes to has it is checked per request, as for sampling.
func UpstreamOffer() map[string]json.RawMessage {
	return map[string]json.RawMessage{
		"tasks": json.RawMessage(`{"list":{},"cancel":{},"requests":{"sampling":{"createMessage":{}},"elicitation":{"create":{}}}}`),
	}
}

// agentTasks is what an agent's client declared of the tasks capability.
type agentTasks struct {
	list, cancel, sampling, elicitation bool
}

// agentTasksOf parses the tasks capability in an initialize request's
// params.
func agentTasksOf(params json.RawMessage) (agentTasks, bool) {
	var p struct {
		Capabilities struct {
			Tasks *struct {
				List     json.RawMessage `json:"list"`
				Cancel   json.RawMessage `json:"cancel"`
				Requests struct {
					Sampling struct {
						CreateMessage json.RawMessage `json:"createMessage"`
					} `json:"sampling"`
					Elicitation struct {
						Create json.RawMessage `json:"create"`
					} `json:"elicitation"`
				} `json:"requests"`
			} `json:"tasks"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(params, &p) != nil || p.Capabilities.Tasks == nil {
		return agentTasks{}, false
	}
	t := p.Capabilities.Tasks
	present := func(v json.RawMessage) bool { return len(v) > 0 && string(v) != "null" }
	a := agentTasks{list: present(t.List), cancel: present(t.Cancel),
		sampling: present(t.Requests.Sampling.CreateMessage), elicitation: present(t.Requests.Elicitation.Create)}
	return a, a != agentTasks{}
}

// AgentInitialized records what an agent session's initialize params say
// that the SDK's types do not keep (the tasks capability). sessionID is the
// session's id ("" for stdio mode's one session). Call it before the
// session's initialize is answered, so that it holds before any call.
func (g *Gateway) AgentInitialized(sessionID string, params json.RawMessage) {
	a, ok := agentTasksOf(params)
	g.agents.mu.Lock()
	defer g.agents.mu.Unlock()
	if !ok {
		delete(g.agents.tasks, sessionID)
		return
	}
	g.agents.tasks[sessionID] = a
	if n := len(g.agents.tasks); n > 64 && n > 2*g.agents.kept {
		// Sessions end without telling the aggregate: keep those live.
		live := make(map[string]bool)
		for ss := range g.server.Sessions() {
			live[ss.ID()] = true
		}
		for id := range g.agents.tasks {
			if !live[id] && id != sessionID {
				delete(g.agents.tasks, id)
			}
		}
		g.agents.kept = len(g.agents.tasks)
	}
}

// agentsInfo holds per agent session what the SDK's types drop.
type agentsInfo struct {
	mu    sync.Mutex
	tasks map[string]agentTasks // by session id; only sessions that declared tasks
	kept  int                   // len(tasks) after the last pruning
}

func (g *Gateway) agentTasks(session string) agentTasks {
	g.agents.mu.Lock()
	defer g.agents.mu.Unlock()
	return g.agents.tasks[session]
}

// taskAugmented reports whether a request's params ask for a task.
func taskAugmented(params json.RawMessage) bool {
	var p struct {
		Task json.RawMessage `json:"task"`
	}
	return json.Unmarshal(params, &p) == nil && len(p.Task) > 0 && string(p.Task) != "null"
}

// askTask relays a task-augmented sampling or elicitation request to the
// agent session of call c, and registers the task of its answer.
func (g *Gateway) askTask(ctx context.Context, c *call, server, method string, params json.RawMessage) (json.RawMessage, error) {
	a := g.agentTasks(c.sessionID())
	if (method == "sampling/createMessage" && !a.sampling) || (method == "elicitation/create" && !a.elicitation) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: fmt.Sprintf("mcp-gateway: the agent's client does not support task-augmented %s", method)}
	}
	done := g.clientTasks.Expect(c.ss)
	defer done()
	res, err := g.askCall(ctx, c, method, params)
	if err != nil {
		return nil, err
	}
	var created struct {
		Task json.RawMessage `json:"task"`
	}
	if json.Unmarshal(res, &created) != nil || len(created.Task) == 0 || created.Task[0] != '{' {
		return res, nil // the agent ran it at once
	}
	var t struct {
		TaskID string   `json:"taskId"`
		TTL    *float64 `json:"ttl"`
	}
	if json.Unmarshal(created.Task, &t) != nil || t.TaskID == "" {
		return res, nil
	}
	id, early := g.clientTasks.Add(server, t.TaskID, c.ss, ttlOf(t.TTL))
	// Statuses the agent sent before its answer go first, as they would
	// on a direct connection.
	for _, p := range early {
		g.statusUp(server, t.TaskID, id, p)
	}
	if id == t.TaskID {
		return res, nil
	}
	task, err := rawjson.SetString(created.Task, "taskId", id)
	if err != nil {
		return nil, agentError(method, err)
	}
	if res, err = rawjson.SetMember(res, "task", task); err != nil {
		return nil, agentError(method, err)
	}
	return res, nil
}

// ttlOf is a task's ttl in milliseconds as a duration; zero (none) when it
// is absent or null (unlimited).
func ttlOf(ms *float64) time.Duration {
	if ms == nil || *ms <= 0 || *ms >= float64(math.MaxInt64/int64(time.Millisecond)) {
		return 0
	}
	return time.Duration(*ms * float64(time.Millisecond))
}

// AgentTaskStatus relays an agent's notifications/tasks/status to the
// server whose task it is. A status for a task the agent has not answered
// yet (it reports the task before its CreateTaskResult) is held until that
// answer, while the session has task requests pending; any other status
// for an unknown task is dropped.
func (g *Gateway) AgentTaskStatus(ss *mcp.ServerSession, params json.RawMessage) {
	taskID := taskIDOf(params)
	if taskID == "" {
		return
	}
	t, ok := g.clientTasks.ByAgentID(ss, taskID)
	if !ok {
		g.clientTasks.Hold(ss, taskID, params)
		return
	}
	g.statusUp(t.Server, t.AgentID, t.ID, params)
}

// notifyWait bounds sending a notification to a server (it waits while
// the server restarts).
const notifyWait = 5 * time.Second

// statusUp sends an agent's task status to server, with the task id the
// server knows.
func (g *Gateway) statusUp(server, agentID, id string, params json.RawMessage) {
	if id != agentID {
		var err error
		if params, err = rawjson.SetString(params, "taskId", id); err != nil {
			return
		}
	}
	g.mu.RLock()
	up := g.upstreams[server]
	g.mu.RUnlock()
	n, ok := up.(RawNotifier)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), notifyWait)
	defer cancel()
	if err := n.NotifyRaw(ctx, "notifications/tasks/status", params); err != nil {
		g.log.Debug().Err(err).Str("server", server).Msg("task status to the server")
	}
}

// RawNotifier is an Upstream that can send a notification with raw JSON
// params (*supervisor.Server, *supervisor.Remote).
type RawNotifier interface {
	NotifyRaw(ctx context.Context, method string, params json.RawMessage) error
}

// clientTaskRequest answers a server's tasks/get, tasks/result or
// tasks/cancel for a task an agent runs: it goes to that agent's session.
func (g *Gateway) clientTaskRequest(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, error) {
	taskID := taskIDOf(params)
	if taskID == "" {
		return nil, invalidParams("%s: missing taskId", method)
	}
	t, ok := g.clientTasks.ByServerID(server, taskID)
	if !ok {
		return nil, invalidParams("mcp-gateway: unknown task %q", taskID)
	}
	if method == "tasks/cancel" && !g.agentTasks(t.Session.ID()).cancel {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "mcp-gateway: the agent's client does not support tasks/cancel"}
	}
	out := params
	if t.AgentID != t.ID {
		var err error
		if out, err = rawjson.SetString(params, "taskId", t.AgentID); err != nil {
			return nil, invalidParams("%s: %v", method, err)
		}
	}
	res, err := g.askSession(ctx, server, t.Session, method, out)
	if err != nil || t.AgentID == t.ID {
		return res, err
	}
	if method == "tasks/result" {
		return g.relatedTask(res, server, t.ID), nil
	}
	if b, err := rawjson.SetString(res, "taskId", t.ID); err == nil {
		return b, nil
	}
	return res, nil
}

// askSession sends session ss a request about a task it runs for server:
// on the stream of a call of ss to server in flight, else on the session's
// standalone stream, when it has one.
func (g *Gateway) askSession(ctx context.Context, server string, ss *mcp.ServerSession, method string, params json.RawMessage) (json.RawMessage, error) {
	if c := g.calls.of(server, ss); c != nil {
		return g.askCall(ctx, c, method, params)
	}
	g.mu.RLock()
	reachable := g.reachable
	g.mu.RUnlock()
	if reachable != nil && !reachable(ss) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("mcp-gateway: %s: the agent that runs the task has no call in flight to this server and no stream open to send it on", method)}
	}
	return g.ask(ctx, context.Background(), ss, method, params)
}

// clientTaskList answers a server's tasks/list with the tasks agents run
// for that server: each session that has some and whose client lists
// tasks is asked (all pages), and only its tasks of that server are kept;
// the merged list is one page. With one session asked, its answer is
// passed on as it is apart from the tasks (its _meta kept).
func (g *Gateway) clientTaskList(ctx context.Context, server string) (json.RawMessage, error) {
	var items []json.RawMessage
	var errs []error
	var only json.RawMessage
	sessions := g.clientTasks.SessionsOf(server)
	asked := 0
	for _, ss := range sessions {
		if !g.agentTasks(ss.ID()).list {
			continue
		}
		asked++
		params := json.RawMessage(`{}`)
		seen := map[string]bool{}
		for page := 0; ; page++ {
			res, err := g.askSession(ctx, server, ss, "tasks/list", params)
			if err != nil {
				errs = append(errs, err)
				break
			}
			tasks, next, err := rawjson.ItemsOf(res, "tasks")
			if err != nil {
				errs = append(errs, err)
				break
			}
			if page == 0 && next == "" {
				only = res
			} else {
				only = nil
			}
			for _, b := range tasks {
				taskID := taskIDOf(b)
				if taskID == "" {
					continue
				}
				t, ok := g.clientTasks.ByAgentID(ss, taskID)
				if !ok || t.Server != server {
					continue // another server's, or not one a server made through the gateway
				}
				if t.ID != t.AgentID {
					if b, err = rawjson.SetString(b, "taskId", t.ID); err != nil {
						continue
					}
				}
				items = append(items, b)
			}
			if next == "" || seen[next] || page >= maxListPages {
				break
			}
			seen[next] = true
			if params, err = json.Marshal(map[string]string{"cursor": next}); err != nil {
				break
			}
		}
	}
	if len(items) == 0 && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	list := rawjson.EncodeList("tasks", items, "")
	if asked == 1 && only != nil {
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

// maxListPages bounds the pages of one agent's tasks/list.
const maxListPages = 100
