// Command mcp-gateway-plugin-host runs one interceptor plugin for
// mcp-gateway: the gateway starts it (found next to its own executable, or
// on PATH) for each plugin interceptor of its interceptors.json, as
//
//	mcp-gateway-plugin-host /path/to/plugin [args...]
//
// and speaks package pluginwire with it over its stdin and stdout. It is a
// separate program so that the gateway's binary links no gRPC, protobuf or
// go-plugin (internal/pluginhost says more). It is not meant to be run by
// hand.
package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/pluginhost"
)

func main() {
	if len(os.Args) < 2 || !strings.HasPrefix(os.Args[1], "/") {
		fmt.Fprintln(os.Stderr, "usage: mcp-gateway-plugin-host /absolute/path/to/plugin [args...]\n(mcp-gateway starts it for each plugin interceptor; see its README: Interceptors)")
		os.Exit(2)
	}
	// go-plugin hands the plugin the host's os.Stdin, which carries the
	// gateway's calls: the plugin gets /dev/null instead.
	calls := os.Stdin
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcp-gateway-plugin-host:", err)
		os.Exit(1)
	}
	os.Stdin = devnull
	// The gateway already left its token out of the host's environment;
	// the host makes sure.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GATEWAY_ACCESS_TOKEN=") })
	err = pluginhost.Run(os.Args[1], os.Args[2:], pluginhost.Options{
		In: calls, Out: os.Stdout, Log: os.Stderr, Env: env,
		StartTimeout: 10 * time.Second, StopGrace: 3 * time.Second,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcp-gateway-plugin-host:", err)
		os.Exit(1)
	}
}
