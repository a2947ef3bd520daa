// Command bench measures mcp-gateway the way it is used: it builds the real
// binary, launches it as the sandbox SDKs do, drives it over real HTTP on
// 127.0.0.1 with the Go SDK client against stdio MCP servers of ours (this
// binary re-executed as internal/fixture), and prints one Markdown table of
// the numbers the README's benchmark table shows, each next to its target.
//
//	go run ./bench            # full run, two to three minutes
//	go run ./bench -only launch -servers 64 -target-reps 31   # one line, more pairs
//	go run ./bench -quick     # a few seconds: CI's smoke run
//	go run ./bench -profile /tmp/prof   # also write gateway CPU and allocation profiles
//
// It exits 1 when something does not work (a wrong result, a failed launch, a
// process left behind), and with -strict also when a target is missed. It
// leaves no process behind.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

func main() {
	// First: the gateway starts this same binary as its stdio servers.
	fixture.RunIfRequested()
	if kind := os.Getenv(floorEnv); kind != "" {
		if err := runFloor(kind); err != nil {
			fmt.Fprintln(os.Stderr, "floor proxy:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// options of one run. Quick shrinks every count so the whole run takes a few
// seconds; its numbers show the harness works, not how fast the gateway is.
type options struct {
	quick           bool
	duration        time.Duration // per throughput point
	calls           int           // forwarded calls before the second RSS reading
	reps            int           // launches per server count (median reported)
	targetReps      int           // launches at the target's server count
	lists           int           // tools/list rounds over all pages
	settle          time.Duration // idle time before an RSS reading
	sizes           []int         // server counts for launch-to-ready
	tools           int           // tools per server in the launch and tools/list runs
	gateway         string        // a prebuilt mcp-gateway; "" builds one
	profile         string        // directory for gateway profiles; "" skips profiling
	profileSessions int           // concurrent sessions while profiling
	strict          bool          // exit 1 when a target is missed
	protocol        string        // MCP version the benchmark's clients ask for
	only            map[string]bool
}

// parts of a run that -only can select.
func parts() []string {
	return []string{"calls", "paths", "stdio", "launch", "interceptors", "search", "telemetry", "profile"}
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&o.quick, "quick", false, "smoke run: a few seconds in all (CI)")
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "time per throughput point")
	fs.IntVar(&o.calls, "calls", 100_000, "forwarded calls before the second RSS reading")
	fs.IntVar(&o.reps, "reps", 7, "launches per server count (each against the servers started alone); medians are reported")
	fs.IntVar(&o.targetReps, "target-reps", 15, "launches at 64 servers, where the target is judged (pairs there vary by more than the target)")
	fs.IntVar(&o.lists, "lists", 50, "rounds of tools/list (all pages) for the p50")
	fs.StringVar(&o.gateway, "gateway", "", "use this mcp-gateway binary instead of building ./cmd/mcp-gateway")
	fs.StringVar(&o.profile, "profile", "", "also profile the gateway under load; write cpu.pprof and cpu.pprof.allocs here")
	fs.IntVar(&o.profileSessions, "profile-sessions", 8, "concurrent sessions while profiling")
	fs.BoolVar(&o.strict, "strict", false, "exit 1 when a target is missed")
	fs.StringVar(&o.protocol, "protocol", "2025-11-25", "MCP protocol version of the benchmark's clients (\"\" = the SDK's latest)")
	sizes := fs.String("servers", "1,10,64", "server counts of the launch runs, comma-separated (the target is judged at 64)")
	only := fs.String("only", "", "run only these parts, comma-separated: calls (direct vs gateway, CPU, RSS), paths (gateway CPU per call on the fast and the SDK path), stdio (gateway CPU per call in stdio mode), launch (launch-to-ready, tools/list), interceptors (no-op plugin and exec), search (the search view: tools/list sizes, search_tools, index build), telemetry (gateway CPU per call with telemetry off, --metrics, OTLP), profile (needs -profile); default: all")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.only = map[string]bool{}
	for _, p := range strings.Split(*only, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if !slices.Contains(parts(), p) {
			return o, fmt.Errorf("-only: unknown part %q (known: %s)", p, strings.Join(parts(), ", "))
		}
		o.only[p] = true
	}
	if len(o.only) == 0 {
		o.only = map[string]bool{"calls": true, "paths": true, "stdio": true, "launch": true, "interceptors": true, "search": true, "telemetry": true, "profile": true}
	}
	if o.only["profile"] && o.profile == "" {
		if *only != "" {
			return o, errors.New("-only profile needs -profile DIR")
		}
		delete(o.only, "profile")
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	o.settle, o.tools = 2*time.Second, 100
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return o, fmt.Errorf("-servers: %q is not a positive count", f)
		}
		o.sizes = append(o.sizes, n)
	}
	if o.quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["duration"] {
			o.duration = 200 * time.Millisecond
		}
		if !set["calls"] {
			o.calls = 1000
		}
		if !set["reps"] {
			o.reps = 1
		}
		if !set["target-reps"] {
			o.targetReps = 1
		}
		if !set["lists"] {
			o.lists = 5
		}
		o.settle = 300 * time.Millisecond
		if !set["servers"] {
			o.sizes = []int{1, 4, 16}
		}
	}
	if o.gateway != "" {
		abs, err := filepath.Abs(o.gateway)
		if err != nil {
			return o, fmt.Errorf("-gateway: %w", err)
		}
		o.gateway = abs
	}
	if o.duration <= 0 || o.calls <= 0 || o.reps <= 0 || o.targetReps <= 0 || o.lists <= 0 {
		return o, errors.New("-duration, -calls, -reps, -target-reps and -lists must be positive")
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	opt, err := parseOptions(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	tmp, err := os.MkdirTemp("", "mcp-gateway-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	b := &bench{opt: opt, tmp: tmp, progress: stderr, began: time.Now()}
	defer b.stopAll()
	if b.bin = opt.gateway; b.bin == "" {
		b.logf("building mcp-gateway")
		if b.bin, err = buildGateway(ctx, tmp); err != nil {
			return err
		}
	}
	began, load0 := time.Now(), loadAvg()
	if err := b.runAll(ctx); err != nil {
		return err
	}
	if err := b.stopAll(); err != nil {
		return err
	}
	if left := childrenOf(os.Getpid()); len(left) > 0 {
		return fmt.Errorf("processes left behind: %v", left)
	}
	mode := "full run"
	if opt.quick {
		mode = "quick run (-quick: a smoke test, not a measurement)"
	}
	fmt.Fprintf(stdout, "mcp-gateway benchmark, %s, %s; %s, %d CPUs, %s, %s; load average %s at start, %s at end\n\n",
		time.Now().Format("2006-01-02"), mode, cpuModel(), runtime.NumCPU(), runtime.Version(), kernel(), load0, loadAvg())
	switch {
	case opt.quick:
		b.tbl.writeChecks(stdout)
	case len(b.tbl.rows) > 0:
		b.tbl.write(stdout)
	}
	fmt.Fprintf(stdout, "\n%s in %s.\n", mode, time.Since(began).Round(time.Second))
	if b.profileNote != "" {
		fmt.Fprintf(stdout, "\nprofile of the gateway: %s\n", b.profileNote)
	}
	if n := b.tbl.misses(); n > 0 && opt.strict {
		return fmt.Errorf("%d targets missed", n)
	}
	return nil
}

func (b *bench) runAll(ctx context.Context) error {
	var steps []func(context.Context) error
	if b.opt.only["calls"] {
		steps = append(steps, b.directRuns, b.gatewayRuns)
	}
	if b.opt.only["paths"] {
		steps = append(steps, b.pathRuns)
	}
	if b.opt.only["stdio"] {
		steps = append(steps, b.stdioRuns)
	}
	if b.opt.only["launch"] {
		steps = append(steps, b.launchRuns)
	}
	if b.opt.only["interceptors"] {
		steps = append(steps, b.interceptorRuns)
	}
	if b.opt.only["search"] {
		steps = append(steps, b.searchRuns)
	}
	if b.opt.only["telemetry"] {
		steps = append(steps, b.telemetryRuns)
	}
	if b.opt.only["profile"] {
		steps = append(steps, b.profileRun)
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// cpuModel is the CPU's model name from /proc/cpuinfo.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// loadAvg is the 1-minute load average: other work on the machine skews
// every number, so the table says how busy it was.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// kernel is the running kernel's release.
func kernel() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "linux"
	}
	return "linux " + strings.TrimSpace(string(b))
}
