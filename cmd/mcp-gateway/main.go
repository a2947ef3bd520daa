// Command mcp-gateway runs MCP servers inside a sandbox and serves their
// tools as one MCP endpoint over streamable HTTP.
//
// Sandbox SDKs run it as `mcp-gateway --config '<json>'` with the access
// token in GATEWAY_ACCESS_TOKEN: that command starts the gateway in the
// background and exits 0 once the endpoint is ready. See README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

func main() {
	keepInheritedFDs()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// usageError is a mistake in the command line; main prints it with a hint.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// exitCode prints err for a person and maps it to the process's exit code:
// 0 success, 2 usage or config errors, 1 anything else.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var le *loggedError
	if errors.As(err, &le) {
		return 1 // said in the log already, which stays JSON throughout
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "mcp-gateway: %s\nRun 'mcp-gateway help' for usage.\n", ue.msg)
		return 2
	}
	fmt.Fprintf(stderr, "mcp-gateway: %s\n", err)
	var ce *configError
	if errors.As(err, &ce) {
		return 2
	}
	return 1
}

// loggedError is a failure the background gateway has written to its log,
// as JSON: its stderr is that log, so main must not add a plain-text line.
type loggedError struct{ err error }

func (e *loggedError) Error() string { return e.err.Error() }
func (e *loggedError) Unwrap() error { return e.err }

// configError marks an invalid mcp config: exit code 2, nothing started.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

const usage = `mcp-gateway runs MCP servers and serves their tools as one MCP endpoint.

Usage:
  mcp-gateway --config '<json>' [flags]   start in the background; exit 0 once ready (what the SDKs run)
  mcp-gateway serve [--config ...] [flags] run in the foreground (no config: the built-in sandbox server)
  mcp-gateway stdio [--config ...] [flags] serve the merged server on stdin/stdout (for clients that launch commands)
  mcp-gateway catalog [--json] [word]     list the servers known by name (or those matching word)
  mcp-gateway pull <name>...              pre-install catalog servers (template build time)
  mcp-gateway builtin sandbox             run the built-in sandbox MCP server on stdio
  mcp-gateway version                     print the version and build
  mcp-gateway help                        this text

Run 'mcp-gateway <command> -h' for a command's flags (a launch takes serve's, and --log-file).
`

// isHelp reports whether arg asks for a command's usage.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help":
		return true
	}
	return false
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return &usageError{"missing command or --config"}
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		return runServe(ctx, rest, stdout, stderr)
	case "launch":
		return runLaunch(ctx, rest, stdout, stderr)
	case "stdio":
		return runStdio(ctx, rest, os.Stdin, stdout, stderr)
	case "catalog":
		return runCatalog(rest, stdout, stderr)
	case "pull":
		return runPull(ctx, rest, stdout, stderr)
	case "builtin":
		return runBuiltin(ctx, rest, stdout)
	case "version", "--version":
		if len(rest) > 0 {
			if isHelp(rest[0]) {
				fmt.Fprintln(stdout, "Usage: mcp-gateway version   (the version, VCS revision and Go toolchain of this binary; no flags)")
				return nil
			}
			return &usageError{fmt.Sprintf("version takes no arguments, got %q", rest[0])}
		}
		fmt.Fprintln(stdout, readBuildInfo(debug.ReadBuildInfo))
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		if len(cmd) > 0 && cmd[0] == '-' {
			return runLaunch(ctx, args, stdout, stderr)
		}
		return &usageError{fmt.Sprintf("unknown command %q", cmd)}
	}
}
