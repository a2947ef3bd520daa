package endpoint

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
)

// A JSON-RPC batch (protocol 2025-03-26 and older) is answered by the fast
// path when every one of its messages is something the fast path answers
// on its own as a single message, and the answers cannot need a stream:
// each request is routed as it would be alone (the same aggregate calls,
// its params passed as sent), the requests run at once, and their answers
// go back as one JSON array in the batch's order. Otherwise the whole batch
// is left to the SDK, which decodes each message into its types: a batch is
// answered by one path, never split between both.
//
// What a batch may hold here: requests of the lists and ping (answered as
// one would be alone, listResult) and of the methods
// the gateway forwards raw (aggregate.ForwardsRaw, task requests), when the
// session's calls need no stream (aggregate.RawEligible without one, no
// progress token) and the request routes (aggregate.Route: read and
// routed once, before anything runs, and sent as routed);
// notifications/cancelled of a fast-path call in flight;
// notifications/tasks/status; the agent's responses to the gateway's
// requests on fast-path streams. A batch of only notifications and
// responses is answered 202, as the SDK answers it.

// batchCall is one request of a batch the fast path answers.
type batchCall struct {
	msg   *rpcMessage
	fw    aggregate.Forward // a forwarded request, as routed
	task  bool
	list  bool            // a list or ping, answered with page (listResult)
	page  json.RawMessage // read before anything runs
	items int             // the page's, for the list-size metric
	ctx   context.Context
	stop  context.CancelCauseFunc
	res   json.RawMessage
	err   error
}

// batch answers a batch and reports true, or reports false having written
// and done nothing.
func (f *fastPath) batch(w http.ResponseWriter, r *http.Request, sid string, msg *rpcMessage) bool {
	if !acceptsJSON(r) || foreignHost(r) {
		return false
	}
	ss := f.sessions.lookup(sid)
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	if ip == nil {
		return false
	}
	// The SDK refuses a batch by the request's Mcp-Protocol-Version (none
	// means 2025-03-26); the session guard (sessions.go) already refused
	// one on a session whose negotiated version has no batches.
	if v := r.Header.Get("Mcp-Protocol-Version"); (v != "" && v != ip.ProtocolVersion) || negotiatedVersion(ss) >= "2025-06-18" {
		return false
	}
	hasStream := f.e.sessions.hasStream(sid)
	var (
		calls    []*batchCall      // requests, in the batch's order
		cancels  []json.RawMessage // ids of fast-path calls to cancel
		statuses []json.RawMessage // notifications/tasks/status params
		answers  []*rpcMessage     // responses to the gateway's requests
		ids      = make(map[string]bool, len(msg.Elems))
		eligible = -1 // RawEligible, once asked: 0 or 1
	)
	for _, el := range msg.Elems {
		switch el.Method {
		case "":
			if len(el.ID) == 0 {
				return false
			}
			answers = append(answers, el)
			continue
		case "notifications/cancelled":
			id := cancelledID(el)
			if len(el.ID) != 0 || id == nil {
				return false
			}
			cancels = append(cancels, id)
			continue
		case "notifications/tasks/status":
			if len(el.ID) != 0 {
				return false
			}
			statuses = append(statuses, el.Params)
			continue
		}
		if len(el.ID) == 0 || ids[string(el.ID)] {
			return false // a notification the SDK owns, or an id used twice
		}
		ids[string(el.ID)] = true
		c := &batchCall{msg: el, task: aggregate.IsTaskRequest(el.Method, el.Params)}
		if !c.task && f.e.agg.ViewOwns(r.Header, el.Method, el.Params) {
			return false // the search view's: the SDK path answers the batch
		}
		switch {
		case isListMethod(el.Method):
			page, items, ok := f.listResult(el)
			if !ok {
				return false // the single request would be the SDK's too
			}
			c.list, c.page, c.items = true, page, items
		case c.task:
		case !aggregate.ForwardsRaw(el.Method):
			return false
		default:
			if eligible < 0 {
				eligible = 0
				if f.e.agg.RawEligible(ss, hasStream, false) {
					eligible = 1
				}
			}
			if eligible == 0 {
				return false // its answer may need a stream
			}
			var ok bool
			if c.fw, ok = f.e.agg.Route(el.Method, el.Params, false); !ok {
				return false // the SDK's error, or a progress token (no stream here)
			}
		}
		calls = append(calls, c)
	}
	stops, ok := f.register(r.Context(), sid, calls, cancels, answers)
	if !ok {
		return false
	}
	defer f.unregister(sid, calls)

	// The batch is the fast path's from here. Notifications and responses
	// first, as the SDK reads a batch in order.
	for _, stop := range stops {
		stop(errCancelledByAgent)
	}
	for _, p := range statuses {
		f.e.agg.AgentTaskStatus(ss, p)
	}
	for _, el := range answers {
		f.deliver(sid, el.ID, el.Raw)
	}
	if len(calls) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return true
	}

	var wg sync.WaitGroup
	for i, c := range calls {
		if c.list {
			continue
		}
		run := func() {
			if c.task {
				c.res, c.err = f.e.agg.Task(c.ctx, ss, r.Header, c.msg.Method, c.msg.Params)
			} else {
				c.res, c.err = f.e.agg.Send(c.ctx, ss, &c.fw, nil, nil)
			}
		}
		if i == len(calls)-1 {
			run() // the last on this goroutine
		} else {
			wg.Go(run)
		}
	}
	wg.Wait()

	size := 2
	for _, c := range calls {
		size += len(c.page) + len(c.res) + len(c.msg.ID) + 48
	}
	out := make([]byte, 0, size)
	out = append(out, '[')
	n := 0
	for _, c := range calls {
		var member string
		var raw json.RawMessage
		switch {
		case c.list:
			member, raw = "result", c.page
			f.endList(f.serveList(r, sid, c.msg), c.msg.Method, c.items)
		case errors.Is(context.Cause(c.ctx), errCancelledByAgent):
			continue // no answer to a cancelled request
		case errors.Is(c.err, aggregate.ErrNeedsSession):
			// Route said yes, but its params could not be rewritten
			// for the server: nothing was sent, and the batch is
			// answered already.
			member, raw = "error", aggregate.ErrorJSON(&jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: "the gateway could not forward this request of a batch (its params could not be rewritten for the server); nothing was sent"})
		case c.err != nil:
			member, raw = "error", aggregate.ErrorJSON(callError(c.ctx, r, c.err))
		default:
			member, raw = "result", c.res
		}
		if n > 0 {
			out = append(out, ',')
		}
		n++
		out = appendMessage(out, c.msg.ID, member, raw)
	}
	if n == 0 { // every request was cancelled
		noAnswer(w)
		return true
	}
	writeWhole(w, append(out, "]\n"...))
	return true
}

