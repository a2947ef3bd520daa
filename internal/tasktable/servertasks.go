package tasktable

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServerTask is where an exported task id leads.
type ServerTask struct {
	taskLife        // Session: the agent session that made it
	Server   string // the server that runs it
	Orig     string // the server's task id
	ID       string // the exported id
}

// ServerTasks maps exported task ids to their servers, and back. It is
// bounded as AgentTasks is (see maxTasksPerSession).
type ServerTasks struct {
	mu        sync.Mutex
	now       func() time.Time
	live      func() map[*mcp.ServerSession]bool // the sessions alive; nil: all
	seq       uint64
	byID      map[string]*ServerTask
	byOrig    map[taskKey]*ServerTask
	bySession sessionTasks[*ServerTask]
	nextSweep time.Time
	// waiting counts, per server, the task-augmented calls in flight;
	// held are the statuses the server sent meanwhile for tasks it has
	// not answered with yet (at most maxHeldStatuses).
	waiting map[string]int
	held    map[string][]heldStatus
}

type taskKey struct{ server, orig string }

// NewServerTasks returns an empty table; live is as for NewAgentTasks.
func NewServerTasks(live func() map[*mcp.ServerSession]bool) *ServerTasks {
	return &ServerTasks{now: time.Now, live: live, byID: make(map[string]*ServerTask), byOrig: make(map[taskKey]*ServerTask),
		bySession: make(sessionTasks[*ServerTask]), waiting: make(map[string]int), held: make(map[string][]heldStatus)}
}

// Export returns the exported id of a server's task made by session ss,
// minting one for a task the table has not seen, and the statuses held
// for it (see Hold).
func (t *ServerTasks) Export(server, orig string, ss *mcp.ServerSession, ttl time.Duration) (string, []json.RawMessage) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.sweepLocked(now)
	k := taskKey{server, orig}
	var early []json.RawMessage
	if held := t.held[k.server]; len(held) > 0 {
		t.held[k.server], early = takeHeld(held, orig)
	}
	if r, ok := t.byOrig[k]; ok && !r.expired(now) && r.Session == ss {
		return r.ID, early
	}
	if old := t.byOrig[k]; old != nil {
		t.deleteLocked(old) // expired, or the server reused an id
	}
	if oldest, full := t.bySession.oldestIfFull(ss); full {
		t.deleteLocked(oldest)
	}
	t.seq++
	r := &ServerTask{taskLife: taskLife{Session: ss, seq: t.seq}, Server: server, Orig: orig, ID: "task-" + randomHex(12)}
	if ttl > 0 {
		r.expires = now.Add(ttl)
	}
	t.byID[r.ID] = r
	t.byOrig[k] = r
	t.bySession.add(r)
	return r.ID, early
}

func (t *ServerTasks) deleteLocked(r *ServerTask) {
	delete(t.byID, r.ID)
	if k := (taskKey{r.Server, r.Orig}); t.byOrig[k] == r {
		delete(t.byOrig, k)
	}
	t.bySession.remove(r)
}

// sweepLocked drops expired tasks and those of sessions that are gone, at
// most every taskSweepEvery.
func (t *ServerTasks) sweepLocked(now time.Time) {
	if now.Before(t.nextSweep) {
		return
	}
	t.nextSweep = now.Add(taskSweepEvery)
	for _, r := range t.bySession.stale(now, t.live) {
		t.deleteLocked(r)
	}
}

// Lookup returns the live task exported as id.
func (t *ServerTasks) Lookup(id string) (ServerTask, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.byID[id]
	if !ok || r.expired(t.now()) {
		return ServerTask{}, false
	}
	return *r, true
}

// Exported returns the live task server knows as orig.
func (t *ServerTasks) Exported(server, orig string) (ServerTask, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.byOrig[taskKey{server, orig}]
	if !ok || r.expired(t.now()) {
		return ServerTask{}, false
	}
	return *r, true
}

// Len is the number of tasks the table holds, expired ones not swept yet
// included.
func (t *ServerTasks) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID)
}

// Expect records a task-augmented call in flight to server; the returned
// func ends it.
func (t *ServerTasks) Expect(server string) func() {
	t.mu.Lock()
	t.waiting[server]++
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.waiting[server]--; t.waiting[server] <= 0 {
			delete(t.waiting, server)
			delete(t.held, server)
		}
	}
}

// Hold keeps a status of server for a task the table does not know, while
// a task-augmented call to server is in flight (the status of the task it
// is making can come before its answer). It reports whether it kept it.
func (t *ServerTasks) Hold(server, orig string, params json.RawMessage) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.waiting[server] == 0 || len(t.held[server]) >= maxHeldStatuses {
		return false
	}
	t.held[server] = append(t.held[server], heldStatus{orig, params})
	return true
}
