package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/supervisor"
)

// sessionCounts are the concurrency levels of the throughput rows.
func sessionCounts() []int { return []int{1, 8, 32} }

// The performance targets, for a 2-core machine.
const (
	targetCPUPerCall   = 150 * time.Microsecond // at 8 sessions
	targetRateShare    = 0.5                    // gateway/direct calls/s at 1 session
	targetOverlapWall  = 150 * time.Millisecond // 32 concurrent 50 ms calls
	targetListP50      = 15 * time.Millisecond  // tools/list of 6,400 tools
	targetLaunchExtra  = 50 * time.Millisecond  // beyond the servers' own start, 64 servers
	targetIdleRSS      = 20 << 20               // 10 servers
	targetRSSGrowth    = 5 << 20                // after the calls
	targetServers      = 64                     // launch-to-ready is judged here
	targetTools        = 6400                   // tools/list is judged here
	overlapCalls       = 32
	overlapMS          = 50
	rssServers         = 10
	warmupCalls        = 300
	directServerName   = "s00"
	directEchoTool     = "echo"
	directSleepTool    = "sleep"
	profileMinDuration = 10 * time.Second
)

// bench is one run: the options, the gateway binary, what is running, and
// the table being filled.
type bench struct {
	opt      options
	tmp      string
	bin      string
	progress io.Writer
	began    time.Time
	tbl      table

	boxes []*box // launched gateways not yet stopped

	// Filled by directRuns, compared against by gatewayRuns.
	direct        map[int]stats
	directCPU     time.Duration // the stdio server's CPU per call, 8 callers
	directOverlap time.Duration
	directClient  time.Duration          // the client's CPU per call, 1 caller
	floor         map[string]floorResult // by floor kind

	cpuRows     []row // gateway CPU per call, listed after the throughput rows
	profileNote string
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.progress, "bench: %6.1fs "+format+"\n", append([]any{time.Since(b.began).Seconds()}, args...)...)
}

// launch starts a gateway with cfg in a new box and tracks it for stopAll.
func (b *bench) launch(ctx context.Context, name string, cfg map[string]any, env ...string) (*box, time.Duration, error) {
	bx, err := newBox(b.bin, b.tmp, name)
	if err != nil {
		return nil, 0, err
	}
	bx.env, bx.protocol = env, b.opt.protocol
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, 0, err
	}
	b.boxes = append(b.boxes, bx)
	took, err := bx.launch(ctx, string(raw))
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", name, err)
	}
	return bx, took, nil
}

// stop stops one gateway and forgets it.
func (b *bench) stop(bx *box) error {
	b.boxes = slices.DeleteFunc(b.boxes, func(x *box) bool { return x == bx })
	return bx.stop()
}

// stopAll stops every gateway still running. It is safe to call twice.
func (b *bench) stopAll() error {
	var errs []error
	for _, bx := range b.boxes {
		errs = append(errs, bx.stop())
	}
	b.boxes = nil
	return errors.Join(errs...)
}

// fixtureServers is an mcp config of n local-command servers named s00...
// running the fixture with opts(i).
func fixtureServers(n int, opts func(i int) fixture.Options) map[string]any {
	cfg := make(map[string]any, n)
	for i := range n {
		o := opts(i)
		cfg[o.Name] = map[string]any{"runCmd": fixture.ShellCommand(o)}
	}
	return cfg
}

// serverProcess returns the MCP server's own process for the pid /health
// reports: the gateway runs a runCmd under /bin/sh -c, and a shell that does
// not exec its last command (dash) keeps the server as its only child.
func serverProcess(pid int) int {
	if kids := childrenOf(pid); len(kids) == 1 {
		return kids[0]
	}
	return pid
}

func serverName(i int) string { return fmt.Sprintf("s%02d", i) }

// plainServer is the fixture with its built-in tools (echo, sleep, ...).
func plainServer(i int) fixture.Options { return fixture.Options{Name: serverName(i)} }

// toolServer returns options for a fixture with b.opt.tools tools of its own
// and no built-in ones: 64 of them make the 6,400-tool list.
func (b *bench) toolServer(i int) fixture.Options {
	name := serverName(i)
	tools := make([]string, b.opt.tools)
	for j := range tools {
		tools[j] = fmt.Sprintf("%s_t%03d", name, j)
	}
	return fixture.Options{Name: name, Tools: []string{fixture.NoTools}, ExtraTools: tools}
}

