package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// markedServerWith is markedServer with the fixture's options: a shell that starts `sleep <marker>` beside the
// fixture, so that the server's own child is what the test looks for after the gateway is gone.
func markedServerWith(t *testing.T, opts fixture.Options) (cfg, marker string) {
	marker = fmt.Sprintf("3602.%09d", time.Now().UnixNano()%1e9)
	opts.Name = "marked"
	opts.Tools = []string{"sleep"}
	run := "sleep " + marker + " & " + fixture.ShellCommand(opts) + "; exit 0"
	return mcpConfig(t, map[string]any{"marked": map[string]any{"runCmd": run}}), marker
}

// awaitLog waits until the file at path holds want: the event a test acts on (a server's stderr line, which the
// gateway logs), not a time.
func awaitLog(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(path); strings.Contains(string(b), want) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, _ := os.ReadFile(path)
	t.Fatalf("%q never appeared in %s:\n%s", want, path, b)
}

// The two moments a 2026-era client is killed at: mid-call (the server of both eras, spoken to in 2026, is
// running the fixture's sleep) and mid-probe (the gateway's server/discover to a server that ignores it is
// pending, so the gateway is still starting and the client's own discover, or its call, waits on it).
var killMoments = []struct {
	name string
	opts fixture.Options
	wait string // the server's stderr line that says the moment has come
}{
	{"mid-call", fixture.Options{BothEras: true}, "fixture: sleep started"},
	{"mid-probe", fixture.Options{IgnoreDiscover: true}, "unknown first message server/discover; ignored"},
}

const sleepCall = `[{"op":"tools/call","name":"sleep","arguments":{"ms":600000}}]`

