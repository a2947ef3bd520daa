package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkPathSessions is the concurrency of the paths rows, as of the CPU
// target.
const sdkPathSessions = 8

// pathRuns measures the gateway's CPU per forwarded call on each of its
// paths, at 8 sessions against one server: the fast path (a plain call,
// served on the HTTP lane); a call with a progress token (the fast path
// too, but off the lane: the lane cannot stream, so each such call goes
// back to net/http); a call from a client that offers sampling (the fast
// path off the lane: the server could ask the agent something on the
// call's stream); and the SDK path (prompts/get, which the Go SDK's server
// session answers: decoded into its types, through its handlers, the
// result framed as SSE; the fast path leaves it only tools/call it cannot
// read as the SDK would, such as a null progress token). All relay the
// server's result bytes.
func (b *bench) pathRuns(ctx context.Context) error {
	b.logf("launching a gateway with 1 server for the paths rows")
	var env []string
	if b.opt.profile != "" {
		// A profile of both paths: the SDK path's frames tell them apart.
		f, err := filepath.Abs(filepath.Join(b.opt.profile, "paths.pprof"))
		if err != nil {
			return err
		}
		env = append(env, "MCP_GATEWAY_CPUPROFILE="+f)
	}
	bx, _, err := b.launch(ctx, "paths", fixtureServers(1, plainServer), env...)
	if err != nil {
		return err
	}
	css, err := bx.connectN(ctx, sdkPathSessions)
	if err != nil {
		return err
	}
	defer closeAll(css)
	sampling := make([]*mcp.ClientSession, sdkPathSessions)
	hc := bx.httpClient()
	for i := range sampling {
		client := mcp.NewClient(&mcp.Implementation{Name: "bench-agent", Version: "1"}, &mcp.ClientOptions{
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return nil, fmt.Errorf("not asked in the benchmark")
			},
		})
		tr := &mcp.StreamableClientTransport{Endpoint: "http://" + bx.addr + "/mcp", HTTPClient: hc}
		if sampling[i], err = client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: bx.protocol}); err != nil {
			return fmt.Errorf("connect to gateway: %w", err)
		}
	}
	defer closeAll(sampling)
	var token atomic.Int64
	progressCall := func(cs *mcp.ClientSession) call {
		const text = "the quick brown fox jumps over the lazy dog"
		args := map[string]any{"text": text}
		return func(ctx context.Context) error {
			p := &mcp.CallToolParams{Name: directEchoTool, Arguments: args}
			p.SetProgressToken("bench-" + strconv.FormatInt(token.Add(1), 10))
			res, err := cs.CallTool(ctx, p)
			if err != nil {
				return fmt.Errorf("call %s: %w", directEchoTool, err)
			}
			return expectText(res, directEchoTool, text)
		}
	}
	promptGet := func(cs *mcp.ClientSession) call {
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
	for _, path := range []struct {
		name     string
		call     func(*mcp.ClientSession) call
		sessions []*mcp.ClientSession
	}{
		{"fast path (plain call)", func(cs *mcp.ClientSession) call { return echoCall(cs, directEchoTool) }, css},
		{"call with a progress token", progressCall, css},
		{"call from a client that offers sampling", func(cs *mcp.ClientSession) call { return echoCall(cs, directEchoTool) }, sampling},
		{"SDK path (prompts/get)", promptGet, css},
	} {
		workers := make([]call, len(path.sessions))
		for i, cs := range path.sessions {
			workers[i] = path.call(cs)
		}
		if _, err := drive(ctx, workers, 0, warmupCalls); err != nil {
			return fmt.Errorf("%s warm-up: %w", path.name, err)
		}
		b.logf("gateway, %d sessions, %s, %s", sdkPathSessions, path.name, b.opt.duration)
		gw0, err := cpuTime(bx.gwPID)
		if err != nil {
			return err
		}
		s, err := drive(ctx, workers, b.opt.duration, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", path.name, err)
		}
		gw1, err := cpuTime(bx.gwPID)
		if err != nil {
			return err
		}
		cpu := perCall(gw1-gw0, s.calls)
		b.tbl.add(fmt.Sprintf("gateway CPU per call, %d sessions, %s", sdkPathSessions, path.name),
			fmt.Sprintf("%s (%s)", dur(cpu), throughput(s)), "≤ 150 µs", judge(cpu <= targetCPUPerCall))
	}
	return b.stop(bx)
}
