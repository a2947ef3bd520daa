package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestTokenNeverInServerEnv runs the real binary in each of its modes with
// GATEWAY_ACCESS_TOKEN set in its environment, and a server whose shell
// writes its whole environment to a file before starting the fixture. The
// token must be in neither that file, nor the fixture's own view (its env
// tool), nor its /proc environ. Each mode removes the token on its own path
// (launch hands the background gateway an environment without it, serve
// unsets it, stdio relies on the servers' environment alone), so only a
// check in every mode covers the servers' environment itself.
func TestTokenNeverInServerEnv(t *testing.T) {
	for _, mode := range []string{"launch", "serve", "stdio"} {
		t.Run(mode, func(t *testing.T) {
			sb := newTestbox(t)
			envFile := filepath.Join(sb.dir, "server.env")
			cfg := mcpConfig(t, map[string]any{"printer": map[string]any{
				"runCmd": "env > '" + envFile + "'; " + fixture.ShellCommand(fixture.Options{Tools: []string{"env", "pid"}}),
			}})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var cs *mcp.ClientSession
			switch mode {
			case "launch":
				sb.mustLaunch(cfg)
				cs = sb.connect(ctx, nil)
			case "serve":
				cmd := newCmd(gatewayBin, append([]string{"serve", "--config", cfg}, sb.flags()...)...)
				cmd.Env = append(os.Environ(), "GATEWAY_ACCESS_TOKEN="+sb.token)
				cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
				lines := startLines(t, cmd)
				select {
				case l := <-lines:
					if !strings.HasPrefix(l, "mcp-gateway ready on") {
						t.Fatalf("first stdout line %q", l)
					}
				case <-ctx.Done():
					t.Fatal("serve never became ready")
				}
				t.Cleanup(func() { stopServe(t, cmd, 15*time.Second) })
				cs = sb.connect(ctx, nil)
			case "stdio":
				cmd := exec.Command(gatewayBin, "stdio", "--config", cfg, "--log-file", sb.logFile,
					"--catalog", sb.catalog, "--servers-dir", sb.serversDir)
				cmd.Env = append(os.Environ(), "GATEWAY_ACCESS_TOKEN="+sb.token)
				cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				client := mcp.NewClient(&mcp.Implementation{Name: "desktop-app", Version: "1"}, nil)
				var err error
				cs, err = client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Minute}, nil)
				if err != nil {
					t.Fatalf("connect: %v\nstderr: %s", err, stderr.String())
				}
				t.Cleanup(func() { killSession(cmd.Process.Pid) })
			}
			defer cs.Close()

			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "env", Arguments: map[string]any{"name": "GATEWAY_ACCESS_TOKEN"}})
			if err != nil {
				t.Fatal(err)
			}
			if got := text(t, res); !res.IsError || got != "unset" {
				t.Errorf("the server sees GATEWAY_ACCESS_TOKEN: env tool = %q", got)
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "pid"})
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(text(t, res))
			if err != nil {
				t.Fatal(err)
			}
			environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(environ), fixture.EnvFixture+"=1") {
				t.Fatalf("pid %d is not the fixture: %q", pid, environ)
			}
			printed, err := os.ReadFile(envFile)
			if err != nil {
				t.Fatalf("the server's shell wrote no environment: %v", err)
			}
			if !strings.Contains(string(printed), "PATH=") {
				t.Fatalf("the printed environment looks empty: %q", printed)
			}
			for what, env := range map[string]string{"its shell's env": string(printed), "its /proc environ": string(environ)} {
				if strings.Contains(env, sb.token) || strings.Contains(env, "GATEWAY_ACCESS_TOKEN=") {
					t.Errorf("the token is in the server's environment (%s)", what)
				}
			}
		})
	}
}