// directRuns measures the baseline: the client calling one fixture server
// over stdio with the SDK's CommandTransport, n callers sharing its one
// session (a stdio server has exactly one client).
func (b *bench) directRuns(ctx context.Context) error {
	d, err := startDirect(ctx, plainServer(0), b.opt.protocol)
	if err != nil {
		return err
	}
	defer d.close()
	if _, err := drive(ctx, []call{echoCall(d.cs, directEchoTool)}, 0, warmupCalls); err != nil {
		return fmt.Errorf("direct warm-up: %w", err)
	}
	b.floor = map[string]floorResult{}
	for _, kind := range floorKinds() {
		if err := b.floorRun(ctx, kind); err != nil {
			return err
		}
	}
	b.direct = make(map[int]stats)
	for _, n := range sessionCounts() {
		b.logf("direct stdio, %s, %s", plural(n, "caller"), b.opt.duration)
		workers := make([]call, n)
		for i := range workers {
			workers[i] = echoCall(d.cs, directEchoTool)
		}
		cpu0, err := cpuTime(d.pid())
		if err != nil {
			return err
		}
		own0 := ownCPUTime()
		s, err := drive(ctx, workers, b.opt.duration, 0)
		if err != nil {
			return fmt.Errorf("direct, %d callers: %w", n, err)
		}
		if n == 1 {
			b.directClient = perCall(ownCPUTime()-own0, s.calls)
		}
		cpu1, err := cpuTime(d.pid())
		if err != nil {
			return err
		}
		if n == 8 {
			b.directCPU = perCall(cpu1-cpu0, s.calls)
		}
		b.direct[n] = s
	}
	calls := make([]call, overlapCalls)
	for i := range calls {
		calls[i] = sleepCall(d.cs, directSleepTool, overlapMS)
	}
	if b.directOverlap, err = overlap(ctx, calls); err != nil {
		return fmt.Errorf("direct overlap: %w", err)
	}
	return nil
}

// floorRun measures one floor proxy (floor.go) at 1 session: calls/s, and
// CPU per call of the proxy and of the client.
func (b *bench) floorRun(ctx context.Context, kind string) error {
	b.logf("floor proxy (%s), 1 session, %s", kind, b.opt.duration)
	p, err := startFloor(kind)
	if err != nil {
		return err
	}
	defer p.close()
	cs, err := p.connect(ctx, b.opt.protocol)
	if err != nil {
		return err
	}
	defer cs.Close()
	w := []call{echoCall(cs, directEchoTool)}
	if _, err := drive(ctx, w, 0, warmupCalls); err != nil {
		return fmt.Errorf("floor warm-up: %w", err)
	}
	own0 := ownCPUTime()
	cpu0, err := cpuTime(p.cmd.Process.Pid)
	if err != nil {
		return err
	}
	s, err := drive(ctx, w, b.opt.duration, 0)
	if err != nil {
		return fmt.Errorf("floor proxy (%s): %w", kind, err)
	}
	cpu1, err := cpuTime(p.cmd.Process.Pid)
	if err != nil {
		return err
	}
	b.floor[kind] = floorResult{s, perCall(cpu1-cpu0, s.calls), perCall(ownCPUTime()-own0, s.calls)}
	return nil
}

func perCall(d time.Duration, calls int) time.Duration {
	if calls == 0 {
		return 0
	}
	return d / time.Duration(calls)
}

