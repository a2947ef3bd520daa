package stdioserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
)

// Forward answers a request aggregate.ForwardsRaw takes with the server's
// result bytes (aggregate.RequestStream): the call's notifications go
// through notify and the server's requests to the client through ask. It
// returns aggregate.ErrNeedsSession, having sent nothing, for a request
// the SDK's session must answer.
type Forward func(ctx context.Context, method string, params json.RawMessage, notify aggregate.Notify, ask aggregate.Ask) (json.RawMessage, error)

// The raw path answers tools/call, prompts/get, resources/read and
// completion/complete outside the SDK's session, as the HTTP endpoint's
// fast path does: the request's params go to the server as the client sent
// them, and the server's result goes to stdout as the bytes it wrote (the
// SDK would decode the request into its types and encode the result again).
// Notifications of the call (progress, log messages) and the server's
// requests during it (sampling, elicitation, roots) are written to stdout
// as they come, before the result; the client's answer to such a request
// is caught before the SDK would see it. A call the client cancels
// (notifications/cancelled) ends, upstream too, without an answer. What
// the raw path declines goes to the SDK as it came.
//
// To hand a declined request back to the SDK after later messages were
// read, the raw path reads the client's messages on a goroutine of its own
// and drainConn.Read takes from both.
type rawPath struct {
	c       *drainConn
	forward Forward
	out     *lineWriter

	ctx  context.Context // ends when the connection closes
	stop context.CancelFunc

	incoming chan readResult       // the client's messages, in order
	declined chan *jsonrpc.Request // requests the raw path gives back to the SDK
	pump     sync.Once

	mu     sync.Mutex
	calls  map[jsonrpc.ID]context.CancelCauseFunc // raw calls in flight
	asks   map[jsonrpc.ID]chan answer             // requests to the client awaiting its answer
	askSeq atomic.Uint64
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

// answer is the client's response to a request of the raw path.
type answer struct {
	result json.RawMessage
	err    error
}

// errCancelled is a raw call's cause when the client cancelled it.
var errCancelled = errors.New("cancelled by the client (notifications/cancelled)")

func newRawPath(c *drainConn, forward Forward, out *lineWriter) *rawPath {
	ctx, stop := context.WithCancel(context.Background())
	return &rawPath{c: c, forward: forward, out: out, ctx: ctx, stop: stop,
		incoming: make(chan readResult), declined: make(chan *jsonrpc.Request),
		calls: map[jsonrpc.ID]context.CancelCauseFunc{}, asks: map[jsonrpc.ID]chan answer{}}
}

// next returns the client's next message, or a declined request (as a
// declinedRequest).
func (r *rawPath) next(ctx context.Context) (jsonrpc.Message, error) {
	r.pump.Do(func() { go r.read() })
	select {
	case req := <-r.declined:
		return declinedRequest{req}, nil
	case res := <-r.incoming:
		return res.msg, res.err
	case <-r.c.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// read passes the client's messages to next until the connection fails or
// closes.
func (r *rawPath) read() {
	for {
		msg, err := r.c.Connection.Read(r.ctx)
		select {
		case r.incoming <- readResult{msg, err}:
		case <-r.c.closed:
			return
		}
		if err != nil {
			return
		}
	}
}

// idKey holds the JSON-RPC id of a request Forward serves (RequestID).
type idKey struct{}

// RequestID is the JSON-RPC id of the request whose Forward ctx is, as
// text ("" when ctx is not one's): for its trace.
func RequestID(ctx context.Context) string {
	id, ok := ctx.Value(idKey{}).(jsonrpc.ID)
	if !ok || !id.IsValid() {
		return ""
	}
	return fmt.Sprint(id.Raw())
}

// start forwards req (counted as pending by the caller) on a goroutine of
// its own.
func (r *rawPath) start(req *jsonrpc.Request) {
	ctx, cancel := context.WithCancelCause(context.WithValue(r.ctx, idKey{}, req.ID))
	r.mu.Lock()
	r.calls[req.ID] = cancel
	r.mu.Unlock()
	go func() {
		res, err := r.forward(ctx, req.Method, req.Params, r.notify, r.ask)
		r.mu.Lock()
		delete(r.calls, req.ID)
		r.mu.Unlock()
		cancelled := errors.Is(context.Cause(ctx), errCancelled)
		cancel(nil)
		if errors.Is(err, aggregate.ErrNeedsSession) && !cancelled {
			select {
			case r.declined <- req:
			case <-r.c.closed:
			}
			return
		}
		r.respond(req.ID, res, err)
	}()
}

// cancel ends the raw call id, if one is in flight, and reports whether it
// was.
func (r *rawPath) cancel(id jsonrpc.ID) bool {
	r.mu.Lock()
	stop, ok := r.calls[id]
	r.mu.Unlock()
	if ok {
		stop(errCancelled)
	}
	return ok
}

// respond writes the answer to a raw call, unless the client cancelled it
// or the connection is closed, and counts it answered.
func (r *rawPath) respond(id jsonrpc.ID, res json.RawMessage, err error) {
	c := r.c
	c.mu.Lock()
	dropped := c.cancelled[id]
	delete(c.cancelled, id)
	c.mu.Unlock()
	select {
	case <-c.closed:
		dropped = true
	default:
	}
	if !dropped {
		member, raw := "result", res
		if err == nil && len(bytes.TrimSpace(raw)) == 0 {
			raw = json.RawMessage(`{}`) // no result bytes: still an answer
		}
		if err != nil {
			var wire *jsonrpc.Error
			if !errors.As(err, &wire) {
				wire = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
			}
			member, raw = "error", aggregate.ErrorJSON(wire)
		}
		idb, _ := json.Marshal(id.Raw())
		b := make([]byte, 0, len(raw)+len(idb)+40)
		b = append(b, `{"jsonrpc":"2.0","id":`...)
		b = append(b, idb...)
		b = append(b, `,"`+member+`":`...)
		b = append(oneLine(b, raw), "}\n"...)
		_, _ = r.out.Write(b)
	}
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
	c.signal()
}

// notify writes a notification of a raw call.
func (r *rawPath) notify(method string, params json.RawMessage) error {
	return r.send("", method, params)
}

// send writes a request (id set) or a notification to the client; params
// absent stay absent.
func (r *rawPath) send(id, method string, params json.RawMessage) error {
	select {
	case <-r.c.closed:
		return errors.New("stdio connection closed")
	default:
	}
	m, _ := json.Marshal(method)
	b := make([]byte, 0, len(params)+len(m)+len(id)+48)
	b = append(b, `{"jsonrpc":"2.0",`...)
	if id != "" {
		b = append(b, `"id":`...)
		b = append(b, id...)
		b = append(b, ',')
	}
	b = append(b, `"method":`...)
	b = append(b, m...)
	if len(params) > 0 {
		b = append(b, `,"params":`...)
		b = oneLine(b, params)
	}
	b = append(b, "}\n"...)
	_, err := r.out.Write(b)
	return err
}

// ask sends a server's request during a raw call to the client, with an id
// of the gateway's, and waits for the client's answer (deliver). A request
// the server gives up on, or whose call ends, is cancelled at the client.
func (r *rawPath) ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	name := "mcp-gateway-" + strconv.FormatUint(r.askSeq.Add(1), 10)
	id, _ := jsonrpc.MakeID(name)
	idb, _ := json.Marshal(name)
	ch := make(chan answer, 1)
	r.mu.Lock()
	r.asks[id] = ch
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.asks, id)
		r.mu.Unlock()
	}()
	if err := r.send(string(idb), method, params); err != nil {
		return nil, err
	}
	select {
	case a := <-ch:
		return a.result, a.err
	case <-ctx.Done():
		_ = r.notify("notifications/cancelled", json.RawMessage(`{"requestId":`+string(idb)+`}`))
		return nil, ctx.Err()
	}
}

// deliver gives the client's response to the ask waiting for it and
// reports true, or reports false for a response to anything else.
func (r *rawPath) deliver(resp *jsonrpc.Response) bool {
	r.mu.Lock()
	ch, ok := r.asks[resp.ID]
	r.mu.Unlock()
	if !ok {
		return false
	}
	a := answer{result: resp.Result}
	if resp.Error != nil {
		var wire *jsonrpc.Error
		if !errors.As(resp.Error, &wire) {
			wire = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: resp.Error.Error()}
		}
		a = answer{err: wire}
	}
	select {
	case ch <- a:
	default: // answered twice: the first answer stands
	}
	return true
}

// oneLine appends raw to b as it is, unless it holds a line break (a
// remote server's pretty-printed JSON): then compacted, as one message
// must stay one line on stdio.
func oneLine(b []byte, raw json.RawMessage) []byte {
	if bytes.IndexByte(raw, '\n') < 0 && bytes.IndexByte(raw, '\r') < 0 {
		return append(b, raw...)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return append(b, raw...)
	}
	return append(b, buf.Bytes()...)
}
