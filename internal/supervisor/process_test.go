package supervisor

import (
	"bytes"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// startTestProcess starts a shell line as a server process and makes sure
// it is stopped and reaped at cleanup.
func startTestProcess(t *testing.T, line string) *process {
	t.Helper()
	p, err := startProcess([]string{"/bin/sh", "-c", line}, "", os.Environ(), nil, func(s string) string { return s }, nil)
	if err != nil {
		t.Fatalf("start %q: %v", line, err)
	}
	t.Cleanup(func() { p.stop(10*time.Millisecond, time.Second) })
	return p
}

func waitDone(t *testing.T, p *process) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("process %d: exit not noticed", p.pid())
	}
}

// The exit is noticed and its status kept, however the process ends.
func TestProcessExitReported(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"exit 3", "exit status 3"},
		{"exit 0", "exit status 0"},
		{"kill -TERM $$", "killed by signal 15 (terminated)"},
	} {
		p := startTestProcess(t, tc.line)
		waitDone(t, p)
		if got := describeExit(p.exitErr); got != tc.want {
			t.Errorf("%q: exit %q, want %q", tc.line, got, tc.want)
		}
	}
	// Stopped from our side: SIGTERM to the group after stdin closes.
	p := startTestProcess(t, "exec sleep 60")
	p.stop(10*time.Millisecond, 5*time.Second)
	if !p.exited() {
		t.Fatal("stop returned before the process was reaped")
	}
	if got, want := describeExit(p.exitErr), "killed by signal 15 (terminated)"; got != want {
		t.Errorf("stopped process: exit %q, want %q", got, want)
	}
}

// A running server costs no OS thread of its own while the gateway waits
// for its exit: the wait is parked on the runtime's poller. (cmd.Wait alone
// blocks a thread in waitid for the process's whole life.)
func TestRunningProcessesHoldNoThread(t *testing.T) {
	// Without a pidfd (ENOSYS on an old kernel, EPERM under a seccomp
	// filter, EINVAL where PIDFD_NONBLOCK is unknown) awaitExit falls back
	// to cmd.Wait's thread, as designed: nothing to check then.
	fd, err := unix.PidfdOpen(os.Getpid(), unix.PIDFD_NONBLOCK)
	if err != nil {
		t.Skipf("no pidfd here (%v): exit waits hold a thread, by design", err)
	}
	unix.Close(fd)
	const n = 32
	before := threads(t)
	for range n {
		startTestProcess(t, "exec sleep 60")
	}
	// Wait until every waiter has parked; one still in a syscall holds a
	// thread (that is what cmd.Wait alone does, for good).
	deadline := time.Now().Add(10 * time.Second)
	for {
		parked, inSyscall := exitWaiters(t)
		if parked == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: %d of %d exit waiters parked on the poller, %d blocked in a syscall", parked, n, inSyscall)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if grew := threads(t) - before; grew >= n/2 {
		t.Errorf("%d running processes added %d OS threads", n, grew)
	}
}

// exitWaiters counts the goroutines waiting for a process's exit by
// state: parked on the poller ("IO wait") or blocked in a system call.
func exitWaiters(t *testing.T) (parked, inSyscall int) {
	t.Helper()
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 2); err != nil {
		t.Fatal(err)
	}
	for _, g := range strings.Split(buf.String(), "\n\n") {
		if !strings.Contains(g, "supervisor.awaitExit") && !strings.Contains(g, "exec.(*Cmd).Wait") {
			continue
		}
		head, _, _ := strings.Cut(g, "\n")
		switch {
		case strings.Contains(head, "[IO wait"):
			parked++
		case strings.Contains(head, "[syscall"):
			inSyscall++
		}
	}
	return parked, inSyscall
}

// threads is this process's OS thread count.
func threads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads in /proc/self/status")
	return 0
}
