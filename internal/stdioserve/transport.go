// Package stdioserve serves one MCP session of the merged server over a
// process's stdin and stdout (mcp-gateway's stdio mode) the way a command-line
// client expects from a server it pipes to: every request read before EOF is
// answered, a request the client cancelled is not, and nothing is said about
// a list the client never asked for.
package stdioserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
)

// New returns a Transport on in and out. out is never closed: the process may
// still need it, and closing it is the exit's job.
func New(in io.Reader, out io.Writer, grace time.Duration) *Transport {
	w := &lineWriter{w: out}
	spy := newBatchSpy(newLineGate(in, w, MaxLineBytes))
	// The gate bounds a line; the SDK's own cap counts a frame's bytes as its
	// decoder reads ahead, which may take in part of the next line.
	inner := &mcp.IOTransport{Reader: io.NopCloser(spy), Writer: w, MaxLineLength: -1}
	return &Transport{Inner: inner, Grace: grace, out: w, batches: spy, gated: true, ready: make(chan struct{})}
}

// lineWriter is stdout, shared by the SDK's transport and the raw path:
// each Write is one whole message, never interleaved with another. Close
// keeps the MCP transport from closing stdout.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (*lineWriter) Close() error { return nil }

// Transport answers what was asked before stdin closed, except what
// the client cancelled. The SDK ends a
// session at EOF and cancels the requests still in flight, so
// `printf '<initialize>\n<tools/list>\n' | mcp-gateway stdio` would print
// only the first answer, or none. Its connection holds EOF back until every
// request read so far has its response written, or grace has passed.
//
// It also answers task requests (aggregate.IsTaskRequest) with task, as the
// HTTP endpoint does: the SDK's server does not know them. And it hands the
// gateway the params of each request it forwards as sent
// (aggregate.WithRawParams), as the HTTP endpoint does. With Forward set,
// the requests aggregate.ForwardsRaw takes are answered outside the SDK
// with the server's bytes (rawpath.go).
type Transport struct {
	// Inner is the transport the client's messages come on (stdin and
	// stdout, see New).
	Inner mcp.Transport
	// Grace bounds how long EOF is held back for answers still pending.
	Grace time.Duration
	// Task answers task requests; nil leaves them to the SDK.
	Task func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	// Initialized, if set, gets the params of the client's initialize
	// before the SDK reads it: what the SDK's types drop (the client's
	// tasks capability).
	Initialized func(params json.RawMessage)
	// TaskStatus, if set, takes the client's notifications/tasks/status
	// (about a task it runs for a server), which the SDK does not know.
	TaskStatus func(params json.RawMessage)
	// Forward, if set, answers the requests aggregate.ForwardsRaw takes
	// outside the SDK (aggregate.RequestStream): see rawpath.go. It needs
	// the Transport of New, whose stdout the raw path writes to.
	Forward Forward

	out     *lineWriter // New's stdout
	batches *batchSpy   // New's stdin: which requests came in a batch
	gated   bool        // New's stdin passes a lineGate: a bad message need not end the session

	// ready holds back the client's first message until Connected: the
	// SDK's Server.Connect starts reading before it records which versions
	// this transport serves (SupportsProtocolVersion), and a server/discover
	// read in that moment would be answered with every version the SDK
	// knows. nil (a Transport not made by New): no wait.
	ready     chan struct{}
	readyOnce sync.Once
}

// Connected tells the transport that the SDK's Server.Connect has returned,
// so the client's messages may be read. Serve the Transport of New with
// Server.Connect, then call Connected; Server.Run never does, and a session
// served that way reads nothing.
func (t *Transport) Connected() {
	if t.ready != nil {
		t.readyOnce.Do(func() { close(t.ready) })
	}
}

// Connect implements mcp.Transport.
func (t *Transport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if t.gated {
		c = &tolerantConn{Connection: c, out: t.out}
	}
	dc := &drainConn{Connection: c, grace: t.Grace, task: t.Task, initialized: t.Initialized, taskStatus: t.TaskStatus, pending: map[jsonrpc.ID]bool{}, cancelled: map[jsonrpc.ID]bool{}, listed: map[string]bool{},
		changed: make(chan struct{}, 1), closed: make(chan struct{}), ready: t.ready}
	if t.batches != nil {
		dc.batches, dc.inBatch = t.batches, map[jsonrpc.ID]bool{}
	}
	if t.Forward != nil && t.out != nil {
		dc.raw = newRawPath(dc, t.Forward, t.out)
	}
	return dc, nil
}

