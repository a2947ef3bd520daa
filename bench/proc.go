package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is USER_HZ, the unit of utime and stime in /proc/<pid>/stat. The
// kernel fixes it at 100 for user space on every architecture Go runs on
// Linux, whatever CONFIG_HZ is.
const clockTick = 10 * time.Millisecond

// statFields returns the fields of /proc/<pid>/stat after the command name
// (which may hold spaces), so field 3 of proc(5), the state, is index 0.
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, fmt.Errorf("parse /proc/%d/stat: no ')'", pid)
	}
	return strings.Fields(s[i+1:]), nil
}

// cpuTime returns the CPU time pid has used so far, user plus system, over
// all its threads (proc(5) fields 14 and 15). It excludes its children.
func cpuTime(pid int) (time.Duration, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, fmt.Errorf("cpu time of %d: %w", pid, err)
	}
	if len(f) < 13 {
		return 0, fmt.Errorf("cpu time of %d: short stat", pid)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cpu time of %d: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

// ownCPUTime returns the CPU time of this process (the benchmark's clients).
func ownCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rssBytes returns pid's resident set size (VmRSS in /proc/<pid>/status).
func rssBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("rss of %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("rss of %d: %w", pid, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("rss of %d: no VmRSS", pid)
}

// alive reports whether pid exists and has not exited (a zombie has).
func alive(pid int) bool {
	f, err := statFields(pid)
	return err == nil && len(f) > 0 && f[0] != "Z"
}

// sessionMembers lists the live processes whose session id is sid. The
// launched gateway leads its own session, and its servers stay in it.
func sessionMembers(sid int) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := statFields(pid)
		if err != nil || len(f) < 4 || f[0] == "Z" {
			continue
		}
		if f[3] == strconv.Itoa(sid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// childrenOf lists the live direct children of pid (a scan of /proc: not
// every kernel has /proc/<pid>/task/<tid>/children).
func childrenOf(pid int) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := statFields(child)
		if err != nil || len(f) < 2 || f[0] == "Z" {
			continue
		}
		if f[1] == strconv.Itoa(pid) {
			pids = append(pids, child)
		}
	}
	return pids
}
