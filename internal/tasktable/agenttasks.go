package tasktable

import (
	"cmp"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// AgentTask is a task an agent runs for a server.
type AgentTask struct {
	taskLife        // Session: the agent session that runs it
	Server   string // the server it runs for
	ID       string // as the server knows it
	AgentID  string // as the agent made it
}

type agentTaskKey struct {
	ss *mcp.ServerSession
	id string
}

// AgentTasks maps the tasks agents run for servers both ways.
type AgentTasks struct {
	mu        sync.Mutex
	now       func() time.Time
	live      func() map[*mcp.ServerSession]bool // the sessions alive; nil: all
	seq       uint64
	byServer  map[taskKey]*AgentTask
	byAgent   map[agentTaskKey]*AgentTask
	bySession sessionTasks[*AgentTask]
	nextSweep time.Time
	// waiting counts, per session, the task-augmented requests sent to it
	// and not answered yet; held are the statuses it sent meanwhile for
	// tasks it has not answered with (at most maxHeldStatuses).
	waiting map[*mcp.ServerSession]int
	held    map[*mcp.ServerSession][]heldStatus
}

type heldStatus struct {
	agentID string
	params  json.RawMessage
}

const maxHeldStatuses = 16

// NewAgentTasks returns an empty table; live, if not nil, lists the agent
// sessions still alive (the tasks of others are dropped at the next sweep).
func NewAgentTasks(live func() map[*mcp.ServerSession]bool) *AgentTasks {
	return &AgentTasks{now: time.Now, live: live,
		byServer: make(map[taskKey]*AgentTask), byAgent: make(map[agentTaskKey]*AgentTask),
		bySession: make(sessionTasks[*AgentTask]),
		waiting:   make(map[*mcp.ServerSession]int), held: make(map[*mcp.ServerSession][]heldStatus)}
}

// Expect records a task-augmented request sent to ss; the returned func
// ends it.
func (t *AgentTasks) Expect(ss *mcp.ServerSession) func() {
	t.mu.Lock()
	t.waiting[ss]++
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.waiting[ss]--; t.waiting[ss] <= 0 {
			delete(t.waiting, ss)
			delete(t.held, ss)
		}
	}
}

// Hold keeps a status of ss for a task it has not answered with yet, while
// it has task requests pending.
func (t *AgentTasks) Hold(ss *mcp.ServerSession, agentID string, params json.RawMessage) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.waiting[ss] == 0 || len(t.held[ss]) >= maxHeldStatuses {
		return
	}
	t.held[ss] = append(t.held[ss], heldStatus{agentID, params})
}

// Add registers the task agentID of session ss, made for server, and
// returns the id the server gets for it, with the statuses held for it.
func (t *AgentTasks) Add(server, agentID string, ss *mcp.ServerSession, ttl time.Duration) (string, []json.RawMessage) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.sweepLocked(now, false)
	var early []json.RawMessage
	if held := t.held[ss]; len(held) > 0 {
		t.held[ss], early = takeHeld(held, agentID)
	}
	if e, ok := t.byAgent[agentTaskKey{ss, agentID}]; ok && !e.expired(now) {
		return e.ID, early
	}
	id := agentID
	if e, ok := t.byServer[taskKey{server, id}]; ok && !e.expired(now) {
		id = "mcp-gateway-task-" + randomHex(12)
	}
	if oldest, full := t.bySession.oldestIfFull(ss); full {
		t.deleteLocked(oldest)
	}
	t.seq++
	e := &AgentTask{taskLife: taskLife{Session: ss, seq: t.seq}, Server: server, ID: id, AgentID: agentID}
	if ttl > 0 {
		e.expires = now.Add(ttl)
	}
	if old := t.byAgent[agentTaskKey{ss, agentID}]; old != nil {
		t.deleteLocked(old)
	}
	if old := t.byServer[taskKey{server, id}]; old != nil {
		t.deleteLocked(old)
	}
	t.byServer[taskKey{server, id}] = e
	t.byAgent[agentTaskKey{ss, agentID}] = e
	t.bySession.add(e)
	return id, early
}

func (t *AgentTasks) deleteLocked(e *AgentTask) {
	if t.byServer[taskKey{e.Server, e.ID}] == e {
		delete(t.byServer, taskKey{e.Server, e.ID})
	}
	if t.byAgent[agentTaskKey{e.Session, e.AgentID}] == e {
		delete(t.byAgent, agentTaskKey{e.Session, e.AgentID})
	}
	t.bySession.remove(e)
}

// sweepLocked drops expired tasks and those of sessions that are gone,
// when taskSweepEvery has passed since the last sweep (or force).
func (t *AgentTasks) sweepLocked(now time.Time, force bool) {
	if !force && now.Before(t.nextSweep) {
		return
	}
	t.nextSweep = now.Add(taskSweepEvery)
	for _, e := range t.bySession.stale(now, t.live) {
		t.deleteLocked(e)
	}
}

// ByServerID returns the live task the server knows as id.
func (t *AgentTasks) ByServerID(server, id string) (AgentTask, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.byServer[taskKey{server, id}]
	if !ok || e.expired(t.now()) {
		return AgentTask{}, false
	}
	return *e, true
}

// ByAgentID returns the live task session ss made as agentID.
func (t *AgentTasks) ByAgentID(ss *mcp.ServerSession, agentID string) (AgentTask, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.byAgent[agentTaskKey{ss, agentID}]
	if !ok || e.expired(t.now()) {
		return AgentTask{}, false
	}
	return *e, true
}

// SessionsOf returns the sessions that run live tasks of server, in the
// order of their first such task.
func (t *AgentTasks) SessionsOf(server string) []*mcp.ServerSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	first := map[*mcp.ServerSession]uint64{}
	for _, e := range t.byServer {
		if e.Server != server || e.expired(now) {
			continue
		}
		if s, ok := first[e.Session]; !ok || e.seq < s {
			first[e.Session] = e.seq
		}
	}
	out := make([]*mcp.ServerSession, 0, len(first))
	for ss := range first {
		out = append(out, ss)
	}
	slices.SortFunc(out, func(a, b *mcp.ServerSession) int { return cmp.Compare(first[a], first[b]) })
	return out
}
