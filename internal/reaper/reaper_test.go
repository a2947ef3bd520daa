package reaper

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// startGroup starts a shell in a new process group that runs a child of its
// own (the shape of npx -> node) and returns it.
func startGroup(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "sleep 300 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return cmd
}

// groupGone waits until no process is left in group pgid, and reports
// whether that happened within a bound meant for a loaded machine.
func groupGone(pgid int) bool {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// TestCloseKillsTrackedGroups: when the pipe closes with groups still
// tracked (what happens when the gateway dies), the watchdog kills each
// whole group, the grandchildren included.
func TestCloseKillsTrackedGroups(t *testing.T) {
	r := New()
	a, b := startGroup(t), startGroup(t)
	for _, c := range []*exec.Cmd{a, b} {
		if err := r.Track(c.Process.Pid); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*exec.Cmd{a, b} {
		err := c.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("group %d leader: %v; want killed by SIGKILL", c.Process.Pid, err)
		}
		if !groupGone(c.Process.Pid) {
			t.Errorf("group %d still has processes 30s after the watchdog ended", c.Process.Pid)
		}
	}
}

// TestUntrackedGroupSurvives: a group that ended (and was untracked) is
// never killed, even if its number is still in use; Close is idempotent.
func TestUntrackedGroupSurvives(t *testing.T) {
	r := New()
	keep, drop := startGroup(t), startGroup(t)
	for _, c := range []*exec.Cmd{keep, drop} {
		if err := r.Track(c.Process.Pid); err != nil {
			t.Fatal(err)
		}
	}
	r.Untrack(keep.Process.Pid)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_ = drop.Wait() // its leader is a zombie until then, and counts as a member
	if !groupGone(drop.Process.Pid) {
		t.Errorf("tracked group %d still has processes", drop.Process.Pid)
	}
	if err := syscall.Kill(keep.Process.Pid, 0); err != nil {
		t.Errorf("untracked group's leader: %v; want it still running", err)
	}
	if err := r.Track(keep.Process.Pid); err == nil {
		t.Error("Track after Close succeeded")
	}
}
