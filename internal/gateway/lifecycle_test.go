package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/supervisor"
)

// startedPIDs returns the pid of every server process the supervisors
// logged as started.
func startedPIDs(t *testing.T, log string) []int {
	t.Helper()
	var pids []int
	for line := range strings.Lines(log) {
		var e struct {
			Message string `json:"message"`
			PID     int    `json:"pid"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Message == "server process started" {
			pids = append(pids, e.PID)
		}
	}
	return pids
}

// assertReaped fails unless pid is no child of this process any more: it
// exited and was waited for. A child that is still running, or a zombie
// nobody waited for, is an error (WNOHANG: this never blocks; a zombie is
// reaped here, so a second test does not see it).
func assertReaped(t *testing.T, pid int) {
	t.Helper()
	var ws syscall.WaitStatus
	got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	switch {
	case errors.Is(err, syscall.ECHILD):
	case err != nil:
		t.Errorf("wait4(%d): %v", pid, err)
	case got == 0:
		t.Errorf("server process %d still runs", pid)
	default:
		t.Errorf("server process %d exited but was never reaped", pid)
	}
}

// assertClosed fails unless nothing accepts connections at addr.
func assertClosed(t *testing.T, addr net.Addr) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr.String(), 5*time.Second)
	if err == nil {
		c.Close()
		t.Errorf("%s still accepts connections", addr)
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial %s: %v, want connection refused", addr, err)
	}
}

// TestStartCallShutdown: Start returns with the server ready and /mcp
// serving real calls; Shutdown stops the server's process and reaps it,
// closes the listener, and Wait then reports a clean end.
func TestStartCallShutdown(t *testing.T) {
	logs := &fixture.Log{}
	cfg := testConfig(t)
	cfg.Listen, cfg.Token, cfg.Logger = "127.0.0.1:0", "lifecycle-token", zerolog.New(logs)
	g := New([]catalog.ServerSpec{fixtureSpec("fx", fixture.Options{Tools: []string{"echo", "pid"}})}, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := g.Start(ctx); err != nil {
		t.Fatalf("start: %v\nlog:\n%s", err, logs)
	}
	t.Cleanup(func() { g.Shutdown(context.Background()) })

	sum := g.Summary()
	if sum.Servers != 1 || sum.Tools != 2 || sum.Listen != g.Addr().String() {
		t.Errorf("summary %+v, want 1 server, 2 tools on %s", sum, g.Addr())
	}
	st := g.Servers()
	if len(st) != 1 || st[0].Name != "fx" || st[0].State != supervisor.StateReady || st[0].PID == 0 {
		t.Fatalf("servers %+v, want fx ready with a pid", st)
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "lifecycle-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   "http://" + g.Addr().String() + "/mcp",
		HTTPClient: &http.Client{Transport: fixture.Bearer(cfg.Token, http.DefaultTransport)},
	}, legacySession())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if got, err := fixture.CallText(ctx, cs, "echo", map[string]any{"text": "through the gateway"}); err != nil || got != "through the gateway" {
		t.Fatalf("echo: %q, %v", got, err)
	}
	got, err := fixture.CallText(ctx, cs, "pid", nil)
	if err != nil {
		t.Fatalf("pid: %v", err)
	}
	pid, err := strconv.Atoi(got)
	if err != nil || pid != st[0].PID {
		t.Fatalf("the server says pid %q, its status %d", got, st[0].PID)
	}
	cs.Close()

	g.Shutdown(ctx)
	if err := g.Wait(); err != nil {
		t.Errorf("wait after shutdown: %v", err)
	}
	assertReaped(t, pid)
	assertClosed(t, g.Addr())
	if !strings.Contains(logs.String(), `"message":"gateway stopped"`) {
		t.Errorf("no \"gateway stopped\" in the log:\n%s", logs)
	}
	g.Shutdown(ctx) // idempotent: returns at once
}

// TestStartFailsNamingServer: when one server cannot start, Start returns
// an error naming it (and not the one that started), and leaves nothing
// running: every server process it started is reaped, the listener is
// closed, and Wait returns at once.
func TestStartFailsNamingServer(t *testing.T) {
	logs := &fixture.Log{}
	cfg := testConfig(t)
	cfg.Listen, cfg.Token, cfg.Logger = "127.0.0.1:0", "lifecycle-token", zerolog.New(logs)
	g := New([]catalog.ServerSpec{
		fixtureSpec("fine", fixture.Options{Tools: []string{"echo"}}),
		fixtureSpec("broken", fixture.Options{ExitAtStart: 3}),
	}, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := g.Start(ctx)
	if err == nil {
		g.Shutdown(ctx)
		t.Fatal("start succeeded with a server that exits at start")
	}
	if !strings.Contains(err.Error(), `server "broken" failed to start`) || strings.Contains(err.Error(), `"fine"`) {
		t.Errorf("error %q, want it to name broken only", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- g.Wait() }()
	select {
	case err := <-waited:
		if err != nil {
			t.Errorf("wait after a failed start: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("wait blocks after a failed start")
	}
	pids := startedPIDs(t, logs.String())
	if len(pids) < 2 { // fine once, broken at least once
		t.Fatalf("started pids %v, want both servers' processes; log:\n%s", pids, logs)
	}
	for _, pid := range pids {
		assertReaped(t, pid)
	}
	for _, st := range g.Servers() {
		if st.PID != 0 {
			t.Errorf("%s still has pid %d after a failed start", st.Name, st.PID)
		}
	}
	assertClosed(t, g.Addr())
}

// TestStartTimeoutNamesPending: a server that is not ready within
// StartupTimeout fails the start with an error naming it and its state;
// the slow process is stopped and reaped. Cancelling Start's context
// interrupts a start the same way.
func TestStartTimeoutNamesPending(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration // StartupTimeout
		cancel  bool          // cancel Start's context once the server runs
		want    string
	}{
		{"timeout", 500 * time.Millisecond, false, "startup timed out after 500ms; not ready: slow (starting)"},
		{"interrupted", 30 * time.Second, true, "startup interrupted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &markerWriter{marker: `"message":"server process started"`, seen: make(chan struct{})}
			cfg := testConfig(t)
			all := &fixture.Log{}
			cfg.StartupTimeout, cfg.Logger = tc.timeout, zerolog.New(io.MultiWriter(logs, all))
			slow := fixtureSpec("slow", fixture.Options{Tools: []string{"echo"}, StartDelay: time.Minute})
			g := New([]catalog.ServerSpec{slow}, cfg)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				go func() {
					<-logs.seen
					cancel()
				}()
			}
			err := g.Start(ctx)
			if err == nil {
				g.Shutdown(ctx)
				t.Fatal("start succeeded with a server that starts in a minute")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want %q", err, tc.want)
			}
			if err := g.Wait(); err != nil {
				t.Errorf("wait: %v", err)
			}
			pids := startedPIDs(t, all.String())
			if len(pids) == 0 {
				t.Fatalf("no server process started; log:\n%s", all)
			}
			for _, pid := range pids {
				assertReaped(t, pid)
			}
			for _, st := range g.Servers() {
				if st.State == supervisor.StateReady || st.PID != 0 {
					t.Errorf("after a failed start: %+v", st)
				}
			}
		})
	}
}

// TestServeStdio: without Listen, the merged server is served over a pair
// of pipes to a real SDK client; when the client closes its end,
// ServeStdio shuts the gateway down and the server's process is reaped.
func TestServeStdio(t *testing.T) {
	logs := &fixture.Log{}
	cfg := testConfig(t)
	cfg.Logger = zerolog.New(logs)
	g := New([]catalog.ServerSpec{fixtureSpec("fx", fixture.Options{Tools: []string{"echo", "pid"}})}, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := g.Start(ctx); err != nil {
		t.Fatalf("start: %v\nlog:\n%s", err, logs)
	}
	if g.Addr() != nil || g.Summary().Listen != "" {
		t.Errorf("no Listen, yet addr %v, summary %+v", g.Addr(), g.Summary())
	}
	inR, inW := io.Pipe()   // client -> gateway
	outR, outW := io.Pipe() // gateway -> client
	served := make(chan error, 1)
	go func() {
		served <- g.ServeStdio(ctx, inR, outW)
		outW.Close()
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "lifecycle-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if got, err := fixture.CallText(ctx, cs, "echo", map[string]any{"text": "over stdio"}); err != nil || got != "over stdio" {
		t.Fatalf("echo: %q, %v", got, err)
	}
	got, err := fixture.CallText(ctx, cs, "pid", nil)
	if err != nil {
		t.Fatalf("pid: %v", err)
	}
	pid, _ := strconv.Atoi(got)
	cs.Close() // closes inW: the gateway reads EOF
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("serve stdio: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("ServeStdio did not return after the client closed")
	}
	if err := g.Wait(); err != nil {
		t.Errorf("wait: %v", err)
	}
	assertReaped(t, pid)
	if !strings.Contains(logs.String(), `"message":"stdin closed; shutting down"`) {
		t.Errorf("log lacks the reason for stopping:\n%s", logs)
	}
}

// TestShutdownBeforeStart: a gateway shut down before it started never
// starts a server: Start refuses, and Wait returns at once.
func TestShutdownBeforeStart(t *testing.T) {
	logs := &fixture.Log{}
	cfg := testConfig(t)
	cfg.Listen, cfg.Logger = "127.0.0.1:0", zerolog.New(logs)
	g := New([]catalog.ServerSpec{fixtureSpec("fx", fixture.Options{Tools: []string{"echo"}})}, cfg)
	g.Shutdown(context.Background())
	if err := g.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "shut down") {
		t.Errorf("start after shutdown: %v, want a refusal", err)
	}
	if err := g.Wait(); err != nil {
		t.Errorf("wait: %v", err)
	}
	if pids := startedPIDs(t, logs.String()); len(pids) != 0 || g.Addr() != nil {
		t.Errorf("started %v, listened on %v after shutdown", pids, g.Addr())
	}
}
