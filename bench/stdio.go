package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioInFlight is the number of requests the stdio rows keep in flight on
// their one session, as the paths rows keep 8 sessions busy.
const stdioInFlight = 8

// stdioRuns measures stdio mode as a command-line MCP client runs it:
// `mcp-gateway stdio --config ...` started with pipes, one client (the Go
// SDK client over CommandTransport) with stdioInFlight tools/call requests
// in flight on its one session, against one fixture server. The row is the
// gateway process's CPU per call (its /proc CPU time over the run, divided
// by the calls); next to it, the same client on the fixture server itself
// (the server's CPU per call), for comparison.
func (b *bench) stdioRuns(ctx context.Context) error {
	dir, err := os.MkdirTemp(b.tmp, "stdio-")
	if err != nil {
		return err
	}
	cfg, err := json.Marshal(fixtureServers(1, plainServer))
	if err != nil {
		return err
	}
	cmd := exec.Command(b.bin, "stdio", "--config", string(cfg),
		"--log-file", filepath.Join(dir, "mcp-gateway.log"),
		"--servers-dir", filepath.Join(dir, "servers"),
		"--catalog", filepath.Join(dir, "catalog.json"),
		"--startup-timeout", "50s",
		"--shutdown-grace", "3s",
	)
	cmd.Env = os.Environ()
	if b.opt.profile != "" {
		if err := os.MkdirAll(b.opt.profile, 0o755); err != nil {
			return err
		}
		f, err := filepath.Abs(filepath.Join(b.opt.profile, "stdio.pprof"))
		if err != nil {
			return err
		}
		cmd.Env = append(cmd.Env, "MCP_GATEWAY_CPUPROFILE="+f)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b.logf("starting mcp-gateway stdio with 1 server")
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-agent", Version: "1"}, nil)
	tr := &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}
	cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: b.opt.protocol})
	if err != nil {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		return fmt.Errorf("connect to mcp-gateway stdio: %w\n%s", err, stderr.String())
	}
	s, cpu, err := stdioLoad(ctx, b, cs, cmd.Process.Pid, "gateway (stdio mode)")
	// Closing stdin ends the gateway: it stops its server and exits (the
	// profile, if any, is written then); CommandTransport waits for it.
	_ = cs.Close()
	if err != nil {
		return err
	}
	if st := cmd.ProcessState; st == nil || !st.Success() {
		return fmt.Errorf("mcp-gateway stdio did not exit cleanly after stdin closed (%v)\n%s", st, stderr.String())
	}
	b.tbl.add(fmt.Sprintf("gateway CPU per call, stdio mode, 1 client, %d requests in flight", stdioInFlight),
		fmt.Sprintf("%s (%s)", dur(cpu), throughput(s)), "≤ 150 µs", judge(cpu <= targetCPUPerCall))

	d, err := startDirect(ctx, plainServer(0), b.opt.protocol)
	if err != nil {
		return err
	}
	defer d.close()
	ds, dcpu, err := stdioLoad(ctx, b, d.cs, d.pid(), "direct stdio")
	if err != nil {
		return err
	}
	b.tbl.add(fmt.Sprintf("direct stdio, 1 client, %d requests in flight (server CPU per call)", stdioInFlight),
		fmt.Sprintf("%s (%s)", dur(dcpu), throughput(ds)), "", none)
	return nil
}

// stdioLoad warms cs up, then keeps stdioInFlight echo calls in flight on
// it for the run's duration and returns the load's stats and pid's CPU time
// per call over it.
func stdioLoad(ctx context.Context, b *bench, cs *mcp.ClientSession, pid int, what string) (stats, time.Duration, error) {
	workers := make([]call, stdioInFlight)
	for i := range workers {
		workers[i] = echoCall(cs, directEchoTool)
	}
	if _, err := drive(ctx, workers, 0, warmupCalls); err != nil {
		return stats{}, 0, fmt.Errorf("%s warm-up: %w", what, err)
	}
	b.logf("%s, 1 client, %d requests in flight, %s", what, stdioInFlight, b.opt.duration)
	cpu0, err := cpuTime(pid)
	if err != nil {
		return stats{}, 0, err
	}
	s, err := drive(ctx, workers, b.opt.duration, 0)
	if err != nil {
		return stats{}, 0, fmt.Errorf("%s: %w", what, err)
	}
	cpu1, err := cpuTime(pid)
	if err != nil {
		return stats{}, 0, err
	}
	return s, perCall(cpu1-cpu0, s.calls), nil
}
