package endpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/auth"
	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/intercept"
	"github.com/mcp-gateway/mcp-gateway/internal/supervisor"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// TestMain lets the test binary serve as a fixture MCP server: the
// endpoint's tests run it as their upstreams' stdio children.
func TestMain(m *testing.M) {
	fixture.RunIfRequested()
	os.Exit(m.Run())
}

// testSetup is what a test chooses of an in-process gateway: the endpoint's
// options and the timeouts around it.
type testSetup struct {
	StartupTimeout time.Duration
	ShutdownGrace  time.Duration
	MaxSessions    int
	Limits         Limits
	// Listener, when set, is what the endpoint serves on instead of a new
	// 127.0.0.1 TCP listener (the fuzz targets' in-memory connections).
	Listener net.Listener
	// Interceptors, if set, builds the interceptors for the servers.
	Interceptors func([]catalog.ServerSpec) *intercept.Engine
	// PageSize is the aggregate's list page size (zero: its default).
	PageSize int
	// AllowedOrigins is Options.AllowedOrigins.
	AllowedOrigins []string
	// Telemetry is the aggregate's and the endpoint's (nil: off).
	Telemetry *telemetry.Telemetry
}

func testSettings(t testing.TB, maxSessions int) *testSetup {
	return &testSetup{StartupTimeout: 30 * time.Second, ShutdownGrace: 2 * time.Second, MaxSessions: maxSessions}
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

// inProcessGateway runs an endpoint inside the test process on a 127.0.0.1
// listener, with one fixture server. It is stopped at cleanup.
func inProcessGateway(t *testing.T, set *testSetup, log io.Writer) (url, token string, e *Endpoint) {
	t.Helper()
	return inProcessGatewayOf(t, set, log, fixtureSpec("fx", fixture.Options{Tools: []string{"echo", "sleep"}}))
}

// inProcessGatewayOf is inProcessGateway with the given servers.
func inProcessGatewayOf(t *testing.T, set *testSetup, log io.Writer, specs ...catalog.ServerSpec) (url, token string, e *Endpoint) {
	t.Helper()
	url, token, e, _ = startInProcess(t, set, log, specs...)
	return url, token, e
}

// startInProcess runs the servers of specs under supervisors, merged by an
// aggregate, behind an Endpoint serving on 127.0.0.1, in the order the
// gateway does: the endpoint serves first (503 until ready), then the
// servers start, then the aggregate opens and the endpoint is marked ready.
// stop (or the test's end) shuts the endpoint down within the grace period,
// stops the servers and waits for them; it reports Serve's unexpected end.
func startInProcess(t testing.TB, set *testSetup, log io.Writer, specs ...catalog.ServerSpec) (url, token string, e *Endpoint, stop func() error) {
	t.Helper()
	token = "churn-token"
	logger := zerolog.New(log).Hook(telemetry.LogHook{}) // as the command's logger has it
	aopts := aggregate.Options{Logger: logger, Version: "test", Audit: AuditLog(logger), PageSize: set.PageSize,
		Telemetry: set.Telemetry}
	if set.Interceptors != nil {
		aopts.Interceptors = set.Interceptors(specs)
	}
	agg := aggregate.New(aopts)
	opts := supervisor.Options{
		Logger:       logger,
		Env:          supervisor.EnvWithout(os.Environ(), auth.EnvVar),
		NewClient:    agg.NewClient,
		Intercept:    agg.Intercept,
		ServeRequest: agg.ServeRequest,
		OnReady: func(ctx context.Context, s *supervisor.Server, cs *mcp.ClientSession, raw supervisor.RoundTrip) error {
			return agg.Sync(ctx, s.Name(), cs, raw)
		},
		RestartPolicy: supervisor.RestartPolicy{MaxBackoff: 30 * time.Second},
	}
	var servers []*supervisor.Server
	for _, sp := range specs {
		s := supervisor.New(sp, opts)
		servers = append(servers, s)
		agg.Add(s)
	}
	e = New(agg, token, Options{
		Logger:         logger,
		Limits:         set.Limits,
		MaxSessions:    set.MaxSessions,
		AllowedOrigins: set.AllowedOrigins,
		Telemetry:      set.Telemetry,
		Servers: func() []supervisor.Status {
			var out []supervisor.Status
			for _, s := range servers {
				out = append(out, s.Status())
			}
			return out
		},
	})
	ln := set.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- e.Serve(ln) }()
	runCtx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(func() { s.Run(runCtx) })
	}
	stop = sync.OnceValue(func() error {
		ctx, done := context.WithTimeout(context.Background(), set.ShutdownGrace)
		e.Shutdown(ctx)
		done()
		cancel()
		wg.Wait()
		if err := <-serveErr; !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve: %w", err)
		}
		return nil
	})
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("endpoint: %v", err)
		}
	})
	startCtx, startDone := context.WithTimeout(context.Background(), set.StartupTimeout)
	defer startDone()
	for _, s := range servers {
		if err := s.WaitStarted(startCtx); err != nil {
			t.Fatalf("server %q failed to start: %v", s.Name(), err)
		}
	}
	agg.Open()
	e.SetReady()
	return "http://" + ln.Addr().String() + "/mcp", token, e, stop
}

// syncBuffer is a log sink tests can read while the gateway writes.
type syncBuffer = fixture.Log

// waitFor polls cond until it holds, failing the test after timeout.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// connect opens a Go SDK client session to the endpoint at url with token.
func connect(t *testing.T, ctx context.Context, url, token string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: fixture.Bearer(token, http.DefaultTransport)},
	}
	cs, err := client.Connect(ctx, tr, legacySession())
	if err != nil {
		t.Fatalf("connect to the endpoint: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// healthBody is the part of /health the tests read.
type healthBody struct {
	Status  string `json:"status"`
	Tools   int    `json:"tools"`
	Servers []struct {
		Name  string `json:"name"`
		State string `json:"state"`
		Tools int    `json:"tools"`
	} `json:"servers"`
}

// health fetches /health, without a token, from the endpoint whose /mcp is
// at url.
func health(t *testing.T, url string) (int, healthBody) {
	t.Helper()
	resp, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h healthBody
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, h
}

// text returns the text of a tool result's first content.
func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatalf("tool result has no content: %+v", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", res.Content[0])
	}
	return tc.Text
}

// legacySession pins a Go SDK client to the 2025 era (initialize, a
// session): the SDK's default client negotiates 2026-07-28 with the gateway,
// which serves it without a session, and the tests that use this are about
// what a 2025-era session gets. The 2026 era has tests of its own (era_test.go).
func legacySession() *mcp.ClientSessionOptions {
	return &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
}
