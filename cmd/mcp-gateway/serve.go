package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/pprof"
	"sync"

	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/auth"
	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/logfile"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// runServe runs the gateway in the foreground: `mcp-gateway serve`. With
// --daemon it is the background half of a launch (internal).
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var daemon, progress bool
	set, fs, err := parseFlags(command{
		name:     "serve",
		synopsis: "mcp-gateway serve [--config '<json>' | --config-file PATH] [flags]   (no config: the built-in sandbox server)",
		extra: func(fs *flag.FlagSet) {
			fs.BoolVar(&daemon, "daemon", false, "internal: the background half of a launch")
			fs.BoolVar(&progress, "progress", false, "internal: report each server's start on the ready pipe")
		},
		hidden:   []string{"daemon", "progress"},
		defaults: map[string]string{"log-file": "stderr"},
		usages:   map[string]string{"log-file": "write the log to this file instead of stderr"},
	}, args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if daemon {
		return runDaemon(ctx, set, progress)
	}
	logw := stderr
	if flagSet(fs, "log-file") {
		f, err := logfile.Open(set.LogFile)
		if err != nil {
			return err
		}
		defer f.Close()
		logw = f
	}
	log, err := newLogger(logw, set.LogLevel)
	if err != nil {
		return err
	}
	specs, err := set.resolveOrDefault(stderr)
	if err != nil {
		return err
	}
	// Bind first: a port that is taken fails the start before any file is
	// written.
	ln, err := net.Listen("tcp", set.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (choose another with --listen)", set.Listen, err)
	}
	pidNote := "no pid file (--pid-file writes one)"
	if flagSet(fs, "pid-file") {
		lock, err := lockPIDFile(set.PIDFile)
		if err != nil {
			ln.Close()
			return err
		}
		defer releasePIDFile(lock, set.PIDFile)
		if err := writePID(lock); err != nil {
			ln.Close()
			return err
		}
		pidNote = "pid file " + set.PIDFile
	}
	token, tokenNote, err := serveToken(set)
	if err != nil {
		ln.Close()
		return err
	}
	os.Unsetenv(auth.EnvVar)
	fmt.Fprintf(stderr, "mcp-gateway: serving http://%s/mcp%s; %s; %s\n", ln.Addr(), reach(ln.Addr()), tokenNote, pidNote)
	cfg := set.gatewayConfig(token, log)
	cfg.Listener = ln
	stopProgress := func() {}
	if isTerminal(stderr) {
		p := newProgressPrinter(stderr, progressDelay)
		cfg.Progress, stopProgress = p.add, p.stop
	}
	defer stopProgress()
	if cfg.Telemetry, err = startTelemetry(ctx, set, log); err != nil {
		return err
	}
	defer stopTelemetry(cfg.Telemetry, log)
	g := gateway.New(specs, cfg)
	if err := g.Start(ctx); err != nil {
		return err
	}
	stopProgress()
	fmt.Fprintln(stdout, g.Summary())
	return serveUntil(ctx, g, log)
}

// serveUntil lets g serve until ctx is done (SIGINT, SIGTERM), then shuts
// it down; a failure of the HTTP endpoint ends it sooner, with its error.
func serveUntil(ctx context.Context, g *gateway.Gateway, log zerolog.Logger) error {
	stop := context.AfterFunc(ctx, func() {
		log.Info().Msg("shutting down")
		g.Shutdown(context.Background())
	})
	defer stop()
	return g.Wait()
}

// serveToken finds the token for a foreground gateway: the environment, then
// the token file; failing both it makes one and writes it to the token file,
// so a client on the same machine can read it. note says which, for the
// line serve prints on start.
func serveToken(set *settings) (token, note string, err error) {
	if t := os.Getenv(auth.EnvVar); t != "" {
		token, _, err := auth.Resolve(t)
		if err != nil {
			return "", "", err
		}
		if err := auth.WriteFile(set.TokenFile, token); err != nil {
			return "", "", err
		}
		return token, "token from " + auth.EnvVar + " written to " + set.TokenFile, nil
	}
	if t, err := auth.ReadFile(set.TokenFile); err == nil {
		return t, "using the token in " + set.TokenFile, nil
	}
	token, _, err = auth.Resolve("")
	if err != nil {
		return "", "", err
	}
	if err := auth.WriteFile(set.TokenFile, token); err != nil {
		return "", "", fmt.Errorf("%w (set GATEWAY_ACCESS_TOKEN or choose a writable --token-file)", err)
	}
	return token, "generated a token, written to " + set.TokenFile, nil
}

