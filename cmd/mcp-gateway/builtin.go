package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/mcp-gateway/mcp-gateway/internal/sandbox"
)

// runBuiltin serves one of the servers built into the binary on stdio. The
// gateway starts it as a child like any other server, so it is supervised,
// restarted and isolated the same way.
func runBuiltin(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return &usageError{"usage: mcp-gateway builtin sandbox"}
	}
	switch {
	case isHelp(args[0]):
		fmt.Fprintln(stdout, "Usage: mcp-gateway builtin sandbox   (the built-in sandbox MCP server on stdin/stdout; no flags)")
		return nil
	case args[0] == "sandbox":
		return sandbox.Run(ctx, os.Stdin, os.Stdout, sandbox.Options{Version: readBuildInfo(debug.ReadBuildInfo).serverVersion()})
	default:
		return &usageError{fmt.Sprintf("unknown built-in server %q (built in: sandbox)", args[0])}
	}
}
