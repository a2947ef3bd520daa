// Package gateway runs one gateway's life: it starts the configured MCP
// servers under supervisors, merges them into one MCP server
// (internal/aggregate), serves that over HTTP (internal/endpoint) or over
// stdio, and stops all of it. It exists so that the command line only
// parses flags and reports, and so that the lifecycle can be used and tested
// in-process; internal/endpoint serves HTTP, this package decides when.
//
// Use:
//
//	g := gateway.New(specs, gateway.Config{Listen: ":50005", Token: token, Logger: log})
//	if err := g.Start(ctx); err != nil { // ready, or failed with nothing left running
//		return err
//	}
//	fmt.Println(g.Summary())
//	context.AfterFunc(sigCtx, func() { g.Shutdown(context.Background()) })
//	return g.Wait() // nil after Shutdown; the HTTP endpoint's error if it failed
//
// The order of a lifecycle:
//
//  1. New builds the interceptor chain, the aggregate and one supervisor per
//     server spec. Nothing runs yet.
//  2. Start listens (Config.Listen) and starts the interceptor plugins, which
//     the servers' first tools listing may ask; a plugin that cannot start
//     fails the start.
//  3. The endpoint serves at once, answering 503 "starting"; every server
//     starts in parallel, each with its own restarts.
//  4. Start waits for every server's first start, for all of them even after
//     one failed, so that its error names every server that failed; or until
//     Config.StartupTimeout, naming those not ready. On failure it stops what
//     it started (children reaped, listener closed) and returns the error.
//  5. Ready: the aggregate opens its merged view, Config.Procs applies, the
//     endpoint serves /mcp, and Start returns nil.
//  6. Shutdown: /mcp answers 503, sessions end within Config.ShutdownGrace,
//     every server is stopped and reaped, the plugins end; then Wait returns.
//
// Without Config.Listen there is no HTTP endpoint: after Start, ServeStdio
// serves one session over stdin and stdout, and shuts the gateway down when
// stdin ends.
package gateway
