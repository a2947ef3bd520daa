package aggregate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/intercept"
	"github.com/mcp-gateway/mcp-gateway/internal/rawjson"
)

// A task call of a tool that interceptors apply to does not become a task
// the agent polls: the gateway runs it to its end and answers the call with
// the result, which both eras allow (a 2025-11-25 receiver may answer a
// task-augmented request normally; a 2026 server answers with a result or a
// handle as it sees fit). Otherwise the arguments would reach the server
// unchecked and the result would come back through tasks/result, where no
// interceptor sees it: a denial, a rewrite or a secret guard could be got
// round by asking for a task. The call is audited as any other.

// hookedTaskCall runs a 2025-era server's task call of r through the
// interceptors. params are the call's params as forwarded (routed name,
// with "task"); exported is the name the agent called.
func (g *Gateway) hookedTaskCall(ctx context.Context, ss *mcp.ServerSession, r route, exported string, params json.RawMessage) (json.RawMessage, error) {
	server := r.up.Name()
	began := time.Now()
	args, _, _ := rawjson.MemberValue(params, "arguments")
	if bytes.Equal(args, []byte("null")) {
		args = nil
	}
	c := &intercept.Call{Server: server, Tool: r.name, ExportedTool: exported, Arguments: args}
	if ss != nil {
		c.Session = ss.ID()
	}
	call, done := g.calls.begin(ctx, ss, server)
	defer done()
	res, trace, err := g.runHooks(call.ctx, c, func(ctx context.Context, out json.RawMessage) (json.RawMessage, error) {
		sent, err := withHookedArgs(params, args, out)
		if err != nil {
			return nil, err
		}
		res, err := g.taskToEnd(ctx, r.up, sent)
		if err != nil {
			return nil, serverError(server, err)
		}
		return res, nil
	})
	err = call.expired(err)
	g.auditRaw(ctx, ss, server, exported, began, len(args), res, err, trace)
	return res, err
}

// taskToEnd sends a task-augmented tools/call and, when the server made a
// task, waits for its result with tasks/result (which blocks until the task
// is over), returned without the related-task _meta that ties it to a task
// the agent never saw.
func (g *Gateway) taskToEnd(ctx context.Context, up Upstream, params json.RawMessage) (json.RawMessage, error) {
	res, err := callRaw(ctx, up, "tools/call", params)
	if err != nil {
		return nil, err
	}
	var created struct {
		Task json.RawMessage `json:"task"`
	}
	if json.Unmarshal(res, &created) != nil || len(created.Task) == 0 {
		return checkObject(res)
	}
	orig := taskIDOf(created.Task)
	if orig == "" {
		return nil, errors.New("tools/call: a task without taskId")
	}
	ref, err := json.Marshal(map[string]string{"taskId": orig})
	if err != nil {
		return nil, err
	}
	if res, err = callRaw(ctx, up, "tasks/result", ref); err != nil {
		return nil, err
	}
	return checkObject(withoutRelatedTask(res))
}

func checkObject(res json.RawMessage) (json.RawMessage, error) {
	if len(res) == 0 || res[0] != '{' {
		return nil, errors.New("tools/call result is not an object")
	}
	return res, nil
}