// register takes a batch for the fast path: it checks that the session is
// not being closed, that no request id is in flight on the session, and
// that every cancellation and response names what the fast path holds,
// and then records the requests as calls in flight, each with a context
// of its own (ctx's child), all at once. It returns the stops of the calls
// the cancellations name, or false, having recorded nothing, when the
// batch is the SDK's.
func (f *fastPath) register(ctx context.Context, sid string, calls []*batchCall, cancels []json.RawMessage, answers []*rpcMessage) ([]context.CancelCauseFunc, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ended := f.ended[sid]; ended {
		return nil, false
	}
	for _, c := range calls {
		if _, dup := f.calls[fastCallKey{sid, string(c.msg.ID)}]; dup {
			return nil, false
		}
	}
	stops := make([]context.CancelCauseFunc, 0, len(cancels))
	for _, id := range cancels {
		stop, ok := f.calls[fastCallKey{sid, string(id)}]
		if !ok {
			return nil, false
		}
		stops = append(stops, stop)
	}
	for _, el := range answers {
		if _, ok := f.asks[fastCallKey{sid, string(el.ID)}]; !ok {
			return nil, false
		}
	}
	for _, c := range calls {
		if c.list {
			continue
		}
		// The calls of a batch live as long as its HTTP request.
		c.ctx, c.stop = context.WithCancelCause(ctx)
		f.calls[fastCallKey{sid, string(c.msg.ID)}] = c.stop
	}
	return stops, true
}

// unregister forgets a batch's calls once answered.
func (f *fastPath) unregister(sid string, calls []*batchCall) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range calls {
		if c.stop != nil {
			delete(f.calls, fastCallKey{sid, string(c.msg.ID)})
			c.stop(nil)
		}
	}
}