// gatewayRuns launches a gateway with 10 fixture servers and measures, in
// order: idle RSS; the throughput rows and CPU per call against one server;
// 32 overlapping 50 ms calls; then calls spread over all servers up to
// opt.calls forwarded calls in all, and RSS again once the sessions are gone.
func (b *bench) gatewayRuns(ctx context.Context) error {
	b.logf("launching a gateway with %d servers", rssServers)
	bx, _, err := b.launch(ctx, "rss", fixtureServers(rssServers, plainServer))
	if err != nil {
		return err
	}
	h, err := bx.health(ctx)
	if err != nil {
		return err
	}
	upPID := serverProcess(h.serverPID(directServerName))
	time.Sleep(b.opt.settle) // let startup garbage be collected before reading RSS
	idle, err := rssBytes(bx.gwPID)
	if err != nil {
		return err
	}
	css, err := bx.connectN(ctx, slices.Max(sessionCounts()))
	if err != nil {
		return err
	}
	defer closeAll(css)
	forwarded := 0
	if _, err := drive(ctx, []call{echoCall(css[0], directEchoTool)}, 0, warmupCalls); err != nil {
		return fmt.Errorf("gateway warm-up: %w", err)
	}
	forwarded += warmupCalls

	for _, n := range sessionCounts() {
		b.logf("gateway, %s, %s", plural(n, "session"), b.opt.duration)
		workers := make([]call, n)
		for i := range workers {
			workers[i] = echoCall(css[i], directEchoTool)
		}
		gw0, err := cpuTime(bx.gwPID)
		if err != nil {
			return err
		}
		up0, _ := cpuTime(upPID)
		own0 := ownCPUTime()
		s, err := drive(ctx, workers, b.opt.duration, 0)
		if err != nil {
			return fmt.Errorf("gateway, %d sessions: %w", n, err)
		}
		client := perCall(ownCPUTime()-own0, s.calls)
		gw1, err := cpuTime(bx.gwPID)
		if err != nil {
			return err
		}
		up1, _ := cpuTime(upPID)
		forwarded += s.calls
		d := b.direct[n]
		share := s.rate() / d.rate()
		res := fmt.Sprintf("%s (%.0f%% of direct)", throughput(s), 100*share)
		if n == 1 {
			b.tbl.add("direct stdio, 1 caller on its session", fmt.Sprintf("%s (client CPU %s per call)", throughput(d), dur(b.directClient)), "", none)
			res = fmt.Sprintf("%s (%.0f%% of direct; client CPU %s per call)", throughput(s), 100*share, dur(client))
			for _, kind := range floorKinds() {
				f := b.floor[kind]
				b.tbl.add(fmt.Sprintf("floor: bare %s proxy, 1 session", floorNames()[kind]),
					fmt.Sprintf("%s (%.0f%% of direct; proxy CPU %s, client CPU %s per call)", throughput(f.stats), 100*f.rate()/d.rate(), dur(f.cpu), dur(f.client)), "", none)
			}
			b.tbl.add("gateway, 1 session", res, "≥ 50% of direct calls/s", judge(share >= targetRateShare))
		} else {
			b.tbl.add(fmt.Sprintf("direct stdio, %s on its session", plural(n, "caller")), throughput(d), "", none)
			b.tbl.add(fmt.Sprintf("gateway, %d sessions", n), res, "", none)
		}
		cpu := perCall(gw1-gw0, s.calls)
		note := fmt.Sprintf("%s (upstream server %s)", dur(cpu), dur(perCall(up1-up0, s.calls)))
		switch n {
		case 1:
			b.cpuRows = append(b.cpuRows, row{"gateway CPU per call, 1 session", note, "", none})
		case 8:
			note = fmt.Sprintf("%s (upstream server %s; direct %s)", dur(cpu), dur(perCall(up1-up0, s.calls)), dur(b.directCPU))
			b.cpuRows = append(b.cpuRows, row{"gateway CPU per call, 8 sessions", note, "≤ 150 µs", judge(cpu <= targetCPUPerCall)})
		case 32:
			b.cpuRows = append(b.cpuRows, row{"gateway CPU per call, 32 sessions", note, "", none})
		}
	}
	b.tbl.rows = append(b.tbl.rows, b.cpuRows...)

	b.logf("gateway, %d overlapping %d ms calls", overlapCalls, overlapMS)
	calls := make([]call, overlapCalls)
	for i := range calls {
		calls[i] = sleepCall(css[i%len(css)], directSleepTool, overlapMS)
	}
	wall, err := overlap(ctx, calls)
	if err != nil {
		return fmt.Errorf("gateway overlap: %w", err)
	}
	forwarded += overlapCalls
	b.tbl.add(fmt.Sprintf("%d concurrent %d ms calls, one server: wall", overlapCalls, overlapMS),
		fmt.Sprintf("%s (direct %s)", dur(wall), dur(b.directOverlap)), "≤ 150 ms", judge(wall <= targetOverlapWall))

	if rest := b.opt.calls - forwarded; rest > 0 {
		b.logf("gateway, %s more calls over %d sessions and %d servers", count(rest), 8, rssServers)
		workers := make([]call, 8)
		for i := range workers {
			workers[i] = roundRobin(css[i], rssServers, i)
		}
		s, err := drive(ctx, workers, 0, rest)
		if err != nil {
			return fmt.Errorf("gateway calls for RSS: %w", err)
		}
		forwarded += s.calls
	}
	closeAll(css)
	css = nil
	time.Sleep(b.opt.settle)
	after, err := rssBytes(bx.gwPID)
	if err != nil {
		return err
	}
	b.tbl.add(fmt.Sprintf("gateway RSS idle, %d servers", rssServers), mib(idle), "≤ 20 MiB", judge(idle <= targetIdleRSS))
	b.tbl.add(fmt.Sprintf("gateway RSS after %s calls (sessions closed)", count(forwarded)),
		fmt.Sprintf("%s (%+.1f MiB)", mib(after), float64(after-idle)/(1<<20)), "growth < 5 MiB", judge(after-idle < targetRSSGrowth))
	return b.stop(bx)
}

