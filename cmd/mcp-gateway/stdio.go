package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/logfile"
)

// stdioFlags are the flags that mean something in stdio mode.
func stdioFlags() []string {
	return []string{"config", "config-file", "log-file", "log-level", "catalog", "servers-dir",
		"startup-timeout", "shutdown-grace", "max-backoff", "call-timeout", "procs", "interceptors", "tools"}
}

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
		shown:    stdioFlags(),
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
		if !slices.Contains(stdioFlags(), f.Name) && refused == "" {
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
	stopProfile := startProfile(log)
	defer stopProfile()
	specs, err := set.resolveOrDefault(stderr)
	if err != nil {
		return err
	}
	cfg := set.gatewayConfig("", log)
	cfg.Listen = "" // no HTTP endpoint
	if cfg.Telemetry, err = startTelemetry(ctx, set, log); err != nil {
		return err
	}
	defer stopTelemetry(cfg.Telemetry, log)
	g := gateway.New(specs, cfg)
	if err := g.Start(ctx); err != nil {
		return err
	}
	return g.ServeStdio(ctx, stdin, stdout)
}
