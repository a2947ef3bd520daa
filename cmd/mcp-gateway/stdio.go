package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-gateway/mcp-gateway/internal/logfile"
	"github.com/mcp-gateway/mcp-gateway/internal/stdioserve"
)

// stdioFlags are the flags that mean something in stdio mode.
var stdioFlags = []string{"config", "config-file", "log-file", "log-level", "catalog", "servers-dir",
	"startup-timeout", "shutdown-grace", "max-backoff", "procs", "interceptors"}

// runStdio is `mcp-gateway stdio`: the merged server on stdin and stdout
// (line-delimited JSON-RPC 2.0), for MCP clients that launch servers as
// commands (desktop apps, IDEs). The client is the one process that can
// reach it, so there is no token, no HTTP listener and no token file.
// Stdout carries protocol messages only; logs go to stderr, or to
// --log-file when it is given.
func runStdio(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	set, fs, err := parseFlags(command{
		name:     "stdio",
		synopsis: "mcp-gateway stdio [--config '<json>' | --config-file PATH] [flags]",
		shown:    stdioFlags,
		defaults: map[string]string{"log-file": "stderr"},
		usages:   map[string]string{"log-file": "write the log to this file instead of stderr"},
	}, args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	// An allowlist, not a denylist: flags for the HTTP endpoint, the token
	// or the pid file keep being added, and none of them means anything here.
	var refused string
	fs.Visit(func(f *flag.Flag) {
		if !slices.Contains(stdioFlags, f.Name) && refused == "" {
			refused = f.Name
		}
	})
	if refused != "" {
		return &usageError{fmt.Sprintf("--%s does not apply to stdio mode (no HTTP endpoint, no token, no pid file)", refused)}
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
	g := newGateway(set, specs, "", log)
	return g.runStdio(ctx, stdin, stdout)
}

// runStdio starts every server, waits for all of them as a launch does
// (failing with the same message when one fails or the startup times out),
// then serves one MCP session over in and out until in reaches EOF or ctx
// is done, and stops everything. Requests that arrive while the servers
// start wait in the pipe.
func (g *gateway) runStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	began := time.Now()
	if err := g.startInterceptors(ctx); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	g.runServers(runCtx, &wg)
	stop := func() {
		cancel()
		wg.Wait()
		g.icpt.Close()
		g.log.Info().Msg("gateway stopped")
	}
	tools, err := g.open(ctx)
	if err != nil {
		stop()
		return err
	}
	g.log.Info().Int("servers", len(g.servers)).Int("tools", tools).Dur("elapsed", time.Since(began)).
		Str("transport", "stdio").Msg("ready")

	t := stdioserve.New(in, out, g.set.ShutdownGrace)
	t.Task = func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		for ss := range g.agg.Server().Sessions() { // stdio has one
			return g.agg.Task(ctx, ss, method, params)
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "not initialized"}
	}
	err = g.agg.Server().Run(ctx, t)
	if ctx.Err() == nil {
		g.log.Info().Msg("stdin closed; shutting down")
	} else {
		g.log.Info().Msg("shutting down")
	}
	stop()
	if err != nil && !errors.Is(err, io.EOF) && ctx.Err() == nil {
		return fmt.Errorf("serve stdio: %w", err)
	}
	return nil
}
