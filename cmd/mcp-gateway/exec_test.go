package main

import (
	"bufio"
	"os/exec"
	"testing"
)

func newCmd(name string, args ...string) *exec.Cmd { return exec.Command(name, args...) }

// startLines starts cmd and streams its stdout lines. The process is killed
// and reaped at cleanup if the test has not waited for it.
func startLines(t *testing.T, cmd *exec.Cmd) <-chan string {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return lines
}