// reach says who can connect to addr, when that is more than this machine.
func reach(addr net.Addr) string {
	if a, ok := addr.(*net.TCPAddr); ok && !a.IP.IsLoopback() {
		return " (every interface: other machines can connect; --listen 127.0.0.1:PORT for this one only)"
	}
	return ""
}

// runDaemon is the background gateway started by a launch. It reads the
// config and token from stdin, reports on fd 3 and holds the pid file lock
// on fd 4 for as long as it runs. Its stdout and stderr are the log file.
// With progress it reports each server's steps on fd 3 before the
// final line.
func runDaemon(ctx context.Context, set *settings, progress bool) error {
	readyW := os.NewFile(readyFD, "ready")
	lock := os.NewFile(lockFD, "pidfile")
	if readyW == nil || lock == nil {
		return errors.New("--daemon is internal to launch")
	}
	defer releasePIDFile(lock, set.PIDFile)
	var readyMu sync.Mutex // progress comes from a goroutine per server
	report := func(m readyMsg) {
		readyMu.Lock()
		defer readyMu.Unlock()
		if readyW == nil {
			return
		}
		b, _ := json.Marshal(m)
		_, _ = readyW.Write(append(b, '\n'))
		if m.Progress == nil {
			readyW.Close()
			readyW = nil
		}
	}
	logw := logfile.NewWriter(os.Stderr)
	defer logw.Close()
	set.auditOut = logw
	log, err := newLogger(os.Stderr, set.LogLevel)
	if err != nil {
		report(readyMsg{Error: err.Error()})
		return err
	}
	stopProfile := startProfile(log)
	defer stopProfile()
	err = daemonMain(ctx, set, log, lock, report, progress)
	if err != nil {
		log.Error().Err(err).Msg("gateway failed")
		report(readyMsg{Error: err.Error()})
		return &loggedError{err}
	}
	return nil
}

func daemonMain(ctx context.Context, set *settings, log zerolog.Logger, lock *os.File, report func(readyMsg), progress bool) error {
	var boot bootstrap
	if err := json.NewDecoder(io.LimitReader(os.Stdin, 64<<20)).Decode(&boot); err != nil {
		return fmt.Errorf("read bootstrap: %w", err)
	}
	os.Stdin.Close()
	if err := writePID(lock); err != nil {
		return err
	}
	specs, err := set.resolve(boot.Config, io.Discard)
	if err != nil {
		return err
	}
	log.Info().Str("listen", set.Listen).Int("pid", os.Getpid()).Int("servers", len(specs)).Msg("gateway starting")
	cfg := set.gatewayConfig(boot.Token, log)
	if progress {
		cfg.Progress = func(e gateway.Progress) { report(readyMsg{Progress: &e}) }
	}
	if cfg.Telemetry, err = startTelemetry(ctx, set, log); err != nil {
		return err
	}
	defer stopTelemetry(cfg.Telemetry, log)
	g := gateway.New(specs, cfg)
	if err := g.Start(ctx); err != nil {
		return err
	}
	report(readyMsg{OK: true, Summary: g.Summary()})
	return serveUntil(ctx, g, log)
}

// envCPUProfile names a file the gateway (background or stdio mode) writes a CPU profile to,
// from start until shutdown, and at shutdown an allocation profile to the same
// path plus ".allocs". It is for the benchmark (bench/): profiling
// the real daemon under real load needs no debug flag or HTTP endpoint.
const envCPUProfile = "MCP_GATEWAY_CPUPROFILE"

// startProfile starts the profile asked for by envCPUProfile, if any, and
// returns the function that ends it. The variable is removed from the
// environment so that no server inherits it. A failure is logged, not fatal.
func startProfile(log zerolog.Logger) (stop func()) {
	path := os.Getenv(envCPUProfile)
	os.Unsetenv(envCPUProfile)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		log.Warn().Err(err).Msg("cpu profile not started")
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		a, err := os.Create(path + ".allocs")
		if err != nil {
			log.Warn().Err(err).Msg("allocation profile not written")
			return
		}
		defer a.Close()
		if err := pprof.Lookup("allocs").WriteTo(a, 0); err != nil {
			log.Warn().Err(err).Msg("allocation profile not written")
		}
	}
}

// newLogger returns a zerolog logger writing one JSON object per line.
func newLogger(w io.Writer, level string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil {
		return zerolog.Nop(), &usageError{fmt.Sprintf("--log-level: %v", err)}
	}
	// The hook puts a traced request's trace and span ids on the lines
	// written with its context (nothing when telemetry is off).
	return zerolog.New(w).Level(lvl).Hook(telemetry.LogHook{}).With().Timestamp().Logger(), nil
}

// flagSet reports whether the named flag was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			found = true
		}
	})
	return found
}
