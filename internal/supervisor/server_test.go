package supervisor

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

func TestMain(m *testing.M) {
	fixture.RunIfRequested()
	os.Exit(m.Run())
}

// logBuffer collects log lines for assertions.
type logBuffer = fixture.Log

// runServer starts a supervised fixture and stops it at cleanup, checking
// that its process is gone.
func runServer(t *testing.T, fx fixture.Options, opts Options) (*Server, *logBuffer) {
	t.Helper()
	argv, env := fixture.Command(fx)
	return runSpec(t, catalog.ServerSpec{Name: "fx", Kind: catalog.KindLocal, Command: argv, Env: envMap(env)}, opts)
}

// runSpec starts a supervised server for spec, like runServer.
func runSpec(t *testing.T, spec catalog.ServerSpec, opts Options) (*Server, *logBuffer) {
	t.Helper()
	return runSpecAfter(t, spec, opts, nil)
}

// runSpecAfter is runSpec with before, if set, run on the server before it
// runs.
func runSpecAfter(t *testing.T, spec catalog.ServerSpec, opts Options, before func(*Server)) (*Server, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	opts.Logger = zerolog.New(logs)
	if opts.MinBackoff == 0 {
		opts.MinBackoff = 10 * time.Millisecond
	}
	s := New(spec, opts)
	if before != nil {
		before(s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		s.Run(ctx)
		close(done)
	}()
	t.Cleanup(func() {
		pid := s.Status().PID
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("Run did not return after cancel")
		}
		if pid != 0 && syscall.Kill(pid, 0) == nil {
			t.Errorf("server pid %d alive after Run returned", pid)
		}
	})
	return s, logs
}

func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

func call(ctx context.Context, s *Server, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	var res *mcp.CallToolResult
	err := s.Do(ctx, func(cs *mcp.ClientSession) error {
		var err error
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		return err
	})
	return res, err
}

func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res == nil || len(res.Content) == 0 {
		t.Fatalf("empty result %+v", res)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

func TestNoiseOnStdoutKeepsSession(t *testing.T) {
	s, logs := runServer(t, fixture.Options{Banner: "Welcome to my server v1.0"}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := call(ctx, s, "noise", map[string]any{"text": "debug: stray print"}); err != nil {
		t.Fatal(err)
	}
	res, err := call(ctx, s, "echo", map[string]any{"text": "still here"})
	if err != nil || resultText(t, res) != "still here" {
		t.Fatalf("call after noise: %v %v", res, err)
	}
	if st := s.Status(); st.Restarts != 0 {
		t.Errorf("noise caused a restart: %+v", st)
	}
	for _, want := range []string{"Welcome to my server v1.0", "debug: stray print", "stdout-noise"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q", want)
		}
	}
}

// TestLargeResults: results up to the limit pass intact; a larger one fails
// its call clearly and the server stays usable. Over both call paths.
func TestLargeResults(t *testing.T) {
	t.Parallel() // it waits out timers; the rest of the package need not wait
	for name, callText := range callPaths {
		t.Run(name, func(t *testing.T) {
			s, _ := runServer(t, fixture.Options{}, Options{MaxMessageBytes: 12 << 20})
			// Generous: a race-built fixture encodes 10 and 13 MiB slowly, and
			// slower still on a loaded machine (32s seen).
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			text, err := callText(ctx, s, "big", map[string]any{"bytes": 10 << 20})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(text); n != 10<<20 {
				t.Fatalf("10 MiB result arrived with %d bytes", n)
			}
			_, err = callText(ctx, s, "big", map[string]any{"bytes": 13 << 20})
			if err == nil || !strings.Contains(err.Error(), "too large") {
				t.Fatalf("oversized result: err = %v", err)
			}
			text, err = callText(ctx, s, "echo", map[string]any{"text": "ok"})
			if err != nil || text != "ok" {
				t.Fatalf("call after oversized result: %q %v", text, err)
			}
			if st := s.Status(); st.Restarts != 0 {
				t.Errorf("oversized result caused a restart: %+v", st)
			}
		})
	}
}

// TestCrashMidCallThenRestart: a call in flight when the process is killed
// fails promptly, naming how the server ended; the next call reaches the
// restarted server. Over both call paths.
func TestCrashMidCallThenRestart(t *testing.T) {
	for name, callText := range callPaths {
		t.Run(name, func(t *testing.T) {
			s, logs := runServer(t, fixture.Options{}, Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := s.WaitStarted(ctx); err != nil {
				t.Fatal(err)
			}
			pid := s.Status().PID
			errc := make(chan error, 1)
			go func() {
				_, err := callText(ctx, s, "sleep", map[string]any{"ms": 10000})
				errc <- err
			}()
			// Kill it once the call is in the server's hands (the fixture
			// announces the sleep on stderr, which the supervisor logs).
			for !strings.Contains(logs.String(), "sleep started 10000ms") {
				select {
				case <-ctx.Done():
					t.Fatalf("the sleep never started:\n%s", logs)
				case <-time.After(5 * time.Millisecond):
				}
			}
			syscall.Kill(pid, syscall.SIGKILL)
			var err error
			select {
			case err = <-errc:
			case <-time.After(5 * time.Second):
				t.Fatal("in-flight call hung after the server was killed")
			}
			var ce *CallError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), "killed by signal 9") || !strings.Contains(err.Error(), `"fx"`) {
				t.Fatalf("in-flight call error = %v", err)
			}
			text, err := callText(ctx, s, "pid", nil)
			if err != nil {
				t.Fatalf("call after restart: %v", err)
			}
			if text == "" || s.Status().PID == pid {
				t.Errorf("server not restarted: %+v", s.Status())
			}
			if st := s.Status(); st.Restarts != 1 || st.State != StateReady {
				t.Errorf("status after restart: %+v", st)
			}
		})
	}
}