// roundRobin calls the echo tool of every server in turn, starting at
// first: s00 owns the plain name "echo", later servers get "sNN_echo".
func roundRobin(cs *mcp.ClientSession, servers, first int) call {
	calls := make([]call, servers)
	for i := range calls {
		tool := directEchoTool
		if i > 0 {
			tool = serverName(i) + "_" + directEchoTool
		}
		calls[i] = echoCall(cs, tool)
	}
	next := first
	return func(ctx context.Context) error {
		c := calls[next%servers]
		next++
		return c(ctx)
	}
}

// launchRuns measures launch-to-ready at each server count against the same
// servers started directly in parallel, and tools/list on the largest.
func (b *bench) launchRuns(ctx context.Context) error {
	for _, n := range b.opt.sizes {
		var own, launch, extra, launchCPU, readyCPU []time.Duration
		var last *box
		reps := b.opt.reps
		if n == targetServers {
			reps = b.opt.targetReps
		}
		for rep := range reps {
			b.logf("launch with %s (%d/%d)", plural(n, "server"), rep+1, reps)
			// Each rep measures both, in alternating order, and the
			// overhead is judged on the median of the pairs' differences:
			// this shared VM drifts by more than the target between runs.
			var d, took time.Duration
			var bx *box
			direct := func() (err error) {
				d, err = startServersDirect(ctx, n, b.toolServer)
				return err
			}
			gateway := func() (err error) {
				bx, took, err = b.launch(ctx, fmt.Sprintf("launch%d", n), fixtureServers(n, b.toolServer))
				return err
			}
			steps := []func() error{direct, gateway}
			if rep%2 == 1 {
				steps[0], steps[1] = gateway, direct
			}
			for _, step := range steps {
				// Let the machine settle first: right after a start of many
				// processes this VM runs the next one slower, whichever it
				// is (without the pause the pairs alternated -100/+100 ms).
				time.Sleep(b.opt.settle / 2)
				if err := step(); err != nil {
					if bx != nil {
						_ = b.stop(bx)
					}
					return err
				}
			}
			own, launch, extra = append(own, d), append(launch, took), append(extra, took-d)
			b.logf("  gateway %s, servers alone %s: %+.1f ms", dur(took), dur(d), ms(took-d))
			launchCPU, readyCPU = append(launchCPU, bx.launchCPU), append(readyCPU, bx.readyCPU)
			if rep < reps-1 {
				if err := b.stop(bx); err != nil {
					return err
				}
			} else {
				last = bx
			}
		}
		o, l, x := median(own), median(launch), median(extra)
		v, target := none, ""
		if n == targetServers {
			v, target = judge(x <= targetLaunchExtra), "≤ +50 ms"
		}
		q1, q3 := quartiles(extra)
		b.tbl.add("launch to ready, "+plural(n, "server"),
			fmt.Sprintf("%s (servers alone %s; overhead %+.1f ms, median of %d pairs, middle half %+.0f..%+.0f ms; CPU: launch command %s, gateway to ready %s)",
				dur(l), dur(o), ms(x), len(extra), ms(q1), ms(q3), dur(median(launchCPU)), dur(median(readyCPU))), target, v)
		if n == slices.Max(b.opt.sizes) {
			if err := b.listRuns(ctx, last, n); err != nil {
				return err
			}
		}
		if err := b.stop(last); err != nil {
			return err
		}
	}
	return nil
}