type drainConn struct {
	mcp.Connection
	grace time.Duration
	task  func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	// initialized and taskStatus are Transport's.
	initialized func(params json.RawMessage)
	taskStatus  func(params json.RawMessage)

	mu        sync.Mutex
	pending   map[jsonrpc.ID]bool // calls read and not yet answered
	cancelled map[jsonrpc.ID]bool // calls the client cancelled before their answer: it is not sent
	changed   chan struct{}       // signalled when pending shrinks
	listed    map[string]bool     // kinds of list the client asked for: "tools", "prompts", "resources"
	closed    chan struct{}
	closeOnce sync.Once

	raw *rawPath // nil: every request goes to the SDK
	// batches tells the requests that came in a batch; the SDK answers
	// them all (see batchSpy). inBatch holds those still pending.
	batches *batchSpy
	inBatch map[jsonrpc.ID]bool
	eof     error         // the inner connection's EOF, held while declined requests still go to the SDK
	ready   chan struct{} // Transport.ready
}

// listKind names the list a list request or a list_changed notification is
// about ("tools", "prompts", "resources"; templates count as resources, as
// the notification does), or "" for any other method.
func listKind(method string) string {
	switch method {
	case "tools/list", "notifications/tools/list_changed":
		return "tools"
	case "prompts/list", "notifications/prompts/list_changed":
		return "prompts"
	case "resources/list", "resources/templates/list", "notifications/resources/list_changed":
		return "resources"
	}
	return ""
}

