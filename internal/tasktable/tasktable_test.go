package tasktable

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// clock is a settable time for the tables' ttl and sweeps.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock                   { return &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }
func liveOf(ss ...*mcp.ServerSession) func() map[*mcp.ServerSession]bool {
	return func() map[*mcp.ServerSession]bool {
		m := map[*mcp.ServerSession]bool{}
		for _, s := range ss {
			m[s] = true
		}
		return m
	}
}

// TestTaskTableBounds: a server's task is forgotten once its ttl has
// passed, when its session is gone, and beyond maxTasksPerSession of one
// session (oldest first); a task without ttl stays otherwise.
func TestTaskTableBounds(t *testing.T) {
	c := newClock()
	a, b := &mcp.ServerSession{}, &mcp.ServerSession{}
	tt := NewServerTasks(nil)
	tt.now, tt.live = c.now, liveOf(a, b)

	short, _ := tt.Export("s", "short", a, time.Minute)
	forever, _ := tt.Export("s", "forever", a, 0)
	c.advance(time.Minute)
	if _, ok := tt.Lookup(short); ok {
		t.Error("a task is still reachable after its ttl")
	}
	if _, ok := tt.Exported("s", "short"); ok {
		t.Error("an expired task still maps back")
	}
	if _, ok := tt.Lookup(forever); !ok {
		t.Error("a task without ttl was forgotten")
	}
	c.advance(taskSweepEvery)
	tt.Export("s", "next", b, 0) // sweeps
	if n := tt.Len(); n != 2 {
		t.Errorf("after a sweep: %d tasks, want 2 (forever, next)", n)
	}

	// Session a ends: its tasks go at the next sweep.
	tt.live = liveOf(b)
	c.advance(taskSweepEvery)
	tt.Export("s", "after", b, 0)
	if _, ok := tt.Lookup(forever); ok || tt.Len() != 2 {
		t.Errorf("the task of an ended session stays: %d tasks", tt.Len())
	}

	// A cap per session, oldest first; the other session keeps its own.
	var ids []string
	for i := range maxTasksPerSession + 1 {
		id, _ := tt.Export("s", "cap-"+strconv.Itoa(i), b, 0)
		ids = append(ids, id)
	}
	if _, ok := tt.Lookup(ids[0]); ok {
		t.Error("the oldest task of a session past the cap stays")
	}
	if _, ok := tt.Lookup(ids[len(ids)-1]); !ok {
		t.Error("the newest task was dropped")
	}
	if n := len(tt.bySession[b]); n != maxTasksPerSession {
		t.Errorf("session holds %d tasks, want the cap %d", n, maxTasksPerSession)
	}
}

// TestClientTaskTable: an agent's task id goes to the server unchanged
// unless another live task of that server has it; the table is bounded as
// the server-side one; statuses an agent sends before answering are held
// for the task they name.
func TestClientTaskTable(t *testing.T) {
	c := newClock()
	a, b, other := &mcp.ServerSession{}, &mcp.ServerSession{}, &mcp.ServerSession{}
	tt := NewAgentTasks(liveOf(a, b, other))
	tt.now = c.now

	if id, _ := tt.Add("s", "1", a, time.Minute); id != "1" {
		t.Errorf("first task 1 of server s: id %q, want the agent's", id)
	}
	if id, _ := tt.Add("other", "1", other, time.Minute); id != "1" {
		t.Errorf("task 1 of another server: id %q, want the agent's", id)
	}
	bid, _ := tt.Add("s", "1", b, time.Minute)
	if !strings.HasPrefix(bid, "mcp-gateway-task-") {
		t.Errorf("a second task 1 of server s: id %q, want one of the gateway's", bid)
	}
	if e, ok := tt.ByServerID("s", bid); !ok || e.Session != b || e.AgentID != "1" {
		t.Errorf("%s maps to %+v", bid, e)
	}
	if e, ok := tt.ByServerID("s", "1"); !ok || e.Session != a {
		t.Errorf("1 maps to %+v", e)
	}
	if got := tt.SessionsOf("s"); len(got) != 2 || got[0] != a || got[1] != b {
		t.Errorf("sessionsOf(s) = %v, want a then b", got)
	}

	// Once a's task expired, its id is free again.
	c.advance(time.Minute)
	if _, ok := tt.ByAgentID(a, "1"); ok {
		t.Error("an expired task is still found")
	}
	if id, _ := tt.Add("s", "1", a, 0); id != "1" {
		t.Errorf("task 1 after the first expired: id %q", id)
	}

	// Held statuses: only while a task request to the session is pending,
	// and only for the task they name.
	tt.Hold(a, "9", json.RawMessage(`{"taskId":"9"}`))
	done := tt.Expect(a)
	tt.Hold(a, "9", json.RawMessage(`{"taskId":"9","status":"completed"}`))
	tt.Hold(a, "10", json.RawMessage(`{"taskId":"10"}`))
	_, early := tt.Add("s", "9", a, 0)
	done()
	if len(early) != 1 || !strings.Contains(string(early[0]), "completed") {
		t.Errorf("statuses held for task 9: %s", early)
	}
	if len(tt.held) != 0 {
		t.Errorf("statuses held after the request: %v", tt.held)
	}

	// The cap per session.
	for i := range maxTasksPerSession + 1 {
		tt.Add("s", "cap-"+strconv.Itoa(i), b, 0)
	}
	if _, ok := tt.ByAgentID(b, "cap-0"); ok || len(tt.bySession[b]) != maxTasksPerSession {
		t.Errorf("past the cap: %d tasks of b, cap-0 kept %v", len(tt.bySession[b]), ok)
	}
	// Ended sessions go at the next sweep.
	tt.live = liveOf(b)
	c.advance(taskSweepEvery)
	tt.Add("s", "late", b, 0)
	if _, ok := tt.ByAgentID(a, "9"); ok {
		t.Error("a task of an ended session stays after a sweep")
	}
}

