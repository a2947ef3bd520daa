package tasktable

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of the task tables (ServerTasks and AgentTasks): a task is
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
	Session *mcp.ServerSession // the agent session whose task it is
	expires time.Time          // zero: no ttl
	seq     uint64             // order of creation
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
	ss := e.life().Session
	q[ss] = append(q[ss], e)
}

func (q sessionTasks[E]) remove(e E) {
	ss := e.life().Session
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

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
