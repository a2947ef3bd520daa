package gateway

import (
	"context"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestMain lets the test binary serve as a fixture MCP server: the
// gateway's tests run it as their servers' stdio children.
func TestMain(m *testing.M) {
	fixture.RunIfRequested()
	os.Exit(m.Run())
}

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

// startInProcess runs a gateway for specs in the test process, serving
// HTTP on 127.0.0.1, and returns once it is ready. It is shut down at the
// test's end; Shutdown before that is fine (it is idempotent).
func startInProcess(t testing.TB, cfg Config, log io.Writer, specs ...catalog.ServerSpec) *Gateway {
	t.Helper()
	cfg.Listen = "127.0.0.1:0"
	cfg.Token = "churn-token"
	cfg.Logger = zerolog.New(log)
	g := New(specs, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := g.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		g.Shutdown(context.Background())
		if err := g.Wait(); err != nil {
			t.Errorf("gateway: %v", err)
		}
	})
	return g
}

func testConfig(t testing.TB) Config {
	return Config{StartupTimeout: 30 * time.Second, ShutdownGrace: 2 * time.Second, ServersDir: t.TempDir()}
}

// TestProcsAppliedWhenReady: Procs (--procs) bounds the gateway's CPUs once every
// server has started, not while they start (a burst of process starts).
func TestProcsAppliedWhenReady(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	runtime.GOMAXPROCS(2)
	cfg := testConfig(t)
	cfg.Procs = 1
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
	startInProcess(t, cfg, logs, spec) // returns when ready
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