// listRuns lists every tool of a gateway with n tool servers, all pages,
// opt.lists times, and reports the p50 twice: over plain HTTP, counting only
// requests and responses (the gateway's own time, which the target is
// about), and with the Go SDK client (what an agent on that SDK waits,
// decoding included). The gateway's CPU per listing is measured over the
// plain HTTP rounds.
func (b *bench) listRuns(ctx context.Context, bx *box, n int) error {
	want := n * b.opt.tools
	b.logf("tools/list of %s tools, %d rounds", count(want), b.opt.lists)
	proto := b.opt.protocol
	if proto == "" {
		proto = supervisor.ProtocolVersion
	}
	raw, err := rawConnect(ctx, bx, proto)
	if err != nil {
		return err
	}
	defer raw.close(context.WithoutCancel(ctx))
	css, err := bx.connectN(ctx, 1)
	if err != nil {
		return err
	}
	defer closeAll(css)
	var rawLat, sdkLat []time.Duration
	var rawCPU time.Duration
	pages := 0
	for i := range b.opt.lists + 1 {
		cpu0, err := cpuTime(bx.gwPID)
		if err != nil {
			return err
		}
		tools, p, rawTook, err := raw.listAll(ctx)
		if err != nil {
			return err
		}
		cpu1, err := cpuTime(bx.gwPID)
		if err != nil {
			return err
		}
		if tools != want {
			return fmt.Errorf("tools/list over HTTP returned %d tools, want %d", tools, want)
		}
		t0 := time.Now()
		tools, _, err = listAll(ctx, css[0])
		sdkTook := time.Since(t0)
		if err != nil {
			return err
		}
		if tools != want {
			return fmt.Errorf("tools/list with the SDK client returned %d tools, want %d", tools, want)
		}
		if i > 0 { // the first round warms up
			rawLat, sdkLat = append(rawLat, rawTook), append(sdkLat, sdkTook)
			rawCPU += cpu1 - cpu0
		}
		pages = p
	}
	p50 := median(rawLat)
	v, target := none, ""
	if want == targetTools {
		v, target = judge(p50 <= targetListP50), "≤ 15 ms"
	}
	b.tbl.add(fmt.Sprintf("tools/list, %d servers × %d tools, all %d pages: p50", n, b.opt.tools, pages),
		fmt.Sprintf("%s over HTTP (gateway CPU %s per listing; Go SDK client, decoding included: %s)",
			dur(p50), dur(rawCPU/time.Duration(b.opt.lists)), dur(median(sdkLat))), target, v)
	return nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// quartiles returns the first and third quartiles of ds (nearest rank):
// between them lies the middle half, which says how far one median can be
// trusted on a noisy machine.
func quartiles(ds []time.Duration) (q1, q3 time.Duration) {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/4], s[len(s)*3/4]
}

// ms is d in milliseconds, for signed differences.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// profileRun launches a gateway with one server and the CPU profile hook
// on, drives it with 8 sessions, and stops it so that it writes its CPU
// profile and its allocation profile.
func (b *bench) profileRun(ctx context.Context) error {
	if err := os.MkdirAll(b.opt.profile, 0o755); err != nil {
		return fmt.Errorf("profile dir: %w", err)
	}
	cpuFile, err := filepath.Abs(filepath.Join(b.opt.profile, "cpu.pprof"))
	if err != nil {
		return err
	}
	b.logf("profiling the gateway under %d sessions", b.opt.profileSessions)
	bx, _, err := b.launch(ctx, "profile", fixtureServers(1, plainServer), "MCP_GATEWAY_CPUPROFILE="+cpuFile)
	if err != nil {
		return err
	}
	css, err := bx.connectN(ctx, b.opt.profileSessions)
	if err != nil {
		return err
	}
	defer closeAll(css)
	workers := make([]call, len(css))
	for i := range workers {
		workers[i] = echoCall(css[i], directEchoTool)
	}
	d := max(b.opt.duration, profileMinDuration)
	if b.opt.quick {
		d = b.opt.duration
	}
	gw0, err := cpuTime(bx.gwPID)
	if err != nil {
		return err
	}
	s, err := drive(ctx, workers, d, 0)
	if err != nil {
		return fmt.Errorf("profile load: %w", err)
	}
	gw1, err := cpuTime(bx.gwPID)
	if err != nil {
		return err
	}
	closeAll(css)
	if err := b.stop(bx); err != nil {
		return err
	}
	b.logf("profiling a launch with %d servers", targetServers)
	launchFile := filepath.Join(filepath.Dir(cpuFile), "launch.pprof")
	lx, took, err := b.launch(ctx, "profile-launch", fixtureServers(targetServers, b.toolServer), "MCP_GATEWAY_CPUPROFILE="+launchFile)
	if err != nil {
		return err
	}
	if err := b.stop(lx); err != nil {
		return err
	}
	b.profileNote = fmt.Sprintf("%s calls in %s, %s gateway CPU per call; go tool pprof -top %s (allocations: -sample_index=alloc_space %s.allocs); "+
		"a launch with %d servers (%s to ready, then stopped): %s",
		count(s.calls), d, dur(perCall(gw1-gw0, s.calls)), cpuFile, cpuFile, targetServers, dur(took), launchFile)
	return nil
}
