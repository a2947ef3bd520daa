package intercept

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The gateway's binary must not link the RPC stack plugins use: that is
// the plugin host's. The host's own list shows the check can fail.
func TestGatewayLinksNoRPCStack(t *testing.T) {
	heavy := []string{"google.golang.org/grpc", "google.golang.org/protobuf", "github.com/hashicorp/go-plugin"}
	deps := func(pkg string) string {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		return string(out)
	}
	gw := deps("github.com/mcp-gateway/mcp-gateway/cmd/mcp-gateway")
	for _, h := range heavy {
		if strings.Contains(gw, h) {
			t.Errorf("cmd/mcp-gateway links %s", h)
		}
	}
	if host := deps("github.com/mcp-gateway/mcp-gateway/cmd/mcp-gateway-plugin-host"); !strings.Contains(host, heavy[2]) {
		t.Errorf("the plugin host does not list go-plugin among its dependencies: the check above proves nothing")
	}
}

func TestParseNeedsPluginHost(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir()) // none there, none next to the test binary
	_, err = Parse([]byte(pluginConfig(exe, "")))
	if err == nil || !errors.Is(err, ErrInvalidConfig) ||
		!strings.Contains(err.Error(), `interceptors[0] ("tp"): type: plugin needs the plugin host mcp-gateway-plugin-host`) {
		t.Fatalf("parse without a plugin host: %v", err)
	}
	// Configs without plugins do not need it.
	if _, err := Parse([]byte(`{"interceptors":[{"name":"x","type":"exec","command":"cat","hooks":["before"]}]}`)); err != nil {
		t.Fatal(err)
	}
}

// An error the plugin returns, whatever its gRPC code, fails the hook; the
// plugin answered, so it keeps running.
func TestPluginOwnErrorsKeepItRunning(t *testing.T) {
	e := engine(t, pluginConfig(testPluginBin(t), ""), nil)
	before := pid(t, e)
	for text, want := range map[string]string{"status": "plugin finds the arguments invalid", "error": "plugin refuses to decide"} {
		_, _, _, err := e.Call(context.Background(), call(text), (&upstream{}).next)
		interceptorError(t, err, want)
	}
	if after := pid(t, e); after != before {
		t.Errorf("pid %s after the plugin's own errors, was %s: it was restarted", after, before)
	}
}

// A caller whose own deadline is shorter than the hook's timeout gives up
// on its call; the plugin is neither killed nor backed off.
func TestPluginCallerDeadlineIsNotAHang(t *testing.T) {
	e := engine(t, pluginConfig(testPluginBin(t), `,"timeout":"60s"`), nil)
	before := pid(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, _, _, err := e.Call(ctx, call("hang"), (&upstream{}).next)
	if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "no answer within") {
		t.Fatalf("error %v, want the caller's deadline, not a hook timeout", err)
	}
	if after := pid(t, e); after != before {
		t.Errorf("pid %s, was %s: the caller's deadline killed the plugin", after, before)
	}
}

// Calls are multiplexed: one that hangs does not hold up others, and its
// cancellation reaches the plugin without ending it.
func TestPluginCallsAreConcurrent(t *testing.T) {
	e := engine(t, pluginConfig(testPluginBin(t), `,"timeout":"60s"`), nil)
	before := pid(t, e)
	ctx, cancel := context.WithCancel(context.Background())
	hung := make(chan error, 1)
	go func() {
		_, _, _, err := e.Call(ctx, call("hang"), (&upstream{}).next)
		hung <- err
	}()
	p := e.chain[0].run.(*pluginRunner)
	for inFlight := 0; inFlight == 0; {
		p.mu.Lock()
		h := p.proc
		p.mu.Unlock()
		h.pmu.Lock()
		inFlight = len(h.pending)
		h.pmu.Unlock()
		select {
		case err := <-hung:
			t.Fatalf("the hanging call returned: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	for range 5 {
		if got := pid(t, e); got != before {
			t.Fatalf("pid %s, was %s", got, before)
		}
	}
	cancel()
	if err := <-hung; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
	if got := pid(t, e); got != before {
		t.Errorf("pid %s after a cancelled call, was %s", got, before)
	}
}

// A plugin that dies leaving a child that holds its output open is
// replaced at once, and the child is killed with its process group.
func TestPluginOrphanIsKilledWithItsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	e := engine(t, pluginConfig(testPluginBin(t), ""), nil, "TESTPLUGIN_PIDFILE="+pidFile)
	before := pid(t, e)
	_, _, _, err := e.Call(context.Background(), call("orphan"), (&upstream{}).next)
	interceptorError(t, err, "plugin failed")
	if after := pid(t, e); after == before || after == "" {
		t.Errorf("pid before %s, after %s: want a new plugin", before, after)
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for alive(child) {
		if time.Now().After(deadline) {
			syscall.Kill(child, syscall.SIGKILL)
			t.Fatalf("the dead plugin's child %d is still running", child)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid runs (a zombie waiting for a reaper does not).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}
