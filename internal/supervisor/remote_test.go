package supervisor

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// runRemote runs a Remote for spec until the test ends, checking that Run
// returns after cancel.
func runRemote(t *testing.T, spec catalog.ServerSpec, opts RemoteOptions) (*Remote, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	opts.Logger = zerolog.New(logs).Hook(telemetry.LogHook{}) // as the command's logger has it
	if opts.MinBackoff == 0 {
		opts.MinBackoff = 10 * time.Millisecond
	}
	if spec.Name == "" {
		spec.Name = "rm"
	}
	spec.Kind = catalog.KindRemote
	r := NewRemote(spec, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		r.Run(ctx)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("Run did not return after cancel")
		}
		if st := r.Status(); st.State != StateStopped {
			t.Errorf("state after Run returned: %+v", st)
		}
	})
	return r, logs
}

func callRemote(ctx context.Context, r *Remote, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	var res *mcp.CallToolResult
	err := r.Do(ctx, func(cs *mcp.ClientSession) error {
		var err error
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		return err
	})
	return res, err
}

// waitState waits until r reaches one of states.
func waitState(t *testing.T, ctx context.Context, r *Remote, states ...State) Status {
	t.Helper()
	for {
		st := r.Status()
		for _, s := range states {
			if st.State == s {
				return st
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("never reached %v: %+v", states, st)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestRemoteReadyAndCall(t *testing.T) {
	rem := fixture.StartRemote(t, fixture.RemoteOptions{Token: "tok-1"})
	var readies atomic.Int32
	var tools []string
	r, _ := runRemote(t, catalog.ServerSpec{URL: rem.URL(), Headers: map[string]string{"Authorization": "Bearer tok-1"}}, RemoteOptions{
		OnReady: func(ctx context.Context, r *Remote, cs *mcp.ClientSession, _ RoundTrip) error {
			readies.Add(1)
			res, err := cs.ListTools(ctx, nil)
			if err != nil {
				return err
			}
			for _, tl := range res.Tools {
				tools = append(tools, tl.Name)
			}
			return nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
	if st := r.Status(); st.State != StateReady || st.PID != 0 || st.Name != "rm" {
		t.Errorf("status %+v", st)
	}
	if readies.Load() != 1 || strings.Join(tools, ",") != "echo,forecast,generation" {
		t.Errorf("OnReady ran %d times, saw tools %v", readies.Load(), tools)
	}
	res, err := callRemote(ctx, r, "echo", map[string]any{"text": "hello remote"})
	if err != nil || resultText(t, res) != "hello remote" {
		t.Fatalf("call: %v %v", res, err)
	}
	if got := rem.AuthHeader(); got != "Bearer tok-1" {
		t.Errorf("remote saw Authorization %q", got)
	}
	// A JSON-RPC error from the remote passes through as is and keeps the
	// session.
	_, err = callRemote(ctx, r, "no-such-tool", nil)
	var ce *CallError
	if err == nil || errors.As(err, &ce) {
		t.Errorf("unknown tool: %v, want the remote's own error", err)
	}
	if st := r.Status(); st.Restarts != 0 || rem.Inits.Load() != 1 {
		t.Errorf("a tool error replaced the session: %+v, %d initializes", st, rem.Inits.Load())
	}
}

// TestRemoteStopEndsSession: Run's end closes the session on the remote
// (a DELETE), so a remote does not keep sessions of a stopped gateway.
func TestRemoteStopEndsSession(t *testing.T) {
	rem := fixture.StartRemote(t, fixture.RemoteOptions{Token: "tok"})
	r := NewRemote(catalog.ServerSpec{Name: "rm", Kind: catalog.KindRemote, URL: rem.URL(), Headers: map[string]string{"Authorization": "Bearer tok"}}, RemoteOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer wcancel()
	if err := r.WaitStarted(wctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-done:
	case <-wctx.Done():
		t.Fatal("Run did not return")
	}
	if rem.Deletes.Load() != 1 {
		t.Errorf("remote saw %d DELETEs, want 1", rem.Deletes.Load())
	}
	_, err := callRemote(wctx, r, "echo", nil)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "stopped") {
		t.Errorf("call after stop: %v", err)
	}
}

// TestRemoteRestartMidSession: the remote is replaced by a fresh instance
// that does not know the session; the next call gets 404, and the gateway
// re-initializes and retries it once, so the caller sees no error.
func TestRemoteRestartMidSession(t *testing.T) {
	for _, c := range []struct {
		name   string
		opts   fixture.RemoteOptions
		status string
	}{
		{"404", fixture.RemoteOptions{}, "404"},
		{"404 with JSON-RPC body", fixture.RemoteOptions{JSONNotFound: true}, "404"},
		{"400 saying the session is unknown", fixture.RemoteOptions{BadRequestUnknown: true}, "400"},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := c.opts
			opts.Token = "tok"
			rem := fixture.StartRemote(t, opts)
			var readies atomic.Int32
			r, _ := runRemote(t, catalog.ServerSpec{URL: rem.URL(), Headers: map[string]string{"Authorization": "Bearer tok"}}, RemoteOptions{
				OnReady: func(context.Context, *Remote, *mcp.ClientSession, RoundTrip) error { readies.Add(1); return nil },
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := callRemote(ctx, r, "generation", nil)
			if err != nil || resultText(t, res) != "1" {
				t.Fatalf("first call: %v %v", res, err)
			}
			rem.Restart()
			res, err = callRemote(ctx, r, "generation", nil)
			if err != nil {
				t.Fatalf("call after the remote restarted: %v", err)
			}
			if got := resultText(t, res); got != "2" {
				t.Errorf("answered by generation %s, want 2", got)
			}
			st := waitState(t, ctx, r, StateReady)
			if st.Restarts != 1 || readies.Load() != 2 || rem.Inits.Load() != 2 {
				t.Errorf("after one remote restart: %+v, OnReady %d, initializes %d", st, readies.Load(), rem.Inits.Load())
			}
			// A 2025-era remote (a stateful SDK handler) is probed once:
			// the reconnection knows its era.
			if n := rem.Discovers.Load(); n != 1 {
				t.Errorf("server/discover sent %d times, want once (the first connection's era probe)", n)
			}
			if !strings.Contains(st.LastExit, c.status) {
				t.Errorf("lastExit %q does not say %s", st.LastExit, c.status)
			}
		})
	}
}

// TestRemoteRestartWhileIdle: with no call in flight, the lost session is
// noticed on the standalone stream, and a new one is made before any call.
func TestRemoteRestartWhileIdle(t *testing.T) {
	t.Parallel() // it waits out timers; the rest of the package need not wait
	rem := fixture.StartRemote(t, fixture.RemoteOptions{Token: "tok"})
	var readies atomic.Int32
	r, _ := runRemote(t, catalog.ServerSpec{URL: rem.URL(), Headers: map[string]string{"Authorization": "Bearer tok"}}, RemoteOptions{
		OnReady: func(context.Context, *Remote, *mcp.ClientSession, RoundTrip) error { readies.Add(1); return nil },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := r.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
	rem.Restart()
	for readies.Load() < 2 {
		select {
		case <-ctx.Done():
			t.Fatalf("no new session after the remote restarted: %+v", r.Status())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if st := waitState(t, ctx, r, StateReady); st.Restarts != 1 {
		t.Errorf("status %+v", st)
	}
}

func TestRemoteWrongHeader(t *testing.T) {
	rem := fixture.StartRemote(t, fixture.RemoteOptions{Token: "right-token"})
	r, logs := runRemote(t, catalog.ServerSpec{URL: rem.URL() + "?key=q-secret", Headers: map[string]string{"Authorization": "Bearer wrong-token"}}, RemoteOptions{
		Redact: func(s string) string { return strings.ReplaceAll(s, "wrong-token", "[REDACTED]") },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := r.WaitStarted(ctx)
	if err == nil {
		t.Fatal("started with a wrong token")
	}
	t.Logf("start error: %v", err)
	for _, want := range []string{rem.URL(), "401 Unauthorized", "headers"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("start error %q lacks %q", err, want)
		}
	}
	for _, leak := range []string{"wrong-token", "q-secret"} {
		if strings.Contains(err.Error(), leak) || strings.Contains(logs.String(), leak) {
			t.Errorf("%q leaked: %v\n%s", leak, err, logs.String())
		}
	}
	st := waitState(t, ctx, r, StateRestarting, StateFailed)
	if !strings.Contains(st.LastError, "401") {
		t.Errorf("status %+v", st)
	}
}

// TestRemoteUnreachable: a remote that goes away fails the next call with a
// clear error, is retried with backoff until failed, and is used again once
// it is back.
func TestRemoteUnreachable(t *testing.T) {
	rem := fixture.StartRemote(t, fixture.RemoteOptions{Token: "tok"})
	r, _ := runRemote(t, catalog.ServerSpec{URL: rem.URL(), Headers: map[string]string{"Authorization": "Bearer tok"}}, RemoteOptions{
		RestartPolicy: RestartPolicy{FailAfter: 3, MaxBackoff: 100 * time.Millisecond},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := callRemote(ctx, r, "echo", map[string]any{"text": "x"}); err != nil {
		t.Fatal(err)
	}
	rem.Stop()
	_, err := callRemote(ctx, r, "echo", map[string]any{"text": "x"})
	t.Logf("call to a stopped remote: %v", err)
	var ce *CallError
	if !errors.As(err, &ce) || ce.Server != "rm" {
		t.Fatalf("call to a stopped remote: %v, want a CallError", err)
	}
	for _, want := range []string{`server "rm"`, rem.URL(), "unreachable", "connection refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	st := waitState(t, ctx, r, StateFailed)
	if st.Restarts < 3 || !strings.Contains(st.LastError, "connection refused") {
		t.Errorf("failed status %+v", st)
	}
	// Failed: calls fail at once with the reason.
	_, err = callRemote(ctx, r, "echo", map[string]any{"text": "x"})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("call to a failed remote: %v", err)
	}
	// Retries continue at the slow rate; once the remote is back, it is used.
	rem.Start()
	waitState(t, ctx, r, StateReady)
	res, err := callRemote(ctx, r, "echo", map[string]any{"text": "back"})
	if err != nil || resultText(t, res) != "back" {
		t.Fatalf("call after the remote came back: %v %v", res, err)
	}
}

// TestRemoteOnReadyError: an OnReady failure fails the start, like a
// handshake failure.
func TestRemoteOnReadyError(t *testing.T) {
	rem := fixture.StartRemote(t, fixture.RemoteOptions{Token: "tok"})
	r, _ := runRemote(t, catalog.ServerSpec{URL: rem.URL(), Headers: map[string]string{"Authorization": "Bearer tok"}}, RemoteOptions{
		OnReady: func(context.Context, *Remote, *mcp.ClientSession, RoundTrip) error {
			return errors.New("list tools: boom")
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.WaitStarted(ctx); err == nil || !strings.Contains(err.Error(), "list tools: boom") {
		t.Fatalf("start error %v", err)
	}
}
