// Package endpoint serves the gateway's merged MCP server (an
// aggregate.Gateway) as MCP streamable HTTP: POST, GET and DELETE on /mcp
// behind a bearer token, and an unauthenticated GET /health.
//
// Use:
//
//	ep := endpoint.New(agg, token, endpoint.Options{Logger: log, Servers: statuses})
//	go ep.Serve(ln)      // /mcp answers 503 "starting" for now
//	// ... start the servers, agg.Open() ...
//	ep.SetReady()        // /mcp serves
//	// ... later:
//	ep.Shutdown(ctx)     // 503 "stopping", sessions closed, connections drained
//
// A request to /mcp passes, in order:
//
//   - the bearer check (internal/auth), before any body byte is read;
//   - readiness: 503 with Retry-After while starting or stopping;
//   - the JSON-RPC guard (protocol.go): the body is read within Limits
//     (413, 408) and checked as one JSON-RPC 2.0 message or batch, so that
//     every refusal is a JSON-RPC error with the right code; it also
//     tells the protocol eras apart (era.go): a 2026-07-28 request (the
//     protocol version in params._meta) skips everything below and goes to
//     the SDK's StreamableHTTPHandler in Stateless mode, on the same merged
//     server, with no session; but for a plain tools/call, which the fast
//     path answers as the SDK would (stateless.go: aggregate.RouteStateless,
//     then aggregate.SendStateless), on the lane too;
//   - session accounting (sessions.go; making room: sessionroom.go):
//     sessions are bounded by count (Options.MaxSessions), never by idle
//     time, so they survive a paused sandbox; beyond the bound the least recently used session with no
//     request in flight is closed, and when every one has a request in
//     flight the new session is refused (503, Retry-After) instead;
//   - the fast path (fastpath.go): tools/list and the forwarded requests
//     (tools/call, prompts/get, ...) on a live session from a client that
//     accepts JSON are answered outside the SDK, with the upstream's result
//     bytes as they came (each request read and routed once:
//     aggregate.Route, then aggregate.Send); so are batches made only of
//     such messages (batch.go). Its lists are fastlist.go's; a call's
//     messages for the agent make its answer an SSE stream
//     (eventstream.go), and the server's requests during a call go on that
//     stream, their answers caught on the way back (asks.go);
//   - everything else: the Go MCP SDK's StreamableHTTPHandler.
//
// The lane (lane.go) serves the keep-alive connections of fast-path clients
// without net/http, through the same chain; whatever it does not fully
// understand goes back to net/http with the connection.
//
// /health lists Options.Servers' states and tool counts, and the endpoint's
// own state: ok, degraded, starting or stopping (the last two with 503).
//
// AuditLog formats the aggregate's per-call audit records as log lines.
package endpoint
