package aggregate

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of the task tables (this file's and tasks.go's): a task is
// forgotten once its ttl has passed since the gateway saw it made (the
// receiver may delete it then, so the requestor cannot count on it
// either), when its agent session is gone, and beyond maxTasksPerSession
// tasks of one session, oldest first (a ttl may be unlimited, and stdio
// mode's one session never ends). Expired tasks and those of ended
// sessions are swept at most every taskSweepEvery, when a task is added.
const (
	maxTasksPerSession = 1024
	taskSweepEvery     = time.Minute
)

// taskLife is what bounds a task entry's life.
type taskLife struct {
	session *mcp.ServerSession
	expires time.Time // zero: no ttl
	seq     uint64    // order of creation
}

func (l taskLife) expired(now time.Time) bool { return !l.expires.IsZero() && !now.Before(l.expires) }

func (l *taskLife) life() *taskLife { return l }

// sessionTasks holds each session's entries of a task table, oldest first:
// what bounds both tables (the per-session cap drops a session's oldest,
// a sweep drops expired entries and those of ended sessions).
type sessionTasks[E interface {
	comparable
	life() *taskLife
}] map[*mcp.ServerSession][]E

func (q sessionTasks[E]) add(e E) {
	ss := e.life().session
	q[ss] = append(q[ss], e)
}

func (q sessionTasks[E]) remove(e E) {
	ss := e.life().session
	l := q[ss]
	if i := slices.Index(l, e); i >= 0 {
		l = slices.Delete(l, i, i+1)
	}
	if len(l) == 0 {
		delete(q, ss)
	} else {
		q[ss] = l
	}
}

// oldestIfFull returns ss's oldest entry when ss holds maxTasksPerSession.
func (q sessionTasks[E]) oldestIfFull(ss *mcp.ServerSession) (E, bool) {
	if l := q[ss]; len(l) >= maxTasksPerSession {
		return l[0], true
	}
	var zero E
	return zero, false
}

// stale lists the entries expired at now or whose session is not alive
// (live nil: every session is).
func (q sessionTasks[E]) stale(now time.Time, live func() map[*mcp.ServerSession]bool) []E {
	var alive map[*mcp.ServerSession]bool
	if live != nil && len(q) > 0 {
		alive = live()
	}
	var out []E
	for ss, l := range q {
		for _, e := range l {
			if (alive != nil && !alive[ss]) || e.life().expired(now) {
				out = append(out, e)
			}
		}
	}
	return out
}

// takeHeld splits held into the statuses of task id and the others.
func takeHeld(held []heldStatus, id string) (kept []heldStatus, early []json.RawMessage) {
	kept = held[:0]
	for _, h := range held {
		if h.agentID == id {
			early = append(early, h.params)
		} else {
			kept = append(kept, h)
		}
	}
	return kept, early
}

// clientTask is a task an agent runs for a server.
type clientTask struct {
	taskLife
	server  string
	id      string // as the server knows it
	agentID string // as the agent made it
}

type agentTaskKey struct {
	ss *mcp.ServerSession
	id string
}

// clientTaskTable maps the tasks agents run for servers both ways.
type clientTaskTable struct {
	mu        sync.Mutex
	now       func() time.Time
	live      func() map[*mcp.ServerSession]bool // the sessions alive; nil: all
	seq       uint64
	byServer  map[taskKey]*clientTask
	byAgent   map[agentTaskKey]*clientTask
	bySession sessionTasks[*clientTask]
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

func newClientTaskTable(live func() map[*mcp.ServerSession]bool) *clientTaskTable {
	return &clientTaskTable{now: time.Now, live: live,
		byServer: make(map[taskKey]*clientTask), byAgent: make(map[agentTaskKey]*clientTask),
		bySession: make(sessionTasks[*clientTask]),
		waiting:   make(map[*mcp.ServerSession]int), held: make(map[*mcp.ServerSession][]heldStatus)}
}

// expect records a task-augmented request sent to ss; the returned func
// ends it.
func (t *clientTaskTable) expect(ss *mcp.ServerSession) func() {
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

// hold keeps a status of ss for a task it has not answered with yet, while
// it has task requests pending.
func (t *clientTaskTable) hold(ss *mcp.ServerSession, agentID string, params json.RawMessage) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.waiting[ss] == 0 || len(t.held[ss]) >= maxHeldStatuses {
		return
	}
	t.held[ss] = append(t.held[ss], heldStatus{agentID, params})
}

// add registers the task agentID of session ss, made for server, and
// returns the id the server gets for it, with the statuses held for it.
func (t *clientTaskTable) add(server, agentID string, ss *mcp.ServerSession, ttl time.Duration) (string, []json.RawMessage) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.sweepLocked(now, false)
	var early []json.RawMessage
	if held := t.held[ss]; len(held) > 0 {
		t.held[ss], early = takeHeld(held, agentID)
	}
	if e, ok := t.byAgent[agentTaskKey{ss, agentID}]; ok && !e.expired(now) {
		return e.id, early
	}
	id := agentID
	if e, ok := t.byServer[taskKey{server, id}]; ok && !e.expired(now) {
		id = "mcp-gateway-task-" + randomHex(12)
	}
	if oldest, full := t.bySession.oldestIfFull(ss); full {
		t.deleteLocked(oldest)
	}
	t.seq++
	e := &clientTask{taskLife: taskLife{session: ss, seq: t.seq}, server: server, id: id, agentID: agentID}
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

func (t *clientTaskTable) deleteLocked(e *clientTask) {
	if t.byServer[taskKey{e.server, e.id}] == e {
		delete(t.byServer, taskKey{e.server, e.id})
	}
	if t.byAgent[agentTaskKey{e.session, e.agentID}] == e {
		delete(t.byAgent, agentTaskKey{e.session, e.agentID})
	}
	t.bySession.remove(e)
}

// sweepLocked drops expired tasks and those of sessions that are gone,
// when taskSweepEvery has passed since the last sweep (or force).
func (t *clientTaskTable) sweepLocked(now time.Time, force bool) {
	if !force && now.Before(t.nextSweep) {
		return
	}
	t.nextSweep = now.Add(taskSweepEvery)
	for _, e := range t.bySession.stale(now, t.live) {
		t.deleteLocked(e)
	}
}

func (t *clientTaskTable) byServerID(server, id string) (clientTask, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.byServer[taskKey{server, id}]
	if !ok || e.expired(t.now()) {
		return clientTask{}, false
	}
	return *e, true
}

func (t *clientTaskTable) byAgentID(ss *mcp.ServerSession, agentID string) (clientTask, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.byAgent[agentTaskKey{ss, agentID}]
	if !ok || e.expired(t.now()) {
		return clientTask{}, false
	}
	return *e, true
}

// sessionsOf returns the sessions that run live tasks of server, in the
// order of their first such task.
func (t *clientTaskTable) sessionsOf(server string) []*mcp.ServerSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	first := map[*mcp.ServerSession]uint64{}
	for _, e := range t.byServer {
		if e.server != server || e.expired(now) {
			continue
		}
		if s, ok := first[e.session]; !ok || e.seq < s {
			first[e.session] = e.seq
		}
	}
	out := make([]*mcp.ServerSession, 0, len(first))
	for ss := range first {
		out = append(out, ss)
	}
	slices.SortFunc(out, func(a, b *mcp.ServerSession) int { return cmp.Compare(first[a], first[b]) })
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
