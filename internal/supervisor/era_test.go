package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// v2ServerScript returns the path of test/ts/v2server.mjs, a server on the
// official TypeScript SDK v2, skipping the test where its packages are not
// installed (CI installs them: there the test fails instead).
func v2ServerScript(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "test", "ts"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("test/ts/node_modules missing in CI (run 'npm ci' in test/ts): %v", err)
		}
		t.Skip("test/ts/node_modules not installed; run 'npm ci' in test/ts")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed")
	}
	return filepath.Join(dir, "v2server.mjs")
}

// everythingBin returns the path of server-everything's entry point (the
// TypeScript SDK v1: a 2025-only server), installed with test/ts's packages.
func everythingBin(t testing.TB) string {
	t.Helper()
	dir := filepath.Dir(v2ServerScript(t))
	return filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
}

// v2HTTPServer starts v2server.mjs over HTTP with args and returns its URL;
// the process is ended at cleanup.
func v2HTTPServer(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command("node", append([]string{v2ServerScript(t), "--http=0"}, args...)...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	var ready struct {
		URL string `json:"url"`
	}
	if err != nil || json.Unmarshal([]byte(line), &ready) != nil || ready.URL == "" {
		t.Fatalf("v2server --http: first line %q: %v", line, err)
	}
	return ready.URL
}

// echoBothWays lists the server's tools through the SDK session and calls
// echo on the raw path, as the gateway does: each must work on the era the
// server speaks.
func echoBothWays(t *testing.T, ctx context.Context, do func(context.Context, func(*mcp.ClientSession) error) error, raw func(context.Context, string, json.RawMessage) (json.RawMessage, error)) {
	t.Helper()
	var names []string
	if err := do(ctx, func(cs *mcp.ClientSession) error {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			return err
		}
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		return nil
	}); err != nil || !strings.Contains(strings.Join(names, ","), "echo") {
		t.Fatalf("tools/list: %v %v", names, err)
	}
	res, err := raw(ctx, "tools/call", json.RawMessage(`{"name":"echo","arguments":{"text":"hi from 2025"},"_meta":{"progressToken":"p1"}}`))
	if err != nil || !strings.Contains(string(res), `"text":"hi from 2025"`) {
		t.Fatalf("raw tools/call echo: %s %v", res, err)
	}
	// A prompt and a resource: each request names its own Mcp-Name.
	res, err = raw(ctx, "prompts/get", json.RawMessage(`{"name":"greet","arguments":{"name":"alice"}}`))
	if err != nil || !strings.Contains(string(res), "Hello, alice!") {
		t.Fatalf("raw prompts/get greet: %s %v", res, err)
	}
	res, err = raw(ctx, "resources/read", json.RawMessage(`{"uri":"v2://counter"}`))
	if err != nil || !strings.Contains(string(res), `"uri":"v2://counter"`) {
		t.Fatalf("raw resources/read: %s %v", res, err)
	}
}

