package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/supervisor"
)

// direct is one fixture server run by the benchmark itself over stdio with
// the SDK's own CommandTransport: the no-gateway baseline.
type direct struct {
	cs  *mcp.ClientSession
	cmd *exec.Cmd
}

// startDirect starts a fixture server (the benchmark binary re-executed) and
// connects the same Go SDK client the gateway runs are measured with, asking
// for protocol ("" = the SDK's latest).
func startDirect(ctx context.Context, opts fixture.Options, protocol string) (*direct, error) {
	argv, env := fixture.Command(opts)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-agent", Version: "1"}, nil)
	tr := &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}
	cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		return nil, fmt.Errorf("connect to direct server: %w", err)
	}
	return &direct{cs: cs, cmd: cmd}, nil
}

// pid is the server process's pid.
func (d *direct) pid() int { return d.cmd.Process.Pid }

// close ends the session; CommandTransport closes stdin, the fixture exits
// on EOF and is reaped (escalating to signals if it does not).
func (d *direct) close() {
	d.cs.Close()
}

// startServersDirect starts n servers at once, the way the gateway starts
// its servers, and returns the wall time until every one has completed the
// MCP handshake and listed its tools: the servers' own start time, which is
// what a launch cannot go below. It speaks the protocol version the gateway
// pins upstream, so the handshakes are the same.
func startServersDirect(ctx context.Context, n int, opts func(i int) fixture.Options) (time.Duration, error) {
	ds := make([]*direct, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	began := time.Now()
	for i := range n {
		wg.Go(func() {
			d, err := startDirect(ctx, opts(i), supervisor.ProtocolVersion)
			if err != nil {
				errs[i] = err
				return
			}
			ds[i] = d
			for _, err := range d.cs.Tools(ctx, nil) {
				if err != nil {
					errs[i] = fmt.Errorf("list tools: %w", err)
					return
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(began)
	var closing sync.WaitGroup
	for _, d := range ds {
		if d != nil {
			closing.Go(d.close)
		}
	}
	closing.Wait()
	for _, err := range errs {
		if err != nil {
			return 0, fmt.Errorf("start %d servers directly: %w", n, err)
		}
	}
	return took, nil
}
