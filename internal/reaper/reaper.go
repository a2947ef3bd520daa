// Package reaper ends the process groups of a gateway that died without
// stopping its servers.
//
// A server runs in a process group of its own, and the gateway ends the
// whole group when it stops the server. Pdeathsig makes the kernel kill the
// server's own process if the gateway is killed (SIGKILL, or a client that
// gives a stdio gateway one second after SIGTERM), but not the children it
// spawned: npx's node, sh's server, a server's workers. Those were left
// running with parent PID 1. A Reaper keeps a small watchdog process (a
// POSIX shell reading a pipe) that is told each group as it starts and ends;
// when the pipe reaches EOF, because the gateway closed it or died, the
// watchdog kills the groups it still knows and exits.
package reaper

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
)

// watchdog is the script the watchdog runs: "+PGID" lines add a group,
// "-PGID" lines drop one; at EOF each group left gets SIGKILL. The groups are
// a space-separated list with a space at both ends, so that " PGID " finds
// exactly one entry.
const watchdog = `groups=' '
while read -r line; do
	g=${line#?}
	case $g in ''|*[!0-9]*) continue ;; esac
	case $line in
	+*) groups="$groups$g " ;;
	-*) case $groups in *" $g "*) groups="${groups%% $g *} ${groups#* $g }" ;; esac ;;
	esac
done
for g in $groups; do kill -s KILL -- "-$g" 2>/dev/null; done
exit 0`

// A Reaper tracks process groups for its watchdog. The zero value is not
// usable; use New. Its methods are safe for concurrent use.
type Reaper struct {
	shell string // runs the watchdog script

	mu      sync.Mutex
	cmd     *exec.Cmd // the watchdog, once started
	w       *os.File  // its stdin; nil after Close
	failed  error     // why the watchdog could not start
	closed  bool
	tracked map[int]bool
}

// New returns a Reaper whose watchdog starts with the first Track, so a
// gateway without stdio servers runs none.
func New() *Reaper { return &Reaper{shell: "/bin/sh", tracked: map[int]bool{}} }

// Track tells the watchdog about the process group pgid. An error means the
// group is not guarded (the watchdog could not start or has gone); the
// group still runs and the gateway still stops it itself.
func (r *Reaper) Track(pgid int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return fmt.Errorf("track process group %d: reaper closed", pgid)
	}
	if err := r.startLocked(); err != nil {
		return fmt.Errorf("track process group %d: %w", pgid, err)
	}
	if _, err := io.WriteString(r.w, "+"+strconv.Itoa(pgid)+"\n"); err != nil {
		return fmt.Errorf("track process group %d: %w", pgid, err)
	}
	r.tracked[pgid] = true
	return nil
}

// Untrack tells the watchdog that the group pgid has ended, so that its
// number, which the kernel may give to a new group, is never killed.
func (r *Reaper) Untrack(pgid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.tracked[pgid] || r.w == nil {
		return
	}
	delete(r.tracked, pgid)
	_, _ = io.WriteString(r.w, "-"+strconv.Itoa(pgid)+"\n")
}

// Close ends the watchdog, which first kills the groups still tracked
// (none, when the gateway stopped its servers), and waits for it to exit.
// Close is idempotent.
func (r *Reaper) Close() error {
	r.mu.Lock()
	r.closed = true
	w, cmd := r.w, r.cmd
	r.w = nil
	r.mu.Unlock()
	if w == nil {
		return nil
	}
	w.Close()
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("reaper watchdog: %w", err)
	}
	return nil
}

func (r *Reaper) startLocked() error {
	if r.w != nil {
		return nil
	}
	if r.failed != nil {
		return r.failed
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		r.failed = fmt.Errorf("watchdog pipe: %w", err)
		return r.failed
	}
	cmd := exec.Command(r.shell, "-c", watchdog)
	cmd.Stdin = pr
	// Its own group, and no Pdeathsig: it has to outlive the gateway, and
	// a signal to the gateway's group must not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	pr.Close()
	if err != nil {
		pw.Close()
		r.failed = fmt.Errorf("start watchdog: %w", err)
		return r.failed
	}
	r.cmd, r.w = cmd, pw
	return nil
}
