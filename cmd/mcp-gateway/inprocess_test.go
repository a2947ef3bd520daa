package main

import (
	"context"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// fixtureSpec is a local server running the fixture with opts.
func fixtureSpec(name string, opts fixture.Options) catalog.ServerSpec {
	argv, env := fixture.Command(opts)
	envs := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		envs[k] = v
	}
	return catalog.ServerSpec{Name: name, Kind: catalog.KindLocal, Command: argv, Env: envs}
}

// startInProcess runs a gateway in the test process until stop (or the
// test's end), which waits for run to return and reports its error.
func startInProcess(t testing.TB, set *settings, log io.Writer, specs ...catalog.ServerSpec) (url, token string, g *gateway, stop func() error) {
	t.Helper()
	token = "churn-token"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g = newGateway(set, specs, token, zerolog.New(log))
	ctx, cancel := context.WithCancel(context.Background())
	ready, finished := make(chan struct{}), make(chan struct{})
	var runErr error
	go func() {
		runErr = g.run(ctx, ln, func(summary) { close(ready) })
		close(finished)
	}()
	stop = sync.OnceValue(func() error {
		cancel()
		<-finished
		return runErr
	})
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("gateway run: %v", err)
		}
	})
	select {
	case <-ready:
	case <-finished:
		t.Fatalf("gateway ended before ready: %v", runErr)
	case <-time.After(30 * time.Second):
		t.Fatal("gateway not ready in 30s")
	}
	return "http://" + ln.Addr().String() + "/mcp", token, g, stop
}

func testSettings(t testing.TB, maxSessions int) *settings {
	return &settings{Listen: "127.0.0.1:0", StartupTimeout: 30 * time.Second, ShutdownGrace: 2 * time.Second,
		ServersDir: t.TempDir(), MaxSessions: maxSessions, MaxBackoff: 30 * time.Second}
}

// TestProcsAppliedWhenReady: --procs bounds the gateway's CPUs once every
// server has started, not while they start (a burst of process starts).
func TestProcsAppliedWhenReady(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	runtime.GOMAXPROCS(2)
	set := testSettings(t, 16)
	set.Procs = 1
	// The server serves a second after its process started: the gateway
	// runs, not yet ready, for that long. GOMAXPROCS is read once the
	// gateway has logged the start.
	spec := fixtureSpec("a", fixture.Options{Name: "a", Tools: []string{"echo"}, StartDelay: time.Second})
	logs := &markerWriter{marker: `"message":"server process started"`, seen: make(chan struct{})}
	during := make(chan int, 1)
	go func() {
		<-logs.seen
		during <- runtime.GOMAXPROCS(0)
	}()
	startInProcess(t, set, logs, spec) // returns when ready
	if got := <-during; got != 2 {
		t.Errorf("GOMAXPROCS %d while the servers start, want the machine's 2 (--procs applies when ready)", got)
	}
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("GOMAXPROCS %d when ready, want --procs 1", got)
	}
}

// markerWriter closes seen once a write contains marker (log lines arrive
// whole, one per write).
type markerWriter struct {
	marker string
	seen   chan struct{}
	once   sync.Once
}

func (w *markerWriter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), w.marker) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}