// TestNoUpstreamOutlivesKilledClients: 2026-era clients (the TypeScript SDK v2 pinned to 2026-07-28, the Go SDK's
// default client) killed mid-call and mid-probe, over `mcp-gateway stdio` (the gateway is the client's child: it
// must end when the client's pipes close) and over HTTP (then the gateway is SIGKILLed): no process of the
// server, its own children included, is left once the gateway is gone.
func TestNoUpstreamOutlivesKilledClients(t *testing.T) {
	ts := tsHarness(t)
	for _, m := range killMoments {
		t.Run("stdio/ts-pinned/"+m.name, func(t *testing.T) {
			cfg, marker := markedServerWith(t, m.opts)
			dir := t.TempDir()
			args := append([]string{filepath.Join(ts, "v2client.mjs"), "--mode=2026-07-28", "--timeout=600000", "--steps=" + sleepCall, "--"},
				gatewayStdioArgs(dir, cfg)...)
			client := startPiped(t, exec.Command("node", args...))
			awaitLog(t, filepath.Join(dir, "stdio-gateway.log"), m.wait)
			_ = client.cmd.Process.Kill() // the client alone: its gateway sees its stdin close
			_ = client.cmd.Wait()
			awaitNoMarked(t, marker, "after the client was killed "+m.name)
		})
		t.Run("stdio/go-default/"+m.name, func(t *testing.T) {
			cfg, marker := markedServerWith(t, m.opts)
			dir := t.TempDir()
			gw := startPiped(t, exec.Command(gatewayBin, gatewayStdioArgs(dir, cfg)[1:]...))
			// The client in this process: its death is its pipes to the gateway closing.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				client := mcp.NewClient(&mcp.Implementation{Name: "go-default", Version: "1"}, nil)
				cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: gw.out, Writer: gw.in}, nil)
				if err != nil {
					return
				}
				_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 600000}})
			}()
			awaitLog(t, filepath.Join(dir, "stdio-gateway.log"), m.wait)
			gw.in.Close()
			gw.out.Close()
			if err := waitExit(gw.cmd, 60*time.Second); err != nil {
				t.Fatal(err)
			}
			awaitNoMarked(t, marker, "after the client's pipes closed "+m.name)
		})
	}

	// Over HTTP the gateway starts its servers before it serves (a probe that hangs would only delay the launch):
	// the clients are killed mid-call, and mid-probe of their own (the Go SDK's default client's server/discover
	// to the gateway, dropped as soon as it is sent).
	t.Run("http/ts-pinned/mid-call", func(t *testing.T) {
		cfg, marker := markedServerWith(t, fixture.Options{BothEras: true})
		sb := newTestbox(t)
		sb.mustLaunch(cfg)
		client := startPiped(t, exec.Command("node", filepath.Join(ts, "v2client.mjs"), "--mode=2026-07-28", "--timeout=600000",
			"--token="+sb.token, "--steps="+sleepCall, sb.url()+"/mcp"))
		awaitLog(t, sb.logFile, "fixture: sleep started")
		_ = client.cmd.Process.Kill()
		_ = client.cmd.Wait()
		killGatewayAndAwait(t, sb, marker)
	})
	t.Run("http/go-default/mid-call", func(t *testing.T) {
		cfg, marker := markedServerWith(t, fixture.Options{BothEras: true})
		sb := newTestbox(t)
		sb.mustLaunch(cfg)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		client := mcp.NewClient(&mcp.Implementation{Name: "go-default", Version: "1"}, nil)
		tr := &mcp.StreamableClientTransport{Endpoint: sb.url() + "/mcp", HTTPClient: &http.Client{Transport: fixture.Bearer(sb.token, http.DefaultTransport)}}
		cs, err := client.Connect(ctx, tr, nil)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("the default client negotiated %s, want 2026-07-28", v)
		}
		go func() {
			_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 600000}})
		}()
		awaitLog(t, sb.logFile, "fixture: sleep started")
		cancel() // the client's request ends as a killed client's would: its connection closes
		killGatewayAndAwait(t, sb, marker)
	})
	t.Run("http/go-default/mid-probe", func(t *testing.T) {
		cfg, marker := markedServerWith(t, fixture.Options{BothEras: true})
		sb := newTestbox(t)
		sb.mustLaunch(cfg)
		ctx, cancel := context.WithCancel(context.Background())
		// The discover's request is cancelled as soon as its body is on the wire.
		sent := &cancelAfterSend{base: fixture.Bearer(sb.token, http.DefaultTransport), cancel: cancel}
		client := mcp.NewClient(&mcp.Implementation{Name: "go-default", Version: "1"}, nil)
		tr := &mcp.StreamableClientTransport{Endpoint: sb.url() + "/mcp", HTTPClient: &http.Client{Transport: sent}}
		if cs, err := client.Connect(ctx, tr, nil); err == nil {
			cs.Close()
			t.Fatal("connect succeeded: the probe was not cut")
		}
		killGatewayAndAwait(t, sb, marker)
	})
}

// cancelAfterSend cancels a request's context once the request has been handed to the connection: a client that
// dies right after sending.
type cancelAfterSend struct {
	base   http.RoundTripper
	cancel context.CancelFunc
}

func (c *cancelAfterSend) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	c.cancel()
	return resp, err
}

// killGatewayAndAwait SIGKILLs a launched gateway (nothing of it can clean up) and waits until no process of its
// server, the server's own children included, is left.
func killGatewayAndAwait(t *testing.T, sb *testbox, marker string) {
	t.Helper()
	if len(markedProcesses(marker)) == 0 {
		t.Fatal("the server's child is not running: the test would prove nothing")
	}
	pid := sb.pid()
	if pid == 0 {
		t.Fatal("no gateway pid")
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	awaitNoMarked(t, marker, "after SIGKILL of the gateway")
}

// waitExit waits for cmd to exit by itself, within limit.
func waitExit(cmd *exec.Cmd, limit time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		return nil
	case <-time.After(limit):
		return fmt.Errorf("%s did not exit within %s of its client's pipes closing", cmd.Path, limit)
	}
}
