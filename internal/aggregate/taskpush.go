package aggregate

import (
	"context"
	"encoding/json"
	"slices"
	"time"
)

// Task status pushes to 2026-era agents (the tasks extension's
// notifications/tasks on a subscriptions/listen stream).
//
// An agent that declared the extension lists the task ids it wants to
// hear of in its listen filter (notifications.taskIds); the gateway
// acknowledges the ids it can push for (taskIDs.open accepts them, and
// their server is a 2025-era one, whose notifications/tasks/status reach
// the gateway on the shared session) and, when such a server announces a
// status, sends the task as tasks/get would show it at that moment: the
// extension asks for a complete DetailedTask, so a terminal status carries
// the result or error inlined (legacyTaskGet asks the server's
// tasks/result for it). The ids are stateless (tasks2026.go), so a stream
// needs no table of tasks: the status's server and id mint the id the
// stream holds. A listen with taskIds from an agent that did not declare
// the extension gets -32021, as the extension asks.
//
// A 2026-era server's own notifications/tasks would need a listen of the
// gateway's own at that server, with the ids opened; such ids are not
// acknowledged (yet): the agent polls tasks/get.

// taskPushTimeout bounds asking a server for a finished task's result
// before pushing it: nobody waits on the push, and a server that stopped
// answering must not hold its goroutine.
const taskPushTimeout = 30 * time.Second

// listenTaskIDs reads the taskIds of a listen request's raw params (nil
// when there are none or the transport did not pass the params on).
func listenTaskIDs(params json.RawMessage) []string {
	var p struct {
		Notifications struct {
			TaskIDs []string `json:"taskIds"`
		} `json:"notifications"`
	}
	if len(params) == 0 || json.Unmarshal(params, &p) != nil {
		return nil
	}
	return p.Notifications.TaskIDs
}

// pushableTaskIDs are those of ids (once each, in order) whose status the
// gateway can push: ids it minted, of a 2025-era server it runs now.
func (g *Gateway) pushableTaskIDs(ids []string) []string {
	var out []string
	for _, id := range ids {
		if slices.Contains(out, id) {
			continue
		}
		server, _, err := g.taskIDs.open(id)
		if err != nil {
			continue
		}
		g.mu.RLock()
		up := g.upstreams[server]
		g.mu.RUnlock()
		if up == nil || upstream2026(up) {
			continue
		}
		out = append(out, id)
	}
	return out
}

// forTask returns the open streams that listen to the task id.
func (s *listeners) forTask(id string) []*listener {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*listener
	for l := range s.set {
		if slices.Contains(l.taskIDs, id) {
			out = append(out, l)
		}
	}
	return out
}

// pushTaskStatus sends a 2025-era server's notifications/tasks/status
// (params, about its task orig) to the listen streams that listen to the
// task's gateway id, as notifications/tasks. A non-terminal status is sent
// at once (in the order the server sent it); a terminal one after asking
// the server for the result, off the notification goroutine (the SDK
// handles a server's notifications one at a time, and the request waits
// for a response on the same session).
func (g *Gateway) pushTaskStatus(server, orig string, params json.RawMessage) {
	g.mu.RLock()
	up := g.upstreams[server]
	g.mu.RUnlock()
	if up == nil || upstream2026(up) {
		return
	}
	id := g.taskIDs.mint(server, orig, processLocal(up))
	ls := g.listens.forTask(id)
	if len(ls) == 0 {
		return
	}
	t, err := fromLegacyTask(params, id)
	if err != nil {
		g.log.Info().Err(err).Str("server", server).Msg("notifications/tasks/status: unreadable task")
		return
	}
	if t.Status != "completed" && t.Status != "failed" {
		b, err := json.Marshal(t)
		if err != nil {
			return
		}
		for _, l := range ls {
			l.send("notifications/tasks", b)
		}
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), taskPushTimeout)
		defer cancel()
		ref, _ := json.Marshal(map[string]string{"taskId": orig})
		res, err := g.legacyTaskGet(ctx, up, id, ref)
		if err != nil {
			g.log.Info().Err(err).Str("server", server).Msg("notifications/tasks: reading a finished task")
			return
		}
		for _, l := range ls {
			l.send("notifications/tasks", res.raw) // no resultType: legacyTaskGet sets none
		}
	}()
}
