package sandbox

import (
	"errors"
	"os/exec"
	"sync"
	"syscall"
)

// errShuttingDown refuses new commands once the server has begun killing
// what it started, so that no process group escapes the final kill.
var errShuttingDown = errors.New("sandbox server is shutting down")

// procGroups owns every process group run_command starts. Each command leads
// its own group so that a timeout or shutdown reaches the children it forked,
// not just the shell: processes left behind by stdio servers are the leak
// other gateways are known for (thousands of processes piling up over days).
//
// A group is remembered until its leader is reaped and the group is empty;
// groups that still have members then (a foreground `server &`, a background
// daemon) are killed by killAll. All methods are safe for concurrent use.
type procGroups struct {
	mu     sync.Mutex
	closed bool
	pgids  map[int]struct{}
	leader sync.WaitGroup // one count per started leader not yet reaped
}

func newProcGroups() *procGroups {
	return &procGroups{pgids: make(map[int]struct{})}
}

// start starts cmd as the leader of a new process group. Every successful
// start must be followed by exactly one wait.
func (p *procGroups) start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errShuttingDown
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	p.pgids[cmd.Process.Pid] = struct{}{}
	p.leader.Add(1)
	return nil
}

// wait reaps the leader of a group started by start and forgets the group if
// nothing else is left in it, so that killAll does not signal a process
// group ID the kernel may since have handed to someone else.
func (p *procGroups) wait(cmd *exec.Cmd) error {
	err := cmd.Wait()
	pgid := cmd.Process.Pid
	p.mu.Lock()
	if syscall.Kill(-pgid, 0) != nil {
		delete(p.pgids, pgid)
	}
	p.mu.Unlock()
	p.leader.Done()
	return err
}

// killAll SIGKILLs every remembered group, refuses further starts, and
// returns once every leader has been reaped. It is idempotent.
func (p *procGroups) killAll() {
	p.mu.Lock()
	p.closed = true
	for pgid := range p.pgids {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	p.mu.Unlock()
	p.leader.Wait()
}