// TestStdio2026OnlyServer: a stdio server that speaks only 2026-07-28 (it
// refuses initialize with -32022) launches on the era probe, lists and
// calls; its restart opens in the 2026 era too. A 2026-only server whose era
// was learned as 2025 (the memo says so) is started again at once in the
// 2026 era when it refuses the initialize.
func TestStdio2026OnlyServer(t *testing.T) {
	script := v2ServerScript(t)
	s, logs := runSpec(t, catalog.ServerSpec{Name: "v2", Kind: catalog.KindLocal, Command: []string{"node", script, "--legacy=reject"}}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.WaitStarted(ctx); err != nil {
		t.Fatalf("start: %v\n%s", err, logs)
	}
	echoBothWays(t, ctx, s.Do, s.CallRaw)
	var ir struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Tools json.RawMessage `json:"tools"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(s.InitializeResultRaw(), &ir); err != nil || ir.ProtocolVersion != Protocol2026 || len(ir.Capabilities.Tools) == 0 {
		t.Errorf("InitializeResultRaw %s: want the discovered 2026-07-28 capabilities", s.InitializeResultRaw())
	}
	if n := strings.Count(logs.String(), "refused the 2025-11-25 initialize"); n != 0 {
		t.Errorf("the refusal was logged %d times, want never (the probe comes first)", n)
	}

	// A restart opens in the 2026 era at once.
	pid := s.Status().PID
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for ctx.Err() == nil {
		if st := s.Status(); st.State == StateReady && st.PID != pid && st.PID != 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	echoBothWays(t, ctx, s.Do, s.CallRaw)

	t.Run("learned-2025", func(t *testing.T) {
		s, logs := runSpecAfter(t, catalog.ServerSpec{Name: "v2", Kind: catalog.KindLocal, Command: []string{"node", script, "--legacy=reject"}}, Options{},
			func(s *Server) { s.era.set(ProtocolVersion) })
		if err := s.WaitStarted(ctx); err != nil {
			t.Fatalf("start: %v\n%s", err, logs)
		}
		echoBothWays(t, ctx, s.Do, s.CallRaw)
		if n := strings.Count(logs.String(), "refused the 2025-11-25 initialize"); n != 1 {
			t.Errorf("the refusal was logged %d times, want once", n)
		}
	})
}

// version is the protocol version of an initialize result.
func version(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var ir struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(raw, &ir); err != nil {
		t.Fatalf("initialize result %s: %v", raw, err)
	}
	return ir.ProtocolVersion
}

// TestStdioEraProbe: the era probe on the real connection. A server that
// speaks both eras (the TypeScript SDK v2's, the Go SDK's) is spoken to in
// 2026; a 2025 server that answers server/discover with an error
// (server-everything, on the TypeScript SDK v1; the Go SDK's restricted to
// 2025 versions) is sent initialize on the same process; one that exits on
// server/discover is started again at once with initialize and keeps that
// era for its restarts; one that ignores it is restarted with initialize.
func TestStdioEraProbe(t *testing.T) {
	t.Parallel() // it waits out timers; the rest of the package need not wait
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t.Run("dies-on-discover", func(t *testing.T) {
		s, logs := runServer(t, fixture.Options{DieOnDiscover: true, Tools: []string{"echo"}}, Options{})
		if err := s.WaitStarted(ctx); err != nil {
			t.Fatalf("start: %v\n%s", err, logs)
		}
		res, err := s.CallRaw(ctx, "tools/call", json.RawMessage(`{"name":"echo","arguments":{"text":"x"}}`))
		if err != nil || !strings.Contains(string(res), `"x"`) {
			t.Fatalf("call: %s %v", res, err)
		}
		if st := s.Status(); st.Restarts != 0 {
			t.Errorf("restarted: %+v\n%s", st, logs)
		}
		if v := version(t, s.InitializeResultRaw()); v != ProtocolVersion {
			t.Errorf("version %s, want %s", v, ProtocolVersion)
		}
		if n := strings.Count(logs.String(), "starting it again with the 2025-11-25 initialize"); n != 1 {
			t.Errorf("the probe's exit was logged %d times, want once\n%s", n, logs)
		}
		// Its restart opens with initialize at once: no second probe.
		pid := s.Status().PID
		_ = syscall.Kill(pid, syscall.SIGKILL)
		for ctx.Err() == nil {
			if st := s.Status(); st.State == StateReady && st.PID != pid && st.PID != 0 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if n := strings.Count(logs.String(), "starting it again with the 2025-11-25 initialize"); n != 1 {
			t.Errorf("after a restart the probe's exit was logged %d times, want still once\n%s", n, logs)
		}
	})
	t.Run("ignores-discover", func(t *testing.T) {
		// Silent on the probe: that start fails at the handshake's limit,
		// as a silent server's does, and the restart opens with
		// initialize.
		s, logs := runServer(t, fixture.Options{IgnoreDiscover: true, Tools: []string{"echo"}}, Options{ConnectTimeout: 500 * time.Millisecond})
		for ctx.Err() == nil {
			if st := s.Status(); st.State == StateReady {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if st := s.Status(); st.State != StateReady || st.Restarts != 1 {
			t.Fatalf("status %+v, want ready after one restart\n%s", st, logs)
		}
		if v := version(t, s.InitializeResultRaw()); v != ProtocolVersion {
			t.Errorf("version %s, want %s", v, ProtocolVersion)
		}
		if !strings.Contains(logs.String(), "sent no initialize answer within") {
			t.Errorf("the silent probe was not reported\n%s", logs)
		}
	})
	t.Run("both-eras", func(t *testing.T) {
		s, logs := runSpec(t, catalog.ServerSpec{Name: "v2", Kind: catalog.KindLocal, Command: []string{"node", v2ServerScript(t)}}, Options{})
		if err := s.WaitStarted(ctx); err != nil {
			t.Fatalf("start: %v\n%s", err, logs)
		}
		echoBothWays(t, ctx, s.Do, s.CallRaw)
		if v := version(t, s.InitializeResultRaw()); v != Protocol2026 {
			t.Errorf("version %s, want %s", v, Protocol2026)
		}
	})
	t.Run("go-sdk", func(t *testing.T) {
		// The Go SDK's server: both eras, or the 2025 one only
		// (server/discover refused with -32022 naming the 2025 versions).
		for _, c := range []struct {
			both bool
			want string
		}{{true, Protocol2026}, {false, ProtocolVersion}} {
			s, logs := runServer(t, fixture.Options{BothEras: c.both, Tools: []string{"echo"}}, Options{})
			if err := s.WaitStarted(ctx); err != nil {
				t.Fatalf("start: %v\n%s", err, logs)
			}
			if v := version(t, s.InitializeResultRaw()); v != c.want {
				t.Errorf("both eras %v: version %s, want %s", c.both, v, c.want)
			}
			res, err := s.CallRaw(ctx, "tools/call", json.RawMessage(`{"name":"echo","arguments":{"text":"x"}}`))
			if err != nil || !strings.Contains(string(res), `"x"`) {
				t.Fatalf("call: %s %v", res, err)
			}
			if st := s.Status(); st.Restarts != 0 {
				t.Errorf("restarted: %+v\n%s", st, logs)
			}
		}
	})
	t.Run("2025-only", func(t *testing.T) {
		bin := everythingBin(t)
		s, logs := runSpec(t, catalog.ServerSpec{Name: "everything", Kind: catalog.KindLocal, Command: []string{"node", bin, "stdio"}}, Options{})
		if err := s.WaitStarted(ctx); err != nil {
			t.Fatalf("start: %v\n%s", err, logs)
		}
		if v := version(t, s.InitializeResultRaw()); v != ProtocolVersion {
			t.Errorf("version %s, want %s", v, ProtocolVersion)
		}
		res, err := s.CallRaw(ctx, "tools/call", json.RawMessage(`{"name":"echo","arguments":{"message":"x"}}`))
		if err != nil || !strings.Contains(string(res), `x`) {
			t.Fatalf("call: %s %v", res, err)
		}
		if st := s.Status(); st.Restarts != 0 || strings.Contains(logs.String(), "exited on server/discover") {
			t.Errorf("the probe cost a start: %+v\n%s", st, logs)
		}
	})
}

// TestRemote2026OnlyServer: the same over HTTP: a remote that speaks only
// 2026-07-28 connects and serves, and so does a remote of both eras, in the
// 2026 era too unless its config pins it to 2025.
func TestRemote2026OnlyServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, c := range []struct {
		name, legacy, want, pin string
	}{
		{"2026-only", "--legacy=reject", Protocol2026, ""},
		{"both-eras", "--legacy=serve", Protocol2026, ""},
		// Pinned to 2025 in its config (catalog.ProtocolKey): a remote
		// of both eras is spoken to in 2025; one of 2026 only still in 2026.
		{"both-eras, pinned to 2025", "--legacy=serve", ProtocolVersion, catalog.Protocol2025},
		{"2026-only, pinned to 2025", "--legacy=reject", Protocol2026, catalog.Protocol2025},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := v2HTTPServer(t, c.legacy)
			r, logs := runRemote(t, catalog.ServerSpec{URL: url, Protocol: c.pin}, RemoteOptions{})
			if err := r.WaitStarted(ctx); err != nil {
				t.Fatalf("start: %v\n%s", err, logs)
			}
			echoBothWays(t, ctx, r.Do, r.CallRaw)
			var ir struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if json.Unmarshal(r.InitializeResultRaw(), &ir) != nil || ir.ProtocolVersion != c.want {
				t.Errorf("initialize result %s: want %s", r.InitializeResultRaw(), c.want)
			}
		})
	}
}

// TestCallerCapabilities2026: a raw request to a 2026-era server declares
// the calling agent's own capabilities when the context carries them, and
// the gateway's (learned from the SDK's discover) otherwise: v2server's ask
// tool refuses URL elicitation (-32021) to a caller that does not declare
// it, and asks one that does.
func TestCallerCapabilities2026(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type rawCaller interface {
		WaitStarted(context.Context) error
		CallRaw(context.Context, string, json.RawMessage) (json.RawMessage, error)
	}
	ups := map[string]func(t *testing.T) rawCaller{
		"stdio": func(t *testing.T) rawCaller {
			s, _ := runSpec(t, catalog.ServerSpec{Name: "v2", Kind: catalog.KindLocal, Command: []string{"node", v2ServerScript(t), "--legacy=reject"}}, Options{})
			return s
		},
		"http": func(t *testing.T) rawCaller {
			r, _ := runRemote(t, catalog.ServerSpec{URL: v2HTTPServer(t, "--legacy=reject")}, RemoteOptions{})
			return r
		},
	}
	for name, up := range ups {
		t.Run(name, func(t *testing.T) {
			u := up(t)
			if err := u.WaitStarted(ctx); err != nil {
				t.Fatal(err)
			}
			ask := json.RawMessage(`{"name":"ask","arguments":{"kinds":["url"]}}`)
			res, err := u.CallRaw(WithCallerCapabilities(ctx, json.RawMessage(`{"elicitation":{"form":{}}}`)), "tools/call", ask)
			var wire *jsonrpc.Error
			if !errors.As(err, &wire) || wire.Code != -32021 {
				t.Errorf("without URL elicitation: %s %v; want -32021 from the server", res, err)
			}
			res, err = u.CallRaw(WithCallerCapabilities(ctx, json.RawMessage(`{"elicitation":{"url":{}}}`)), "tools/call", ask)
			if err != nil || !strings.Contains(string(res), `"input_required"`) {
				t.Errorf("with URL elicitation: %s %v; want the server's input request", res, err)
			}
			// The caller's capabilities as the aggregate passes them: a
			// function asked only when the request is stamped.
			of := func() (json.RawMessage, string) { return json.RawMessage(`{"elicitation":{"url":{}}}`), "" }
			res, err = u.CallRaw(WithCaller(ctx, of), "tools/call", ask)
			if err != nil || !strings.Contains(string(res), `"input_required"`) {
				t.Errorf("with URL elicitation through WithCaller: %s %v; want the server's input request", res, err)
			}
			// No caller: the capabilities of the SDK's own server/discover,
			// which declare roots (and no elicitation) here.
			res, err = u.CallRaw(ctx, "tools/call", json.RawMessage(`{"name":"ask","arguments":{"kinds":["roots"]}}`))
			if err != nil || !strings.Contains(string(res), `"input_required"`) {
				t.Errorf("roots, without a caller: %s %v; want the server's input request, asked with the capabilities learned from discover", res, err)
			}
		})
	}
}

// TestRemote2026Probe: a 2026-era remote's liveness probe is server/discover
// (the era has no ping: the TypeScript SDK answers it 404).
func TestRemote2026Probe(t *testing.T) {
	target, err := url.Parse(v2HTTPServer(t, "--legacy=reject"))
	if err != nil {
		t.Fatal(err)
	}
	discovers := make(chan struct{}, 64)
	var pings atomic.Int32
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.Header.Get("Mcp-Method") {
		case "ping":
			pings.Add(1)
		case "server/discover":
			select {
			case discovers <- struct{}{}:
			default:
			}
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(front.Close)
	r, logs := runRemote(t, catalog.ServerSpec{URL: front.URL + target.Path}, RemoteOptions{ProbeInterval: 100 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := r.WaitStarted(ctx); err != nil {
		t.Fatalf("start: %v\n%s", err, logs)
	}
	// The SDK's own discover at connect, then at least three probes.
	for i := 0; i < 4; i++ {
		select {
		case <-discovers:
		case <-ctx.Done():
			t.Fatalf("%d server/discover requests came, want the connect's and three probes", i)
		}
	}
	if n := pings.Load(); n != 0 {
		t.Errorf("the remote got %d pings", n)
	}
}

// TestRemote2026Cancel: a call to a 2026-era remote that the caller gives
// up on is cancelled the revision's way, by closing the request's stream
// (there is no session for a notifications/cancelled): the remote sees the
// POST end, and no notifications/cancelled.
func TestRemote2026Cancel(t *testing.T) {
	target, err := url.Parse(v2HTTPServer(t, "--legacy=reject"))
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	slowStarted, slowEnded := make(chan struct{}, 1), make(chan struct{}, 1)
	var notified atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Mcp-Method") == "notifications/cancelled" {
			notified.Add(1)
		}
		slow := req.Header.Get("Mcp-Name") == "slow"
		if slow {
			slowStarted <- struct{}{}
		}
		proxy.ServeHTTP(w, req)
		if slow {
			slowEnded <- struct{}{}
		}
	}))
	t.Cleanup(front.Close)
	r, logs := runRemote(t, catalog.ServerSpec{URL: front.URL + target.Path}, RemoteOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := r.WaitStarted(ctx); err != nil {
		t.Fatalf("start: %v\n%s", err, logs)
	}
	callCtx, giveUp := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := r.CallRaw(callCtx, "tools/call", json.RawMessage(`{"name":"slow","arguments":{"ms":600000}}`))
		errc <- err
	}()
	select {
	case <-slowStarted:
	case <-ctx.Done():
		t.Fatal("the slow call never reached the remote")
	}
	giveUp()
	var cerr *CancelledError
	if err := <-errc; !errors.As(err, &cerr) {
		t.Fatalf("call: %v; want a CancelledError", err)
	}
	select {
	case <-slowEnded:
	case <-ctx.Done():
		t.Fatal("the slow call's POST never ended after the caller gave up")
	}
	if n := notified.Load(); n != 0 {
		t.Errorf("the remote was sent %d notifications/cancelled, which name a request of a session", n)
	}
}

// TestCallerLogLevel2026: a raw request to a 2026-era server asks for log
// messages at the caller's level when the context carries one, and at
// debug otherwise: v2server's progress tool logs at info once per step.
func TestCallerLogLevel2026(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var logged, progressed atomic.Int32
	intercept := func(_ string, n *jsonrpc.Request) bool {
		switch n.Method {
		case "notifications/message":
			logged.Add(1)
			return true
		case "notifications/progress":
			progressed.Add(1)
			return true
		}
		return false
	}
	s, _ := runSpec(t, catalog.ServerSpec{Name: "v2", Kind: catalog.KindLocal, Command: []string{"node", v2ServerScript(t), "--legacy=reject"}}, Options{Intercept: intercept})
	if err := s.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
	call := json.RawMessage(`{"name":"progress","arguments":{"steps":2}}`)
	// The reader hands each message to Intercept before it reads the next:
	// those sent before the result have been counted when CallRaw returns.
	for _, c := range []struct {
		ctx  context.Context
		want int32
	}{{ctx, 2}, {WithCallerLogLevel(ctx, "error"), 0}, {WithCallerLogLevel(ctx, "info"), 2},
		// The level from WithCaller's function, asked though the
		// capabilities are set already.
		{WithCaller(WithCallerCapabilities(ctx, json.RawMessage(`{}`)), func() (json.RawMessage, string) { return nil, "error" }), 0}} {
		logged.Store(0)
		if _, err := s.CallRaw(c.ctx, "tools/call", call); err != nil {
			t.Fatal(err)
		}
		if n := logged.Load(); n != c.want {
			t.Errorf("%d log messages, want %d", n, c.want)
		}
	}
	// The call's own _meta is kept beside the era's members: its
	// progressToken brings the progress notifications.
	progressed.Store(0)
	if _, err := s.CallRaw(ctx, "tools/call", json.RawMessage(`{"name":"progress","arguments":{"steps":2},"_meta":{"progressToken":7}}`)); err != nil {
		t.Fatal(err)
	}
	if n := progressed.Load(); n != 2 {
		t.Errorf("%d progress notifications for a call with a progressToken, want 2", n)
	}
}

// TestSubscribe2026: resources/subscribe, which the 2026 era removed, sent
// on the raw path to a 2026-era server becomes a subscriptions/listen
// stream (the SDK's Subscribe), whose notifications/resources/updated
// arrive as a 2025 session's did; resources/unsubscribe closes it.
func TestSubscribe2026(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type rawCaller interface {
		WaitStarted(context.Context) error
		CallRaw(context.Context, string, json.RawMessage) (json.RawMessage, error)
	}
	ups := map[string]func(t *testing.T, updated func(string)) rawCaller{
		"stdio": func(t *testing.T, updated func(string)) rawCaller {
			s, _ := runSpec(t, catalog.ServerSpec{Name: "v2", Kind: catalog.KindLocal, Command: []string{"node", v2ServerScript(t)}}, Options{
				NewClient: func(string) *mcp.Client {
					return mcp.NewClient(&mcp.Implementation{Name: "gw", Version: "test"}, &mcp.ClientOptions{
						ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { updated(req.Params.URI) },
					})
				},
			})
			return s
		},
		"http": func(t *testing.T, updated func(string)) rawCaller {
			r, _ := runRemote(t, catalog.ServerSpec{URL: v2HTTPServer(t)}, RemoteOptions{
				NewClient: func(string) *mcp.Client {
					return mcp.NewClient(&mcp.Implementation{Name: "gw", Version: "test"}, &mcp.ClientOptions{
						ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { updated(req.Params.URI) },
					})
				},
			})
			return r
		},
	}
	for name, up := range ups {
		t.Run(name, func(t *testing.T) {
			got := make(chan string, 16)
			u := up(t, func(uri string) { got <- uri })
			if err := u.WaitStarted(ctx); err != nil {
				t.Fatal(err)
			}
			res, err := u.CallRaw(ctx, "resources/subscribe", json.RawMessage(`{"uri":"v2://counter"}`))
			if err != nil || string(res) != `{}` {
				t.Fatalf("resources/subscribe: %s %v", res, err)
			}
			// The listen stream opens in the background: touch until an
			// update arrives.
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
		wait:
			for {
				if _, err := u.CallRaw(ctx, "tools/call", json.RawMessage(`{"name":"touch","arguments":{"uri":"v2://counter"}}`)); err != nil {
					t.Fatalf("touch: %v", err)
				}
				select {
				case uri := <-got:
					if uri != "v2://counter" {
						t.Fatalf("resources/updated for %q", uri)
					}
					break wait
				case <-tick.C:
				case <-ctx.Done():
					t.Fatal("no notifications/resources/updated after subscribing")
				}
			}
			res, err = u.CallRaw(ctx, "resources/unsubscribe", json.RawMessage(`{"uri":"v2://counter"}`))
			if err != nil || string(res) != `{}` {
				t.Fatalf("resources/unsubscribe: %s %v", res, err)
			}
		})
	}
}

// TestLegacyResult: a 2026 server's complete result loses the revision's
// resultType and the server's serverInfo (and _meta when nothing else is
// in it); other _meta members, member order and other result types stay.
func TestLegacyResult(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}},"content":[],"resultType":"complete"}`, `{"content":[]}`},
		{`{"content":[],"_meta":{"progressToken":1,"io.modelcontextprotocol/serverInfo":{}},"resultType":"complete"}`, `{"content":[],"_meta":{"progressToken":1}}`},
		{`{"resultType":"input_required","inputRequests":{},"_meta":{"io.modelcontextprotocol/serverInfo":{}}}`, `{"resultType":"input_required","inputRequests":{},"_meta":{"io.modelcontextprotocol/serverInfo":{}}}`},
		{`{"content":[]}`, `{"content":[]}`},
	} {
		if got := legacyResult(json.RawMessage(c.in)); string(got) != c.want {
			t.Errorf("legacyResult(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

// TestPinnedTo2025: a server whose config pins the 2025 era
// (catalog.ProtocolKey) is sent initialize and never server/discover: a
// server of both eras comes up on 2025, one that exits on a discover is not
// started twice. A 2026-only server, pinned or not, still gets the 2026
// era, the only one it speaks.
func TestPinnedTo2025(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, fx := range []fixture.Options{
		{BothEras: true, Tools: []string{"echo"}},
		{DieOnDiscover: true, Tools: []string{"echo"}},
	} {
		argv, env := fixture.Command(fx)
		s, logs := runSpec(t, catalog.ServerSpec{Name: "fx", Kind: catalog.KindLocal, Command: argv, Env: envMap(env),
			Protocol: catalog.Protocol2025}, Options{})
		if err := s.WaitStarted(ctx); err != nil {
			t.Fatalf("%+v: start: %v\n%s", fx, err, logs)
		}
		if v := version(t, s.InitializeResultRaw()); v != ProtocolVersion {
			t.Errorf("%+v: version %s, want %s", fx, v, ProtocolVersion)
		}
		if st := s.Status(); st.Restarts != 0 || strings.Contains(logs.String(), "server/discover") {
			t.Errorf("%+v: a pinned server was probed: %+v\n%s", fx, st, logs)
		}
	}
	s, logs := runSpec(t, catalog.ServerSpec{Name: "v2", Kind: catalog.KindLocal,
		Command: []string{"node", v2ServerScript(t), "--legacy=reject"}, Protocol: catalog.Protocol2025}, Options{})
	if err := s.WaitStarted(ctx); err != nil {
		t.Fatalf("2026-only, pinned: start: %v\n%s", err, logs)
	}
	if v := version(t, s.InitializeResultRaw()); v != Protocol2026 {
		t.Errorf("2026-only, pinned: version %s, want %s", v, Protocol2026)
	}
}
