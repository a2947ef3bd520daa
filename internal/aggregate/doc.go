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
// The 2026-07-28 protocol era toward agents (era.go, cache.go): a request
// of that era comes on a session the SDK made for it alone (stateless
// HTTP), takes the SDK path, and its results are stamped for the revision
// (resultType, serverInfo, caching hints merged so that no server's hint is
// loosened); its _meta log level is its session's level while it runs; the
// agent's envelope is not forwarded upstream. Input requests: one case is
// implemented, a 2026 server's InputRequiredResult answered for a 2025-era
// agent (legacyshim.go, through callRaw, which every raw send of a
// tools/call, prompts/get or resources/read goes through). Still to come:
// per-request capabilities toward servers (RawEligible and Route read them
// from the session's InitializeParams, which the SDK fills from the
// request's _meta), the other input-request cases (inputResponses,
// requestState in a request's params belong in Forward and Send, next to
// the progress token, since they too are members rewritten per server).
// subscriptions/listen is answered by the gateway, merged over the servers
// (listen.go), its streams holders of the same subscriptions table as the
// 2025-era sessions (subscriptions.go).
package aggregate
