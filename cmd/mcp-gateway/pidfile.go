package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// errRunning means another gateway holds the pid file lock.
var errRunning = errors.New("already running")

// lockPIDFile opens path and takes an exclusive flock on it. The lock, not
// the file's content, says whether a gateway runs: it is released by the
// kernel when the holder dies, so a stale pid file never blocks a launch.
// The returned file keeps the lock; pass it to the child that serves. The
// holder that is done removes the file with releasePIDFile, so a lock is
// only good while the path still names the locked file: one taken on a
// file removed meanwhile is dropped and taken again.
func lockPIDFile(path string) (*os.File, error) {
	for {
		f, err := lockPIDFileOnce(path)
		if err != nil || f == nil {
			return f, err
		}
		if ours(f, path) {
			return f, nil
		}
		f.Close()
	}
}

// ours reports whether path still names the open file f.
func ours(f *os.File, path string) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	pi, err := os.Stat(path)
	return err == nil && os.SameFile(fi, pi)
}

// releasePIDFile removes the pid file f locked at path, if path still names
// it, and closes f (releasing the lock, unless a child holds it too).
func releasePIDFile(f *os.File, path string) {
	if ours(f, path) {
		os.Remove(path)
	}
	f.Close()
}

func lockPIDFileOnce(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("pid file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pid file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			pid := strings.TrimSpace(string(b))
			if pid == "" {
				pid = "unknown"
			}
			return nil, fmt.Errorf("a gateway is %w (pid %s, pid file %s); stop it first with 'kill %s'", errRunning, pid, path, pid)
		}
		return nil, fmt.Errorf("lock pid file %s: %w", path, err)
	}
	return f, nil
}

// writePID records the current process in a locked pid file.
func writePID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("write pid file: %w", err)
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		return fmt.Errorf("write pid file: %w", err)
	}
	return nil
}

// killSession SIGKILLs every process in session sid. The launcher uses it as
// a last resort when the gateway it started does not stop by itself: the
// servers run in their own process groups but stay in the gateway's session.
func killSession(sid int) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Fields after the parenthesized command: state ppid pgrp session.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 4 {
			continue
		}
		if sess, _ := strconv.Atoi(f[3]); sess == sid {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