// BenchmarkTaskTableAtCap: a server task made by a session at the cap,
// with 16 other sessions at the cap too (the oldest of its own goes).
func BenchmarkTaskTableAtCap(b *testing.B) {
	tt := NewServerTasks(nil)
	var sessions []*mcp.ServerSession
	for range 17 {
		ss := &mcp.ServerSession{}
		sessions = append(sessions, ss)
		for i := range maxTasksPerSession {
			tt.Export("s", fmt.Sprintf("%p-%d", ss, i), ss, 0)
		}
	}
	tt.live = liveOf(sessions...)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		tt.Export("s", "n-"+strconv.Itoa(i), sessions[0], time.Minute)
	}
}

// TestAgentTaskEdges: the edges of AgentTasks the bounds test does not
// reach: nested requests, the cap on held statuses, a task without ttl, an
// entry dropped from both maps, and the order of SessionsOf.
func TestAgentTaskEdges(t *testing.T) {
	c := newClock()
	a, b := &mcp.ServerSession{}, &mcp.ServerSession{}
	tt := NewAgentTasks(liveOf(a, b))
	tt.now = c.now

	// Two requests in flight, one answered: statuses are still held.
	done1, done2 := tt.Expect(a), tt.Expect(a)
	done1()
	tt.Hold(a, "t", json.RawMessage(`{"taskId":"t","n":0}`))
	// At most maxHeldStatuses are held; the rest go.
	for i := 1; i <= maxHeldStatuses; i++ {
		tt.Hold(a, "t", json.RawMessage(fmt.Sprintf(`{"taskId":"t","n":%d}`, i)))
	}
	_, early := tt.Add("s", "t", a, 0)
	done2()
	if len(early) != maxHeldStatuses || !strings.Contains(string(early[0]), `"n":0`) {
		t.Errorf("held with one of two requests answered, %d sent: %d handed back (%s), want the first %d",
			maxHeldStatuses+1, len(early), early, maxHeldStatuses)
	}

	// A task without ttl lives on.
	c.advance(24 * time.Hour)
	if _, ok := tt.ByAgentID(a, "t"); !ok {
		t.Error("a task without ttl is not found")
	}

	// SessionsOf orders by each session's first task, not its latest.
	tt.Add("s", "b1", b, 0)
	tt.Add("s", "a2", a, 0)
	if got := tt.SessionsOf("s"); len(got) != 2 || got[0] != a || got[1] != b {
		t.Errorf("SessionsOf(s) = %v, want a (first task) then b", got)
	}

	// A task dropped past the cap is gone from both maps.
	for i := range maxTasksPerSession {
		tt.Add("s", "cap-"+strconv.Itoa(i), b, 0)
	}
	if _, ok := tt.ByServerID("s", "b1"); ok {
		t.Error("a task dropped past the cap still maps from the server's id")
	}
	if _, ok := tt.ByAgentID(b, "b1"); ok {
		t.Error("a task dropped past the cap still maps from the agent's id")
	}
}

// TestServerTaskEdges: a server's statuses held while its task-augmented
// call is in flight come back with the task they name; a task exported
// again for its session keeps its id; a task dropped past the cap no
// longer maps back.
func TestServerTaskEdges(t *testing.T) {
	c := newClock()
	a := &mcp.ServerSession{}
	tt := NewServerTasks(liveOf(a))
	tt.now = c.now

	if tt.Hold("s", "o", json.RawMessage(`{"taskId":"o"}`)) {
		t.Error("a status was held with no call in flight")
	}
	done := tt.Expect("s")
	if !tt.Hold("s", "o", json.RawMessage(`{"taskId":"o","status":"working"}`)) {
		t.Error("a status was not held while a call is in flight")
	}
	id, early := tt.Export("s", "o", a, 0)
	done()
	if len(early) != 1 || !strings.Contains(string(early[0]), "working") {
		t.Errorf("statuses held for o: %s", early)
	}
	// Two calls in flight, one answered: statuses are still held, at
	// most maxHeldStatuses of them; once both are answered, those not
	// taken are dropped and no more are held.
	done1, done2 := tt.Expect("s"), tt.Expect("s")
	done1()
	for i := range maxHeldStatuses + 1 {
		if held := tt.Hold("s", "p", json.RawMessage(`{"taskId":"p"}`)); held != (i < maxHeldStatuses) {
			t.Errorf("status %d of one call in flight: held %v", i+1, held)
		}
	}
	done2()
	if tt.Hold("s", "p", json.RawMessage(`{"taskId":"p"}`)) {
		t.Error("a status was held after the calls ended")
	}
	if _, early := tt.Export("s", "p", a, 0); len(early) != 0 {
		t.Errorf("statuses held during ended calls came back with a later task: %d", len(early))
	}
	if again, _ := tt.Export("s", "o", a, 0); again != id {
		t.Errorf("the same task exported again: %s, then %s", id, again)
	}
	for i := range maxTasksPerSession {
		tt.Export("s", "cap-"+strconv.Itoa(i), a, 0)
	}
	if _, ok := tt.Exported("s", "o"); ok {
		t.Error("a task dropped past the cap still maps back")
	}
	if _, ok := tt.Lookup(id); ok {
		t.Error("a task dropped past the cap is still found")
	}
}