func TestCrashLoopFails(t *testing.T) {
	s, _ := runServer(t, fixture.Options{ExitAtStart: 4}, Options{RestartPolicy: RestartPolicy{FailAfter: 3, MaxBackoff: 50 * time.Millisecond}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.WaitStarted(ctx); err == nil || !strings.Contains(err.Error(), "exit status 4") {
		t.Fatalf("first start: %v", err)
	}
	for s.Status().State != StateFailed {
		select {
		case <-ctx.Done():
			t.Fatalf("never failed: %+v", s.Status())
		case <-time.After(10 * time.Millisecond):
		}
	}
	// At once, not after waiting for a restart: no retry of a failed
	// stdio server is due (RetryFailed is for remotes).
	_, err := call(ctx, s, "echo", map[string]any{"text": "x"})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), ": failed: ") || !strings.Contains(err.Error(), "exit status 4") || !strings.Contains(err.Error(), "failing at start as asked") {
		t.Fatalf("call to a failed server: %v", err)
	}
}

func TestEnvIsolation(t *testing.T) {
	t.Setenv("GATEWAY_ACCESS_TOKEN", "must-not-leak")
	s, _ := runServer(t, fixture.Options{}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := call(ctx, s, "env", map[string]any{"name": "GATEWAY_ACCESS_TOKEN"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError {
		t.Errorf("server sees the token: %s", resultText(t, res))
	}
	b, _ := os.ReadFile("/proc/" + itoa(s.Status().PID) + "/environ")
	if strings.Contains(string(b), "must-not-leak") {
		t.Error("token in the server's /proc environ")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestRedactedStderr(t *testing.T) {
	t.Setenv("API_KEY", "sk-live-123")
	s, logs := runServer(t, fixture.Options{PrintEnv: "API_KEY"}, Options{Redact: func(l string) string {
		return strings.ReplaceAll(l, "sk-live-123", "[REDACTED]")
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := call(ctx, s, "crash", map[string]any{"code": 1})
	if err == nil || strings.Contains(err.Error(), "sk-live-123") {
		t.Errorf("crash error leaks or is nil: %v", err)
	}
	if strings.Contains(logs.String(), "sk-live-123") || !strings.Contains(logs.String(), "API_KEY=[REDACTED]") {
		t.Errorf("log not redacted:\n%s", logs.String())
	}
}
