// Package aggregate holds the merged MCP server: it collects what every
// upstream offers (tools, prompts, resources, resource templates), gives each
// item one exported name, routes requests to the server that owns the item,
// and relays what servers send back (progress, logs, list changes, resource
// updates, sampling, elicitation, roots, task statuses) to the agent session
// it belongs to.
//
// Use:
//
//	g := aggregate.New(aggregate.Options{Logger: log, Audit: audit})
//	g.Add(server)                      // every upstream, before Open
//	// on each (re)start of a server:
//	g.Sync(ctx, name, clientSession, rawRoundTrip)
//	g.Open()                           // once every server started: the first naming
//	// serve g.Server() over HTTP (internal/endpoint) or stdio (internal/stdioserve)
//
// A request from an agent takes one of two paths:
//
//   - the SDK path: the Go MCP SDK's server decodes it and the gateway's
//     middleware (gateway.go) answers it: lists from the merged items
//     (merged.go, pages.go), calls forwarded by route (tools.go, prompts.go,
//     resources.go), tasks (tasks.go);
//   - the raw path (forward.go): a transport that answers outside the SDK
//     (the HTTP fast path, stdio mode's raw path) asks RawEligible, then
//     Route, which reads the params once and decides where the request
//     goes, then Send, which rewrites the routed members (internal/rawjson)
//     and answers with the server's bytes. Anything Route declines goes to
//     the SDK path, which owns those errors.
//
// What servers send back is matched to the call in flight (calls.go) and
// relayed (relay.go, progress.go, subscriptions.go; requests.go for
// sampling, elicitation and roots; clienttasks.go for tasks agents run for
// servers). Interceptors run around tools/call on both paths (hooks.go).
//
// Below it: internal/naming (the exported names), internal/rawjson (byte
// edits of JSON objects), internal/tasktable (the task tables),
// internal/intercept (interceptors). It serves no transport itself.
//
// The 2026-07-28 protocol era: per-request capabilities (a request that
// carries its client's capabilities instead of a session's initialize)
// belong in RawEligible and Route, which today read them from the session
// (ServerSession.InitializeParams); stateless routing (no session to hold
// a request's state) belongs in Route and Forward, which then carry what
// the session carries now (log level, roots); input requests and their
// multi-round-trip answers (inputResponses, requestState in a request's
// params) belong in Forward and Send, next to the progress token, since
// they too are members rewritten per server. Of the input requests, one
// case is implemented: a 2026 server's InputRequiredResult answered for a
// 2025-era agent (legacyshim.go, through callRaw, which every raw send of
// a tools/call, prompts/get or resources/read goes through); the rest is
// not.
package aggregate
