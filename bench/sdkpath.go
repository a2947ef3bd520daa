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
// paths, at 8 sessions against one server: the fast path (a plain call),
// and the SDK path (a call with a progress token, whose progress must
// travel on the call's own stream). Both relay the server's result bytes;
// the SDK path also runs the request through the SDK server.
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
	for _, path := range []struct {
		name string
		call func(*mcp.ClientSession) call
	}{
		{"fast path (plain call)", func(cs *mcp.ClientSession) call { return echoCall(cs, directEchoTool) }},
		{"SDK path (call with a progress token)", progressCall},
	} {
		workers := make([]call, len(css))
		for i, cs := range css {
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
