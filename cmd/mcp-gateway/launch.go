package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/auth"
	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/logfile"
	"github.com/mcp-gateway/mcp-gateway/internal/supervisor"
)

// bootstrap is what the launcher hands the background gateway over a pipe:
// the config and the token never appear in its argv or environment, where
// every process in the sandbox could read them.
type bootstrap struct {
	Config json.RawMessage `json:"config"`
	Token  string          `json:"token"`
}

// readyMsg is the background gateway's one-line answer on the ready pipe.
// Before it, any number of progress lines may come: one server's step, for
// a launch on a terminal.
type readyMsg struct {
	OK       bool              `json:"ok"`
	Error    string            `json:"error,omitempty"`
	Summary  gateway.Summary   `json:"summary"`
	Progress *gateway.Progress `json:"progress,omitempty"`
}

// Extra files of the background gateway: fd 3 is the ready pipe, fd 4 the
// locked pid file.
const (
	readyFD = 3
	lockFD  = 4
)

// runLaunch is what the SDKs run: validate, persist the token, start the
// gateway in the background in its own session, and exit 0 once it serves.
// On failure nothing is left behind: no process, no token file.
func runLaunch(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	set, _, err := parseFlags(command{
		synopsis: "mcp-gateway --config '<json>' | --config-file PATH [flags]   (start in the background; exit 0 once ready)",
	}, args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	raw, err := set.rawConfig()
	if err != nil {
		return err
	}
	if raw == nil {
		return &usageError{"--config or --config-file is required"}
	}
	// Validate first: a bad config starts nothing.
	if _, err := set.resolve(raw, stderr); err != nil {
		return err
	}
	lock, err := lockPIDFile(set.PIDFile)
	if err != nil {
		return err
	}
	// A failed launch leaves no file behind; a gateway that serves keeps
	// the pid file (its own copy of the lock) and removes it when it stops.
	defer func() {
		if err != nil {
			os.Remove(set.TokenFile)
			releasePIDFile(lock, set.PIDFile)
			return
		}
		lock.Close()
	}()
	token, _, err := auth.Resolve(os.Getenv(auth.EnvVar))
	if err != nil {
		return err
	}
	var progress func(gateway.Progress)
	if isTerminal(stderr) {
		p := newProgressPrinter(stderr, progressDelay)
		defer p.stop()
		progress = p.add
	}
	err = launch(ctx, set, raw, token, lock, stdout, progress)
	return err
}

// progress, if not nil, is told of each server's steps as the gateway
// reports them.
func launch(ctx context.Context, set *settings, raw []byte, token string, lock *os.File, stdout io.Writer, progress func(gateway.Progress)) error {
	// The token's directory first, with its own mode, in case it is the
	// log's too (the token file itself is written below).
	if err := os.MkdirAll(dirOf(set.TokenFile), 0o700); err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	logf, err := logfile.Open(set.LogFile)
	if err != nil {
		return err
	}
	defer logf.Close()
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own executable: %w", err)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("ready pipe: %w", err)
	}
	defer readyR.Close()
	bootR, bootW, err := os.Pipe()
	if err != nil {
		readyW.Close()
		return fmt.Errorf("bootstrap pipe: %w", err)
	}
	daemonArgs := []string{"serve", "--daemon"}
	if progress != nil {
		daemonArgs = append(daemonArgs, "--progress")
	}
	cmd := exec.Command(exe, append(daemonArgs,
		"--listen", set.Listen,
		"--token-file", set.TokenFile,
		"--log-file", set.LogFile,
		"--catalog", set.CatalogFile,
		"--servers-dir", set.ServersDir,
		"--pid-file", set.PIDFile,
		"--startup-timeout", set.StartupTimeout.String(),
		"--shutdown-grace", set.ShutdownGrace.String(),
		"--log-level", set.LogLevel,
		"--max-sessions", strconv.Itoa(set.MaxSessions),
		"--max-backoff", set.MaxBackoff.String(),
		"--probe-interval", set.ProbeInterval.String(),
		"--call-timeout", set.CallTimeout.String(),
		"--procs", strconv.Itoa(set.Procs),
		"--interceptors", set.Interceptors,
		"--allowed-origins", set.AllowedOrigins,
		"--tools", set.Tools,
		"--metrics="+strconv.FormatBool(set.Metrics),
		"--metrics-listen", set.MetricsListen,
	)...)
	cmd.Args = append(cmd.Args, limitArgs(set.Limits)...)
	cmd.Env = supervisor.EnvWithout(os.Environ(), auth.EnvVar)
	cmd.Stdin = bootR
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{readyW, lock} // fds 3 and 4
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	startErr := cmd.Start()
	bootR.Close()
	readyW.Close()
	if startErr != nil {
		bootW.Close()
		return fmt.Errorf("start gateway: %w", startErr)
	}
	pid := cmd.Process.Pid
	go func() {
		_ = json.NewEncoder(bootW).Encode(bootstrap{Config: raw, Token: token})
		bootW.Close()
	}()
	// The token file is written while the gateway starts (its fsync was a
	// few ms of every launch), and always before the launch reports.
	tokenErr, tokenWritten := make(chan error, 1), make(chan struct{})
	go func() {
		tokenErr <- auth.WriteFile(set.TokenFile, token)
		close(tokenWritten)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	msgc := make(chan readyMsg, 1)
	go func() {
		br := bufio.NewReader(readyR)
		for {
			var m readyMsg
			line, err := br.ReadBytes('\n')
			if err != nil || json.Unmarshal(line, &m) != nil {
				m = readyMsg{Error: ""}
			}
			if m.Progress != nil {
				if progress != nil {
					progress(*m.Progress)
				}
				continue
			}
			msgc <- m
			return
		}
	}()
	timeout := time.NewTimer(set.StartupTimeout + 3*time.Second)
	defer timeout.Stop()
	res := awaitStart(ctx, msgc, tokenErr, timeout.C, set.StartupTimeout)
	if res.ok {
		fmt.Fprintln(stdout, res.summary)
		return nil
	}
	fail := res.err
	if res.stop {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	// The caller removes the token file: not before it is written, unless
	// the write hangs past the grace period.
	select {
	case <-tokenWritten:
	case <-time.After(set.ShutdownGrace):
	}
	// The gateway stops itself after a failed start; give it time, then
	// make sure no process of its session survives.
	var exitErr error
	select {
	case exitErr = <-exited:
	case <-time.After(set.ShutdownGrace + 3*time.Second):
	}
	killSession(pid)
	if fail == nil {
		fail = fmt.Errorf("gateway exited during startup (%v); log %s says: %s", exitErr, set.LogFile, logfile.Tail(set.LogFile, 3))
	}
	return fail
}

// startResult is how a launch's wait for the gateway ended.
type startResult struct {
	ok      bool            // ready, with the token file written: print summary, exit 0
	summary gateway.Summary // what the gateway reports ready with
	err     error           // why not ok; nil when the gateway ended without saying
	stop    bool            // the gateway may be running and must be told to stop
}

// awaitStart waits for both the gateway's report (msgc) and the token file
// write (tokenErr), in either order, and fails as soon as either fails, the
// start takes longer than timeout, or ctx ends (SIGINT, SIGTERM).
func awaitStart(ctx context.Context, msgc <-chan readyMsg, tokenErr <-chan error, timeout <-chan time.Time, startup time.Duration) startResult {
	var ready *readyMsg
	written := false
	for {
		select {
		case err := <-tokenErr:
			tokenErr = nil // a nil channel: not selected again
			if err != nil {
				return startResult{err: err, stop: true}
			}
			written = true
		case m := <-msgc:
			msgc = nil
			if !m.OK {
				var err error
				if m.Error != "" {
					err = errors.New(m.Error)
				}
				return startResult{err: err} // the gateway stops itself
			}
			ready = &m
		case <-timeout:
			return startResult{err: fmt.Errorf("startup timed out after %s", startup)}
		case <-ctx.Done():
			return startResult{err: errors.New("interrupted while starting"), stop: true}
		}
		if ready != nil && written {
			return startResult{ok: true, summary: ready.Summary}
		}
	}
}

func dirOf(path string) string {
	if i := strings.LastIndexByte(path, '/'); i > 0 {
		return path[:i]
	}
	return "."
}
