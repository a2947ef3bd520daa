package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// healthOf returns name's line in /health.
func (sb *testbox) healthOf(name string) (state string, restarts, tools, pid int) {
	sb.t.Helper()
	_, h := sb.health()
	for _, s := range h.Servers {
		if s.Name == name {
			return s.State, s.Restarts, s.Tools, s.PID
		}
	}
	sb.t.Fatalf("no server %q in /health: %+v", name, h)
	return
}

// TestRemoteUpstream merges a remote streamable-HTTP server with a stdio one
// behind the real gateway: naming, routing, list_changed, health, the
// ${VAR} header, and a remote restart mid-session that the agent never sees.
func TestRemoteUpstream(t *testing.T) {
	remoteKey := "rk-" + fmt.Sprint(time.Now().UnixNano())
	rem := fixture.StartRemote(t, fixture.RemoteOptions{Token: remoteKey, Name: "weather", EchoPrefix: "remote:"})
	sb := newTestbox(t)
	sb.env = append(sb.env, "WEATHER_REMOTE_KEY="+remoteKey)
	r := sb.mustLaunch(mcpConfig(t, map[string]any{
		"local": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "local", Tools: []string{"echo"}})},
		"weather": map[string]any{
			"url":     rem.URL(),
			"headers": map[string]string{"Authorization": "Bearer ${WEATHER_REMOTE_KEY}"},
		},
	}))
	if !strings.Contains(r.stdout, "(2 servers, 4 tools)") {
		t.Errorf("launch said %q", r.stdout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	listChanged := make(chan struct{}, 10)
	cs := sb.connect(ctx, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		listChanged <- struct{}{}
	}})

	// Same naming as stdio servers: "local" < "weather", so local keeps echo.
	names := toolNames(t, ctx, cs)
	slices.Sort(names)
	if want := []string{"echo", "forecast", "generation", "weather_echo"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	callText := func(name string, args map[string]any) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("call %s: %v\nlog:\n%s", name, err, sb.log())
		}
		return text(t, res)
	}
	if got := callText("forecast", map[string]any{"city": "Lyon"}); got != "sunny in Lyon (generation 1)" {
		t.Errorf("forecast = %q", got)
	}
	if got := callText("weather_echo", map[string]any{"text": "hi"}); got != "remote:hi" {
		t.Errorf("weather_echo = %q", got)
	}
	if got := callText("echo", map[string]any{"text": "hi"}); got != "hi" {
		t.Errorf("echo (local) = %q", got)
	}
	if state, restarts, tools, pid := sb.healthOf("weather"); state != "ready" || restarts != 0 || tools != 3 || pid != 0 {
		t.Errorf("weather health: %s restarts=%d tools=%d pid=%d", state, restarts, tools, pid)
	}

	// A tool added on the remote reaches the agent with list_changed.
	rem.AddTool("alerts", "no alerts")
	for !slices.Contains(toolNames(t, ctx, cs), "alerts") {
		select {
		case <-listChanged:
		case <-ctx.Done():
			t.Fatal("no tools/list_changed bringing the remote's new tool")
		}
	}
	if got := callText("alerts", nil); got != "no alerts" {
		t.Errorf("alerts = %q", got)
	}

	// The remote restarts: the next call meets 404 for its session, the
	// gateway re-initializes and retries, and the agent gets its answer.
	rem.Restart()
	if got := callText("forecast", map[string]any{"city": "Oslo"}); got != "sunny in Oslo (generation 2)" {
		t.Errorf("forecast after the remote restarted = %q", got)
	}
	if n := rem.Inits.Load(); n != 2 {
		t.Errorf("remote saw %d initializes, want 2", n)
	}
	if state, restarts, _, _ := sb.healthOf("weather"); state != "ready" || restarts != 1 {
		t.Errorf("weather health after its restart: %s restarts=%d", state, restarts)
	}
	if state, restarts, _, _ := sb.healthOf("local"); state != "ready" || restarts != 0 {
		t.Errorf("local health: %s restarts=%d", state, restarts)
	}
	if strings.Contains(sb.log(), remoteKey) {
		t.Error("the remote's header value reached the log")
	}
}

// TestRemoteWrongHeader: a remote that refuses the configured credentials
// fails the launch with a message naming the server and the status, and
// nothing is left running.
func TestRemoteWrongHeader(t *testing.T) {
	rem := fixture.StartRemote(t, fixture.RemoteOptions{Token: "the-right-key", Name: "weather", EchoPrefix: "remote:"})
	sb := newTestbox(t)
	sb.env = append(sb.env, "WEATHER_REMOTE_KEY=a-wrong-key")
	r := sb.launch(mcpConfig(t, map[string]any{
		"weather": map[string]any{"url": rem.URL(), "headers": map[string]string{"Authorization": "Bearer ${WEATHER_REMOTE_KEY}"}},
	}))
	if r.code != 1 {
		t.Fatalf("launch exited %d, want 1\nstderr: %s", r.code, r.stderr)
	}
	for _, want := range []string{`server "weather" failed to start`, rem.URL(), "401 Unauthorized", "headers"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr %q lacks %q", r.stderr, want)
		}
	}
	if strings.Contains(r.stderr, "a-wrong-key") || strings.Contains(sb.log(), "a-wrong-key") {
		t.Error("the header value reached stderr or the log")
	}
	if _, err := os.Stat(sb.tokenFile); !os.IsNotExist(err) {
		t.Errorf("token file left behind: %v", err)
	}
	if pid := sb.pid(); pid != 0 && alive(pid) {
		t.Errorf("gateway pid %d still alive", pid)
	}
}

// TestRemoteConfigErrors: a header naming an unset variable and an
// unreachable url are clear launch errors.
func TestRemoteConfigErrors(t *testing.T) {
	sb := newTestbox(t)
	r := sb.launch(`{"weather": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${WEATHER_KEY_NOT_SET_ANYWHERE}"}}}`)
	if r.code != 2 || !strings.Contains(r.stderr, `server "weather": headers: header "Authorization": environment variable WEATHER_KEY_NOT_SET_ANYWHERE is not set`) {
		t.Errorf("unset variable: exit %d, stderr %q", r.code, r.stderr)
	}
	r = sb.launch(`{"weather": {"url": "https://mcp.example.com/mcp", "runCmd": "x"}}`)
	if r.code != 2 || !strings.Contains(r.stderr, `server "weather": url: cannot be given with runCmd`) {
		t.Errorf("url with runCmd: exit %d, stderr %q", r.code, r.stderr)
	}

	port := freePort(t) // nothing listens there
	r = sb.launch(fmt.Sprintf(`{"weather": {"url": "http://127.0.0.1:%d/mcp"}}`, port))
	if r.code != 1 {
		t.Fatalf("unreachable remote: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, want := range []string{`server "weather" failed to start`, "unreachable", "connection refused"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr %q lacks %q", r.stderr, want)
		}
	}
}
