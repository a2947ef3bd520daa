package endpoint

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
)

// The endpoint serves both protocol eras from one URL, chosen per request:
//
//   - the 2025 era (2025-11-25 and older): initialize opens a session, every
//     other request names it in Mcp-Session-Id; the fast path and the SDK's
//     stateful handler serve it, as they always did;
//   - the 2026 era (2026-07-28, the stateless revision): a request whose
//     params._meta carries io.modelcontextprotocol/protocolVersion (or, for
//     a GET, DELETE or notification, which carry no _meta, whose
//     MCP-Protocol-Version header names that revision) is self-contained.
//     It goes to a second SDK handler on the same merged server, stateless
//     (a plain tools/call aside, which the fast path answers the same:
//     stateless.go):
//     the SDK checks the headers against the body (-32020), the _meta
//     (-32602), answers server/discover and refuses the methods the revision
//     removed (404, -32601), and stamps resultType and serverInfo on typed
//     results; the aggregate does the same for the results it relays as the
//     server's bytes. Nothing of such a request outlives it, so any replica
//     can serve the next one.
//
// The classification runs in the JSON-RPC guard, before any session lookup,
// so that a 2026 request never meets the 2025 era's "Mcp-Session-Id header
// required" refusal.

// protocolVersionHeader is the header every HTTP request after
// initialize (2025 era) or every request (2026 era) names its version in.
const protocolVersionHeader = "Mcp-Protocol-Version"

// eraOf decides the era of a checked POST. stateless is true for a 2026-era
// request; refusal is the -32022 answer for a request that claims a protocol
// version the gateway speaks in neither era (the SDK would take 1900-01-01
// in _meta for a 2025 request and serve it).
func eraOf(h http.Header, msg *rpcMessage) (stateless bool, refusal *jsonrpc.Error) {
	if msg.Batch > 0 {
		return false, nil // no batches after 2025-03-26: the 2025 path refuses them
	}
	version, claimed := aggregate.ClaimedVersion(msg.Params)
	if !claimed {
		// Without the envelope, only a notification can be 2026-era (it
		// carries no _meta triple); a call with the header alone gets the
		// SDK's -32602 for the missing _meta there as well.
		hv := h.Get(protocolVersionHeader)
		return hv >= aggregate.StatelessRevision && h.Get(sessionIDHeader) == "", nil
	}
	if hv := h.Get(protocolVersionHeader); hv != "" && hv != version {
		// A header that disagrees with the body: the SDK's stateless
		// handler answers -32020, which the revision asks for before any
		// version check.
		return true, nil
	}
	if !slices.Contains(mcp.SupportedProtocolVersions(), version) {
		return false, aggregate.UnsupportedVersion(version)
	}
	return version >= aggregate.StatelessRevision, nil
}

// sessionless2026 reports whether a GET or DELETE belongs to the 2026 era:
// no session, and the version header names the stateless revision. The
// stateless handler answers it with 405: the revision has no standing
// stream and no session to delete.
func sessionless2026(r *http.Request) bool {
	return r.Header.Get(sessionIDHeader) == "" && r.Header.Get(protocolVersionHeader) >= aggregate.StatelessRevision
}

// newStatelessHandler is the SDK's streamable handler for 2026-era requests
// on the merged server. Cancellation is the request's: a client that closes
// the request's stream cancels the call, which cancels the upstream call.
func newStatelessHandler(server *mcp.Server, limits Limits) *mcp.StreamableHTTPHandler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{
			Stateless:                    true,
			MaxRequestBodyBytes:          limits.withDefaults().MaxBodyBytes,
			PropagateRequestCancellation: true,
		})
}

// writeErrorObject writes a JSON-RPC error (with its data) and an HTTP
// status: writeRPCError for errors that carry data.
func writeErrorObject(w http.ResponseWriter, status int, id json.RawMessage, e *jsonrpc.Error) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	body, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc.Error  `json:"error"`
	}{"2.0", id, e})
	if err != nil {
		writeRPCError(w, status, id, e.Code, e.Message)
		return
	}
	h := w.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// isStateless reports whether r (with msg, its checked body, if a POST) is
// a 2026-era request, for the stateless handler.
func isStateless(r *http.Request, msg *rpcMessage) bool {
	if r.Method == http.MethodPost {
		return msg != nil && msg.Stateless
	}
	return sessionless2026(r)
}

// openListens counts the subscriptions/listen requests being served, so
// that Shutdown can wait until each has written the result that ends it
// (aggregate.EndListens) before it closes the sessions, which would drop
// the result unwritten.
type openListens struct {
	mu   sync.Mutex
	n    int
	none chan struct{} // closed when n drops to 0
}

// begin counts a request in; the returned func counts it out.
func (o *openListens) begin() (end func()) {
	o.mu.Lock()
	if o.n == 0 {
		o.none = make(chan struct{})
	}
	o.n++
	o.mu.Unlock()
	return func() {
		o.mu.Lock()
		if o.n--; o.n == 0 {
			close(o.none)
		}
		o.mu.Unlock()
	}
}

// wait returns when no request is counted in, or when ctx is done.
func (o *openListens) wait(ctx context.Context) {
	o.mu.Lock()
	if o.n == 0 {
		o.mu.Unlock()
		return
	}
	none := o.none
	o.mu.Unlock()
	select {
	case <-none:
	case <-ctx.Done():
	}
}
