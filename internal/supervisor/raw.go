package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// rawIDPrefix marks the ids of raw requests. The SDK's client session
// numbers its requests with integers, so a string id with this prefix can
// only answer a raw request.
const rawIDPrefix = "mcp-gateway-raw-"

// rawCalls are requests written to a server past the SDK's client session:
// the params go out and the result comes back as the bytes the server sent,
// neither decoded into Go types nor encoded again. A forwarded tools/call
// needs nothing more, and decoding and re-encoding its result was most of
// the gateway's cost per call. They share the connection, and its
// reader, with the session.
type rawCalls struct {
	mu      sync.Mutex
	n       uint64
	pending map[string]chan *jsonrpc.Response
	ended   chan struct{} // closed when the connection ends
	err     error         // why it ended; set before ended is closed
}

func newRawCalls() *rawCalls {
	return &rawCalls{pending: make(map[string]chan *jsonrpc.Response), ended: make(chan struct{})}
}

// add registers a new request and returns its id and where its response
// will arrive.
func (r *rawCalls) add() (string, chan *jsonrpc.Response, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return "", nil, r.err
	}
	r.n++
	id := rawIDPrefix + strconv.FormatUint(r.n, 10)
	ch := make(chan *jsonrpc.Response, 1)
	r.pending[id] = ch
	return id, ch, nil
}

func (r *rawCalls) remove(id string) {
	r.mu.Lock()
	delete(r.pending, id)
	r.mu.Unlock()
}

// deliver hands msg to the raw request it answers and reports whether it
// did; everything else is the SDK's.
func (r *rawCalls) deliver(msg jsonrpc.Message) bool {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return false
	}
	id, ok := resp.ID.Raw().(string)
	if !ok || !strings.HasPrefix(id, rawIDPrefix) {
		return false
	}
	r.mu.Lock()
	ch := r.pending[id]
	delete(r.pending, id)
	r.mu.Unlock()
	if ch != nil {
		ch <- resp
	}
	// A late answer to a request given up on is dropped: the SDK would
	// take it for a protocol error.
	return true
}

// end fails every pending request and every later one with err.
func (r *rawCalls) end(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return
	}
	r.err = err
	close(r.ended)
}

// RoundTrip sends one request with raw JSON params and returns the raw
// result: a server's connection, past the SDK's client session.
type RoundTrip = func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)

// roundTrip sends one request with raw params and waits for its response.
// When ctx ends first, the server is told with notifications/cancelled, as
// the SDK's client does for its own requests.
func (c *lineConn) roundTrip(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if c.era2026.Load() {
		var err error
		if params, err = c.meta.stamp(ctx, params); err != nil {
			return nil, err
		}
	}
	id, ch, err := c.raw.add()
	if err != nil {
		return nil, err
	}
	if err := c.writeRequest(id, method, params); err != nil {
		c.raw.remove(id)
		return nil, err
	}
	select {
	case resp := <-ch:
		if resp.Error != nil {
			var wire *jsonrpc.Error
			if errors.As(resp.Error, &wire) {
				return nil, wire
			}
			return nil, resp.Error
		}
		if c.era2026.Load() {
			return legacyResult(resp.Result), nil
		}
		return resp.Result, nil
	case <-c.raw.ended:
		c.raw.remove(id)
		return nil, c.raw.err
	case <-ctx.Done():
		_ = c.writeRaw(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"`, id, `","reason":"the agent cancelled the call"}}`)
		// The server may go on with the request for a while (its progress
		// still comes); it is over when it answers after all, the
		// connection ends, or the grace passes.
		settled := make(chan struct{})
		go func() {
			defer close(settled)
			t := time.NewTimer(CancelledGrace)
			defer t.Stop()
			select {
			case <-ch:
			case <-c.raw.ended:
			case <-t.C:
			}
			c.raw.remove(id)
		}()
		return nil, &CancelledError{Err: ctx.Err(), settled: settled}
	}
}

// CancelledGrace bounds how long a request whose caller gave up is still
// followed: a server told of the cancellation may go on with the request
// and send its progress for a while (the spec lets it), and a server
// connected directly would still deliver that to the client.
const CancelledGrace = 30 * time.Second

// CancelledError is the error of a raw request whose context ended before
// the server answered. The server has been sent notifications/cancelled;
// Settled is closed once it can send nothing more for the request: it
// answered after all, its connection or the request's stream ended, or
// CancelledGrace passed. Until then the request's progress may still come.
type CancelledError struct {
	Err     error // the context's error
	settled <-chan struct{}
}

func (e *CancelledError) Error() string { return e.Err.Error() }
func (e *CancelledError) Unwrap() error { return e.Err }

// Settled is closed once the server can send nothing more for the request.
func (e *CancelledError) Settled() <-chan struct{} { return e.settled }

// writeRequest writes a request with raw params as one line. The params are
// compacted on the way: they come from an agent, and a line break in them
// (pretty-printed JSON, or a hostile client) would end the line early and
// make the rest of it a message of the sender's choosing. Compact also
// refuses params that are not valid JSON.
func (c *lineConn) writeRequest(id, method string, params json.RawMessage) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	buf := bytes.NewBuffer(c.buf[:0])
	buf.WriteString(`{"jsonrpc":"2.0","id":"`)
	buf.WriteString(id)
	buf.WriteString(`","method":"`)
	buf.WriteString(method)
	buf.WriteString(`","params":`)
	if err := json.Compact(buf, params); err != nil {
		// Not the server's fault: an error of the call, not of the session.
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("params: %v", err)}
	}
	buf.WriteString("}\n")
	c.buf = buf.Bytes()
	_, err := c.w.Write(c.buf)
	if cap(c.buf) > 1<<20 {
		c.buf = nil
	}
	return err
}

// writeNotification writes a notification with raw params as one line,
// compacted as writeRequest's.
func (c *lineConn) writeNotification(method string, params json.RawMessage) error {
	m, err := json.Marshal(method)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, params); err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("params: %v", err)}
	}
	return c.writeRaw(`{"jsonrpc":"2.0","method":`, string(m), `,"params":`, buf.String(), `}`)
}

// writeRaw writes the concatenation of parts as one line.
func (c *lineConn) writeRaw(parts ...string) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.buf = c.buf[:0]
	for _, p := range parts {
		c.buf = append(c.buf, p...)
	}
	c.buf = append(c.buf, '\n')
	_, err := c.w.Write(c.buf)
	if cap(c.buf) > 1<<20 {
		c.buf = nil
	}
	return err
}
