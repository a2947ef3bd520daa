package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// startV2HTTPServer runs test/ts/v2server.mjs over HTTP with args until the test ends and returns its URL.
func startV2HTTPServer(t *testing.T, ts string, args ...string) string {
	t.Helper()
	cmd := exec.Command("node", append([]string{filepath.Join(ts, "v2server.mjs"), "--http=0"}, args...)...)
	cmd.Dir = ts
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

// TestUpstream2026Only: a server that speaks only MCP 2026-07-28 (the TypeScript SDK v2 with legacy: 'reject',
// which refuses initialize) launches behind the gateway, over stdio and as a url, beside a 2025-only fixture; a Go
// SDK client on the 2025 era lists both servers' tools and calls each, the 2026 server's with progress.
func TestUpstream2026Only(t *testing.T) {
	ts := tsHarness(t)
	fx := map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "fx", Tools: []string{fixture.NoTools}, ExtraTools: []string{"hello"}})}
	for _, c := range []struct {
		name string
		v2   func(t *testing.T) map[string]any
	}{
		{"stdio", func(t *testing.T) map[string]any {
			return map[string]any{"runCmd": "node '" + filepath.Join(ts, "v2server.mjs") + "' --legacy=reject"}
		}},
		{"url", func(t *testing.T) map[string]any {
			return map[string]any{"url": startV2HTTPServer(t, ts, "--legacy=reject")}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sb := newTestbox(t)
			sb.mustLaunch(mcpConfig(t, map[string]any{"v2": c.v2(t), "fx": fx}))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			progress := make(chan float64, 16)
			logs := make(chan string, 16)
			cs := sb.connect(ctx, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
				progress <- req.Params.Progress
			}, LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
				logs <- fmt.Sprint(req.Params.Data)
			}})
			if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
				t.Fatal(err)
			}
			if v := cs.InitializeResult().ProtocolVersion; v >= "2026" {
				t.Logf("the client negotiated %s with the gateway", v)
			}
			names := toolNames(t, ctx, cs)
			for _, want := range []string{"echo", "progress", "hello"} {
				if !slices.Contains(names, want) {
					t.Fatalf("tools %v: want %q\nlog:\n%s", names, want, sb.log())
				}
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "through the gateway"}})
			if err != nil || res.IsError || text(t, res) != "through the gateway" {
				t.Fatalf("echo on the 2026 server: %+v %v\nlog:\n%s", res, err, sb.log())
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{}})
			if err != nil || res.IsError || text(t, res) != "fx:hello" {
				t.Fatalf("hello on the 2025 fixture: %+v %v", res, err)
			}
			params := &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{"steps": 2}}
			params.SetProgressToken("p-2026")
			res, err = cs.CallTool(ctx, params)
			if err != nil || res.IsError || text(t, res) != "done 2" {
				t.Fatalf("progress on the 2026 server: %+v %v", res, err)
			}
			// The client hands notifications to its handler on a goroutine of their own: await them.
			for i := 1; i <= 2; i++ {
				select {
				case got := <-progress:
					if got != float64(i) {
						t.Errorf("progress %d: got %v", i, got)
					}
				case <-ctx.Done():
					t.Fatalf("progress %d never came\nlog:\n%s", i, sb.log())
				}
				select {
				case <-logs:
				case <-ctx.Done():
					t.Fatalf("log message %d never came", i)
				}
			}
		})
	}
}

// TestNoUpstreamOutlivesGateway2026Restart: a server that exits on the era probe (server/discover) is started
// twice, the second time with initialize: the first start's processes, the children its shell spawned included,
// are gone once the server is ready, and a SIGKILL of the gateway leaves none of the second's
// (TestNoUpstreamOutlivesGateway's other cases).
func TestNoUpstreamOutlivesGateway2026Restart(t *testing.T) {
	marker := fmt.Sprintf("3601.%09d", time.Now().UnixNano()%1e9)
	cfg := mcpConfig(t, map[string]any{"dies": map[string]any{"runCmd": "sleep " + marker + " & " + fixture.ShellCommand(fixture.Options{Name: "dies", DieOnDiscover: true})}})
	dir := t.TempDir()
	gw := startPiped(t, exec.Command(gatewayBin, gatewayStdioArgs(dir, cfg)[1:]...))
	// The answer to initialize comes once the server is ready (on its second start).
	initializeStdio(t, gw)
	if b, _ := os.ReadFile(filepath.Join(dir, "stdio-gateway.log")); !bytes.Contains(b, []byte("starting it again with the 2025-11-25 initialize")) {
		t.Fatalf("the server was not started twice: the test would prove nothing\n%s", b)
	}
	// The first start's group was killed when its shell exited; the kill is sent after the exit is reaped.
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && len(markedProcesses(marker)) > 1 {
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(markedProcesses(marker)); n != 1 {
		t.Errorf("%d marked processes run beside a ready server, want 1 (its second start's)", n)
	}
	_ = gw.cmd.Process.Kill() // the gateway alone, not its session
	_ = gw.cmd.Wait()
	awaitNoMarked(t, marker, "after SIGKILL of the gateway")
}
