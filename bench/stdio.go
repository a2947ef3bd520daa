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

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// stdioInFlight is the number of requests the stdio rows keep in flight on
// their one session, as the paths rows keep 8 sessions busy.
const stdioInFlight = 8

// stdioRuns measures stdio mode as a command-line MCP client runs it:
// `mcp-gateway stdio --config ...` started with pipes, one client (the Go
// SDK client over CommandTransport) with stdioInFlight requests in flight on
// its one session. A row per request stdio mode forwards (stdioMethods;
// completion/complete goes to a second server, as in the paths rows): the
// gateway process's CPU per call (its /proc CPU time over the run, divided
// by the calls). Then the same client's tools/call on the fixture server
// itself (the server's CPU per call), for comparison. Stdio mode answers
// these requests on its raw path (internal/stdioserve), outside the Go
// SDK's server session.
func (b *bench) stdioRuns(ctx context.Context) error {
	dir, err := os.MkdirTemp(b.tmp, "stdio-")
	if err != nil {
		return fmt.Errorf("stdio rows: temp dir: %w", err)
	}
	// As the paths rows: a second server, with completions, answers
	// completion/complete only.
	cfg, err := json.Marshal(fixtureServers(2, func(i int) fixture.Options {
		o := plainServer(i)
		o.Verbatim = i == 1
		return o
	}))
	if err != nil {
		return fmt.Errorf("stdio rows: encode config: %w", err)
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
			return fmt.Errorf("stdio rows: profile dir: %w", err)
		}
		f, err := filepath.Abs(filepath.Join(b.opt.profile, "stdio.pprof"))
		if err != nil {
			return fmt.Errorf("stdio rows: profile path: %w", err)
		}
		cmd.Env = append(cmd.Env, "MCP_GATEWAY_CPUPROFILE="+f)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b.logf("starting mcp-gateway stdio with 2 servers")
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
	type result struct {
		what string
		s    stats
		cpu  time.Duration
	}
	var results []result
	for _, m := range stdioMethods() {
		var r result
		r.what = m.name
		if r.s, r.cpu, err = stdioLoad(ctx, b, m.call(cs), cmd.Process.Pid, "gateway (stdio mode), "+m.name); err != nil {
			break
		}
		results = append(results, r)
	}
	// Closing stdin ends the gateway: it stops its servers and exits (the
	// profile, if any, is written then); CommandTransport waits for it.
	_ = cs.Close()
	if err != nil {
		return fmt.Errorf("stdio rows: %w", err)
	}
	if st := cmd.ProcessState; st == nil || !st.Success() {
		return fmt.Errorf("mcp-gateway stdio did not exit cleanly after stdin closed (%v)\n%s", st, stderr.String())
	}
	for _, r := range results {
		b.tbl.add(fmt.Sprintf("gateway CPU per call, stdio mode, 1 client, %d requests in flight, %s", stdioInFlight, r.what),
			fmt.Sprintf("%s (%s)", dur(r.cpu), throughput(r.s)), "≤ 150 µs", judge(r.cpu <= targetCPUPerCall))
	}

	d, err := startDirect(ctx, plainServer(0), b.opt.protocol)
	if err != nil {
		return fmt.Errorf("stdio rows: start the direct server: %w", err)
	}
	defer d.close()
	first := stdioMethods()[0]
	ds, dcpu, err := stdioLoad(ctx, b, first.call(d.cs), d.pid(), "direct stdio, "+first.name)
	if err != nil {
		return fmt.Errorf("stdio rows: direct %s: %w", first.name, err)
	}
	b.tbl.add(fmt.Sprintf("direct stdio, 1 client, %d requests in flight, %s (server CPU per call)", stdioInFlight, first.name),
		fmt.Sprintf("%s (%s)", dur(dcpu), throughput(ds)), "", none)
	return nil
}

// stdioLoad warms up, then keeps stdioInFlight calls of c in flight for
// the run's duration and returns the load's stats and pid's CPU time per
// call over it.
func stdioLoad(ctx context.Context, b *bench, c call, pid int, what string) (stats, time.Duration, error) {
	workers := make([]call, stdioInFlight)
	for i := range workers {
		workers[i] = c
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

// stdioMethods are the requests stdio mode forwards to one server, each
// checked as the paths rows check theirs (the same calls).
func stdioMethods() []stdioMethod {
	return []stdioMethod{
		{"tools/call", func(cs *mcp.ClientSession) call { return echoCall(cs, directEchoTool) }},
		{"prompts/get", promptGetCall},
		{"resources/read", resourceReadCall},
		{"completion/complete", completeCall},
	}
}

// stdioMethod is one request of the stdio rows, by its method's name.
type stdioMethod struct {
	name string
	call func(*mcp.ClientSession) call
}

// promptGetCall gets the fixture's greet prompt and checks its one message.
func promptGetCall(cs *mcp.ClientSession) call {
	return func(ctx context.Context) error {
		res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "bench"}})
		if err != nil {
			return fmt.Errorf("prompts/get greet: %w", err)
		}
		if len(res.Messages) != 1 {
			return fmt.Errorf("prompts/get greet: %d messages, want 1", len(res.Messages))
		}
		return nil
	}
}

// resourceReadCall reads the direct server's resource and checks its URI.
func resourceReadCall(cs *mcp.ClientSession) call {
	uri := fixture.ResourceURI(directServerName)
	return func(ctx context.Context) error {
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			return fmt.Errorf("resources/read %s: %w", uri, err)
		}
		if len(res.Contents) != 1 || res.Contents[0].URI != uri {
			return fmt.Errorf("resources/read %s: contents %v", uri, res.Contents)
		}
		return nil
	}
}

// completeCall completes the verbatim prompt's argument and checks that
// values came.
func completeCall(cs *mcp.ClientSession) call {
	return func(ctx context.Context) error {
		res, err := cs.Complete(ctx, &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: fixture.VerbatimPrompt},
			Argument: mcp.CompleteParamsArgument{Name: "topic", Value: "a"},
		})
		if err != nil {
			return fmt.Errorf("completion/complete: %w", err)
		}
		if len(res.Completion.Values) == 0 {
			return fmt.Errorf("completion/complete: no values")
		}
		return nil
	}
}
