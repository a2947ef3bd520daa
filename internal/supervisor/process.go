package supervisor

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// process is one running instance of a server: the child, its pipes, and
// what it said on stderr. A server has one process at a time; each restart
// makes a new one.
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File // our end
	stdout *os.File // our end
	done   chan struct{}
	// exitErr is cmd.Wait's result, valid once done is closed.
	exitErr error
	tail    *lineRing
}

// startProcess starts argv in dir with env, in a new process group so that
// stopping it reaches the children it spawns (npx -> node, sh -> server).
// Pdeathsig makes the kernel kill it if the gateway dies without cleaning
// up; groups, if not nil, is told the group, so that the children the
// server spawned (which Pdeathsig does not reach) end too.
//
// Every stderr line passes through redact before it is kept or handed to
// stderrLine, so no copy of a secret is retained.
func startProcess(argv []string, dir string, env []string, groups Groups, redact func(string) string, stderrLine func(string)) (*process, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	startErr := cmd.Start()
	// The child has its copies; ours would keep the pipes open forever.
	inR.Close()
	outW.Close()
	errW.Close()
	if startErr != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, startErr
	}
	p := &process{cmd: cmd, stdin: inW, stdout: outR, done: make(chan struct{}), tail: newLineRing(20, 512)}
	tracked := groups != nil && groups.Track(cmd.Process.Pid) == nil
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		defer errR.Close()
		sc := bufio.NewScanner(errR)
		sc.Buffer(make([]byte, 0, 4096), 1<<20)
		for sc.Scan() {
			line := redact(sc.Text())
			p.tail.add(line)
			if stderrLine != nil {
				stderrLine(line)
			}
		}
	}()
	go func() {
		awaitExit(cmd.Process.Pid)
		p.exitErr = cmd.Wait()
		// Children of the server that are still running hold our pipes open
		// and would outlive it: end the whole group.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if tracked {
			groups.Untrack(cmd.Process.Pid)
		}
		// Unblock a Read waiting on stdout even if a grandchild that escaped
		// the group still holds its write end.
		p.stdout.Close()
		select {
		case <-stderrDone:
		case <-time.After(time.Second):
			errR.Close()
		}
		close(p.done)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// awaitExit returns once the child pid has exited (is waitable), parked on
// the runtime's poller on a pidfd rather than holding an OS thread: cmd.Wait
// alone blocks a thread in waitid for the child's whole life, so every
// running server cost the gateway a thread, and at start a thread creation
// and a hand-off of the scheduler's P (a launch with 64 servers made 72
// threads; now about 9). Where a pidfd cannot be had or polled it returns
// at once, and the caller's cmd.Wait blocks as before. pid must be a child
// not yet waited for, so that it cannot have been reused.
func awaitExit(pid int) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd") // non-blocking, so on the poller
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		// A pidfd polls readable once its process has exited. WNOWAIT:
		// only look, cmd.Wait reaps. Any error ends the wait here too.
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		return err != nil || info.Signo != 0
	})
}

// exited reports whether the process has exited, without blocking.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop ends the process the way MCP asks stdio clients to: close its stdin,
// wait, SIGTERM the group, wait, SIGKILL the group. It returns once the
// process has been reaped.
func (p *process) stop(closeWait, termWait time.Duration) {
	p.stdin.Close()
	select {
	case <-p.done:
		return
	case <-time.After(closeWait):
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(termWait):
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
	<-p.done
}

// describeExit renders how a process ended, e.g. "exit status 3" or
// "killed by signal 9".
func describeExit(err error) string {
	if err == nil {
		return "exit status 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fmt.Sprintf("killed by signal %d (%s)", int(ws.Signal()), ws.Signal())
		}
		return fmt.Sprintf("exit status %d", ee.ExitCode())
	}
	return err.Error()
}

// lineRing keeps the last lines a process wrote to stderr, for error
// messages: the reason a server failed is almost always in them.
type lineRing struct {
	mu    sync.Mutex
	lines []string
	next  int
	full  bool
	width int
}

func newLineRing(n, width int) *lineRing {
	return &lineRing{lines: make([]string, n), width: width}
}

func (r *lineRing) add(line string) {
	if len(line) > r.width {
		line = line[:r.width] + "…"
	}
	r.mu.Lock()
	r.lines[r.next] = line
	r.next = (r.next + 1) % len(r.lines)
	if r.next == 0 {
		r.full = true
	}
	r.mu.Unlock()
}

// last returns up to n of the most recent lines, oldest first.
func (r *lineRing) last(n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var all []string
	if r.full {
		all = append(all, r.lines[r.next:]...)
	}
	all = append(all, r.lines[:r.next]...)
	if len(all) > n {
		all = all[len(all)-n:]
	}
	return all
}

// lineWriter adapts a per-line callback to an io.Writer, for the output of
// install commands.
type lineWriter struct {
	mu   sync.Mutex
	buf  []byte
	line func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := strings.IndexByte(string(w.buf), '\n')
		if i < 0 {
			break
		}
		w.line(strings.TrimRight(string(w.buf[:i]), "\r"))
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

// Flush emits a final unterminated line.
func (w *lineWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.line(string(w.buf))
		w.buf = nil
	}
}

var _ io.Writer = (*lineWriter)(nil)