func (c *drainConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if c.ready != nil {
		select {
		case <-c.ready:
		case <-c.closed:
			return nil, io.EOF
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	for {
		msg, err := c.next(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) {
				if declined := c.drain(ctx); declined != nil {
					c.eof = err
					return declined, nil
				}
			}
			return nil, err
		}
		if declined, ok := msg.(declinedRequest); ok {
			return declined.Request, nil
		}
		if msg, ok := c.take(ctx, msg); ok {
			return msg, nil
		}
	}
}

// next is the next message from the client, or a request the raw path
// declined (as a declinedRequest, already counted as pending).
func (c *drainConn) next(ctx context.Context) (jsonrpc.Message, error) {
	if c.raw == nil {
		return c.Connection.Read(ctx)
	}
	if c.eof != nil {
		return nil, c.eof
	}
	return c.raw.next(ctx)
}

// declinedRequest is a request the raw path gave back to the SDK.
type declinedRequest struct{ *jsonrpc.Request }

// take handles one message from the client: it returns the message for the
// SDK, or false when it was answered or consumed here.
func (c *drainConn) take(ctx context.Context, msg jsonrpc.Message) (jsonrpc.Message, bool) {
	if resp, ok := msg.(*jsonrpc.Response); ok && c.raw != nil && c.raw.deliver(resp) {
		return nil, false // the answer to a request of the raw path's
	}
	if req, ok := msg.(*jsonrpc.Request); ok {
		if refusal := statelessRefusal(req); refusal != nil {
			_ = c.Connection.Write(ctx, refusal)
			return nil, false
		}
		switch {
		case req.Method == "initialize" && req.IsCall() && c.initialized != nil:
			c.initialized(req.Params)
		case req.Method == "notifications/tasks/status" && !req.IsCall() && c.taskStatus != nil:
			c.taskStatus(req.Params)
			return nil, false
		}
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() && c.task != nil && aggregate.IsTaskRequest(req.Method, req.Params) {
		c.mu.Lock()
		c.pending[req.ID] = true
		c.mu.Unlock()
		go func() {
			res, err := c.task(context.WithoutCancel(ctx), req.Method, req.Params)
			resp := &jsonrpc.Response{ID: req.ID, Result: res}
			if err != nil {
				var wire *jsonrpc.Error
				if !errors.As(err, &wire) {
					wire = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
				}
				resp.Result, resp.Error = nil, wire
			}
			_ = c.Write(context.Background(), resp)
		}()
		return nil, false
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() && req.Extra == nil {
		// The params as the client sent them, for the gateway to forward
		// (the SDK decodes them into its types, which drop what they do
		// not know), with the id as written (a subscriptions/listen's is
		// the subscriptionId of what its stream carries); and for every
		// request its id, which its span carries (the SDK gives a handler
		// no other way to see it): a list or a ping too.
		h := make(http.Header, 1)
		if len(req.Params) > 0 && aggregate.KeepsRawParams(req.Method) {
			h = aggregate.WithRawParams(nil, req.Params)
			if id, err := json.Marshal(req.ID.Raw()); err == nil {
				h = aggregate.WithRawID(h, id)
			}
		}
		req.Extra = &mcp.RequestExtra{Header: aggregate.WithPipeID(h, fmt.Sprint(req.ID.Raw()))}
	}
	if req, ok := msg.(*jsonrpc.Request); ok {
		c.mu.Lock()
		var raw bool
		switch {
		case req.IsCall():
			batched := c.batches != nil && c.batches.batched(req.ID)
			if batched {
				c.inBatch[req.ID] = true
			} else if c.raw != nil && aggregate.ForwardsRaw(req.Method) && !c.pending[req.ID] && !isStateless(req) {
				// (A 2026-era request goes through the SDK, whose
				// results the aggregate stamps for the revision: era.go.)
				raw = true
			}
			c.pending[req.ID] = true
			// A cancellation that came while an earlier call with this id
			// was being answered is about that call, not this one.
			delete(c.cancelled, req.ID)
			if kind := listKind(req.Method); kind != "" {
				c.listed[kind] = true
			}
		case req.Method == "notifications/cancelled":
			// The receiver of a cancellation should not answer the request
			// (a server connected directly does not), but the SDK answers
			// "context canceled" once the handler returns: that answer is
			// dropped in Write. Marked before the SDK reads the notification,
			// so before the handler learns of it. Only a call still pending
			// is marked, so a later call reusing an answered id is answered.
			var p struct {
				RequestID any `json:"requestId"`
			}
			if json.Unmarshal(req.Params, &p) == nil {
				// A call in a batch is still answered: the SDK writes a
				// batch's answers once each of its calls has one.
				if id, err := jsonrpc.MakeID(p.RequestID); err == nil && c.pending[id] && !c.inBatch[id] {
					delete(c.pending, id)
					c.cancelled[id] = true
					if c.raw != nil && c.raw.cancel(id) {
						c.mu.Unlock()
						c.signal()
						return nil, false // a raw call's: the SDK never saw it
					}
				}
			}
		}
		c.mu.Unlock()
		if raw {
			c.raw.start(req)
			return nil, false
		}
	}
	return msg, true
}

func (c *drainConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	// A list_changed about a list the client never asked for carries no
	// news, and one sent while the servers' prompts and resources are first
	// named can reach a client before its initialize answer (a client reading
	// "one answer per request" then takes it for the answer). Such a
	// notification is not sent; once the client has listed that kind, every
	// change is. A 2026-era client asked for the changes it is sent on its
	// subscriptions/listen, which names itself in each (subscriptionId).
	if req, ok := msg.(*jsonrpc.Request); ok && !req.IsCall() {
		if kind := listKind(req.Method); kind != "" && !bytes.Contains(req.Params, []byte(`"io.modelcontextprotocol/subscriptionId"`)) {
			c.mu.Lock()
			listed := c.listed[kind]
			c.mu.Unlock()
			if !listed {
				return nil
			}
		}
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		dropped := c.cancelled[resp.ID]
		delete(c.cancelled, resp.ID)
		c.mu.Unlock()
		if dropped {
			return nil
		}
	}
	err := c.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		delete(c.pending, resp.ID)
		delete(c.inBatch, resp.ID)
		c.mu.Unlock()
		c.signal()
	}
	return err
}

// signal wakes drain: pending shrank.
func (c *drainConn) signal() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

func (c *drainConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		if c.raw != nil {
			c.raw.stop()
		}
	})
	return c.Connection.Close()
}

// drain waits until every pending call is answered, grace passes, or the
// connection is closed. A request the raw path declines meanwhile is
// returned, for the SDK to answer.
func (c *drainConn) drain(ctx context.Context) jsonrpc.Message {
	var declined <-chan *jsonrpc.Request
	if c.raw != nil {
		declined = c.raw.declined
	}
	timer := time.NewTimer(c.grace)
	defer timer.Stop()
	for {
		c.mu.Lock()
		n := len(c.pending)
		c.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-c.changed:
		case req := <-declined:
			return req
		case <-timer.C:
			return nil
		case <-c.closed:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}
