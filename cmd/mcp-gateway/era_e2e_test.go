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
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// v2Line is one JSON line of test/ts/v2client.mjs (the TypeScript SDK v2 client).
type v2Line struct {
	Op              string            `json:"op"`
	Era             string            `json:"era"`
	ProtocolVersion string            `json:"protocolVersion"`
	Tools           []string          `json:"tools"`
	Prompts         []string          `json:"prompts"`
	Resources       []string          `json:"resources"`
	Templates       []string          `json:"templates"`
	Result          json.RawMessage   `json:"result"`
	Progress        []json.RawMessage `json:"progress"`
	Notifications   []struct {
		Method string `json:"method"`
	} `json:"notifications"`
	InputRequests []struct {
		Method string `json:"method"`
		Mode   string `json:"mode"`
	} `json:"inputRequests"`
	Error *struct {
		Message string          `json:"message"`
		Code    any             `json:"code"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// runV2Client runs v2client.mjs with args and returns its lines (the exit code is not an error: a failed step is
// a line of its own).
func runV2Client(t *testing.T, ts string, args ...string) []v2Line {
	t.Helper()
	return v2ClientLines(t, ts, args, func(b []byte) (v2Line, error) {
		var l v2Line
		return l, json.Unmarshal(b, &l)
	})
}

// v2ClientLines runs v2client.mjs with args and decodes each line it prints with decode.
func v2ClientLines[L any](t *testing.T, ts string, args []string, decode func([]byte) (L, error)) []L {
	t.Helper()
	cmd := exec.Command("node", append([]string{filepath.Join(ts, "v2client.mjs"), "--timeout=120000"}, args...)...)
	cmd.Dir = ts
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("v2client.mjs: %v", err)
	}
	var lines []L
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		l, err := decode(sc.Bytes())
		if err != nil {
			t.Fatalf("v2client.mjs line %q: %v\nstderr: %s", sc.Text(), err, stderr.String())
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		t.Fatalf("v2client.mjs printed nothing (%v)\nstderr: %s", err, stderr.String())
	}
	return lines
}

const v2Steps = `[{"op":"tools/list"},{"op":"tools/call","name":"echo","arguments":{"message":"from v2"}}]`

// checkFallback: the client connected on the 2025 era, listed server-everything's tools and called echo.
func checkFallback(t *testing.T, lines []v2Line) {
	t.Helper()
	if len(lines) != 3 {
		t.Fatalf("v2client printed %d lines, want connect + 2 steps: %+v", len(lines), lines)
	}
	if c := lines[0]; c.Error != nil || c.Era != "legacy" || c.ProtocolVersion != "2025-11-25" {
		t.Errorf("connect: %+v; want the 2025 era (2025-11-25)", c)
	}
	if l := lines[1]; l.Error != nil || !slices.Contains(l.Tools, "echo") {
		t.Errorf("tools/list: %+v %+v; want server-everything's tools", l, l.Error)
	}
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if l := lines[2]; l.Error != nil || json.Unmarshal(l.Result, &res) != nil || len(res.Content) != 1 || res.Content[0].Text != "Echo: from v2" {
		t.Errorf("tools/call echo: %+v (%s); want the text 'Echo: from v2'", l, l.Result)
	}
}

// checkModern: the client connected on the 2026 era (no session), listed server-everything's tools and called
// echo, whose result carried resultType (the TS SDK v2 client refuses a 2026 result without it).
func checkModern(t *testing.T, lines []v2Line) {
	t.Helper()
	if len(lines) != 3 {
		t.Fatalf("v2client printed %d lines, want connect + 2 steps: %+v", len(lines), lines)
	}
	if c := lines[0]; c.Error != nil || c.Era != "modern" || c.ProtocolVersion != "2026-07-28" {
		t.Errorf("connect: %+v; want the 2026 era (2026-07-28)", c)
	}
	if l := lines[1]; l.Error != nil || !slices.Contains(l.Tools, "echo") {
		t.Errorf("tools/list: %+v %+v; want server-everything's tools", l, l.Error)
	}
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if l := lines[2]; l.Error != nil || json.Unmarshal(l.Result, &res) != nil || len(res.Content) != 1 || res.Content[0].Text != "Echo: from v2" {
		t.Errorf("tools/call echo: %+v (%s); want the text 'Echo: from v2'", l, l.Result)
	}
}

// TestTypeScriptV2Client: the official TypeScript SDK v2 client through the gateway, over HTTP and stdio, in
// its default (legacy) mode, in auto mode, which probes server/discover first, and pinned to 2026-07-28. Over HTTP
// the gateway serves both eras: legacy stays on 2025-11-25, auto and a pinned client get 2026-07-28 (era2026_e2e_test.go has the
// pinned client's full run). The same in stdio mode, where the connection's opening (initialize or
// server/discover) picks its era.
func TestTypeScriptV2Client(t *testing.T) {
	ts := tsHarness(t)
	bin := npmServer(t, ts, "mcp-server-everything")
	cfg := mcpConfig(t, map[string]any{"everything": map[string]any{"runCmd": "'" + bin + "' stdio"}})

	t.Run("http", func(t *testing.T) {
		sb := newTestbox(t)
		sb.mustLaunch(cfg)
		url := sb.url() + "/mcp"
		t.Run("legacy", func(t *testing.T) {
			checkFallback(t, runV2Client(t, ts, "--mode=legacy", "--token="+sb.token, "--steps="+v2Steps, url))
		})
		for _, mode := range []string{"auto", "2026-07-28"} {
			t.Run(mode, func(t *testing.T) {
				checkModern(t, runV2Client(t, ts, "--mode="+mode, "--token="+sb.token, "--steps="+v2Steps, url))
			})
		}
	})
	t.Run("stdio", func(t *testing.T) {
		for _, mode := range []string{"legacy", "auto", "2026-07-28"} {
			t.Run(mode, func(t *testing.T) {
				args := append([]string{"--mode=" + mode, "--steps=" + v2Steps, "--"}, gatewayStdioArgs(t.TempDir(), cfg)...)
				if mode == "legacy" {
					checkFallback(t, runV2Client(t, ts, args...))
				} else {
					checkModern(t, runV2Client(t, ts, args...))
				}
			})
		}
	})
}

// markedProcesses lists the pids of the running `sleep <marker>` processes (the gateway's own argv carries the
// marker too, in its config).
func markedProcesses(marker string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || string(b) != "sleep\x00"+marker+"\x00" {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && bytes.HasPrefix(bytes.TrimSpace(st[i+1:]), []byte("Z")) {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// awaitNoMarked waits until no `sleep <marker>` runs. The bound is for a loaded machine: on an idle one they
// are gone within milliseconds. Those still there at the end are reported and killed.
func awaitNoMarked(t *testing.T, marker, what string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && len(markedProcesses(marker)) > 0 {
		time.Sleep(50 * time.Millisecond)
	}
	if left := markedProcesses(marker); len(left) > 0 {
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Errorf("%s: processes of the upstream still running 60s later: %v", what, left)
	}
}

// markedServer is a config whose one server is a shell that starts a child of its own (a sleep whose argv carries
// a marker unique to the test) beside the fixture: the shape of npx -> node, where the process the gateway
// started is not the only one.
func markedServer(t *testing.T) (cfg, marker string) {
	marker = fmt.Sprintf("3600.%09d", time.Now().UnixNano()%1e9)
	run := "sleep " + marker + " & " + fixture.ShellCommand(fixture.Options{Name: "marked"}) + "; exit 0"
	return mcpConfig(t, map[string]any{"marked": map[string]any{"runCmd": run}}), marker
}

// TestNoUpstreamOutlivesGateway: whatever ends a stdio gateway (a SIGKILL, or a TypeScript v2 client in auto
// mode, whose probe runs a sibling gateway it SIGTERMs and SIGKILLs a second later, killed itself mid-probe or
// not), no process of its servers is left, the children they spawned included (Pdeathsig reaches only the
// process the gateway started).
func TestNoUpstreamOutlivesGateway(t *testing.T) {
	t.Run("sigkill", func(t *testing.T) {
		cfg, marker := markedServer(t)
		gw := startPiped(t, exec.Command(gatewayBin, gatewayStdioArgs(t.TempDir(), cfg)[1:]...))
		initializeStdio(t, gw)
		if len(markedProcesses(marker)) == 0 {
			t.Fatal("the server's child is not running: the test would prove nothing")
		}
		_ = gw.cmd.Process.Kill() // the gateway alone, not its session
		_ = gw.cmd.Wait()
		awaitNoMarked(t, marker, "after SIGKILL of the gateway")
	})

	ts := tsHarness(t)
	t.Run("probe", func(t *testing.T) {
		cfg, marker := markedServer(t)
		args := append([]string{"--mode=auto", `--steps=[{"op":"tools/list"}]`, "--"}, gatewayStdioArgs(t.TempDir(), cfg)...)
		lines := runV2Client(t, ts, args...)
		if lines[0].Error != nil || len(lines) != 2 || lines[1].Error != nil {
			t.Fatalf("auto client: %+v", lines)
		}
		awaitNoMarked(t, marker, "after an auto-mode client's run")
	})
	t.Run("client-killed-mid-probe", func(t *testing.T) {
		cfg, marker := markedServer(t)
		args := append([]string{filepath.Join(ts, "v2client.mjs"), "--mode=auto", "--"}, gatewayStdioArgs(t.TempDir(), cfg)...)
		client := exec.Command("node", args...)
		client.Dir = ts
		if err := client.Start(); err != nil {
			t.Fatal(err)
		}
		// Killed as soon as the probe's gateway has started its server: mid-probe.
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for ctx.Err() == nil && len(markedProcesses(marker)) == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		_ = client.Process.Kill()
		_ = client.Wait()
		if ctx.Err() != nil {
			t.Fatal("the probe's gateway never started its server")
		}
		awaitNoMarked(t, marker, "after the client was killed mid-probe")
	})
}
