package supervisor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// remoteRaw sends requests to a remote past the SDK's client session, in
// the session the SDK opened: a POST of its own per request, whose response
// (JSON, or an SSE stream) it reads itself. So the result comes back as the
// bytes the remote sent, and whatever the remote sends on that stream
// before the result is handled first, in order: progress and log messages
// go to the gateway's intercept, requests (sampling, elicitation, roots) to
// served, whose answers are POSTed back. The SDK client hands a call's
// result over at once but queues notifications for another goroutine, so
// with it the last progress message of a call could reach the agent after
// the result. (The SDK's connection cannot be wrapped instead: the client
// talks to it through an unexported interface, to start its standalone
// stream and set the protocol version header.)
type remoteRaw struct {
	url       string
	client    *http.Client
	cs        *mcp.ClientSession
	intercept func(*jsonrpc.Request) bool
	serve     func(method string) RequestHandler
	n         atomic.Uint64
	maxBytes  int
	// era2026 is set when the session negotiated 2026-07-28: requests then
	// carry meta's _meta members and the standard headers, and have no
	// session. Set before the session is handed out, like cs.
	era2026 bool
	meta    *requestMeta
	// sendTimeout and grace, if set, replace remoteSendTimeout and
	// CancelledGrace (tests).
	sendTimeout, grace time.Duration
}

// roundTrip is a RoundTrip on the remote session.
func (r *remoteRaw) roundTrip(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if r.era2026 {
		var err error
		if params, err = r.meta.stamp(ctx, params); err != nil {
			return nil, err
		}
		ctx = context.WithValue(ctx, standardHeadersKey{}, standardHeaders{method, requestName(method, params)})
	}
	var body bytes.Buffer
	id := fmt.Sprintf("%s%d", rawIDPrefix, r.n.Add(1))
	body.WriteString(`{"jsonrpc":"2.0","id":"` + id + `","method":`)
	m, _ := json.Marshal(method)
	body.Write(m)
	body.WriteString(`,"params":`)
	if err := json.Compact(&body, params); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("params: %v", err)}
	}
	body.WriteString("}")
	// The exchange lives past ctx: when the caller gives up, the remote is
	// told, and what it still sends for the request on this stream (its
	// progress) is relayed until the stream ends, the answer comes after
	// all, or CancelledGrace passes. A remote connected directly would
	// still deliver that to its client; closing the stream would lose it.
	xctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	type outcome struct {
		res json.RawMessage
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := r.exchange(xctx, ctx, method, id, body.Bytes())
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		stop()
		if r.era2026 && o.err == nil {
			o.res = legacyResult(o.res)
		}
		return o.res, o.err
	case <-ctx.Done():
	}
	settled := make(chan struct{})
	if r.era2026 {
		// The 2026 era cancels a request by closing its stream: there is
		// no session for a notifications/cancelled to name it in.
		stop()
		close(settled)
		return nil, &CancelledError{Err: ctx.Err(), settled: settled}
	}
	go func() {
		defer close(settled)
		defer stop()
		// Tell the remote, as the SDK client does for its own requests
		// (bounded: see send), while the caller goes on.
		p, _ := json.Marshal(map[string]any{"requestId": id, "reason": "the agent cancelled the call"})
		_ = r.send(ctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: p})
		grace := r.grace
		if grace <= 0 {
			grace = CancelledGrace
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
		}
	}()
	return nil, &CancelledError{Err: ctx.Err(), settled: settled}
}

// exchange POSTs a request and reads its response, with xctx (which the
// caller's cancellation does not end). callCtx is the caller's context, for
// the answers to what the remote asks during the request.
func (r *remoteRaw) exchange(xctx, callCtx context.Context, method, id string, body []byte) (json.RawMessage, error) {
	resp, err := r.post(xctx, body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if msg, err := jsonrpc.DecodeMessage(b); err == nil {
			if res, ok := msg.(*jsonrpc.Response); ok && res.Error != nil {
				return nil, fmt.Errorf("%s: HTTP %d: %w", method, resp.StatusCode, res.Error)
			}
		}
		if resp.StatusCode == http.StatusNotFound {
			return nil, fmt.Errorf("%s: %w", method, mcp.ErrSessionMissing)
		}
		return nil, fmt.Errorf("%s: %s", method, resp.Status)
	}
	served := newServed(r.serve, r.answer)
	defer served.close()
	return r.read(callCtx, resp, id, served)
}

// read handles the messages of a request's response until the response to
// id, and returns its result.
func (r *remoteRaw) read(ctx context.Context, resp *http.Response, id string, served *served) (json.RawMessage, error) {
	max := r.maxBytes
	if max <= 0 {
		max = DefaultMaxMessageBytes
	}
	handle := func(data []byte) (json.RawMessage, bool, error) {
		msg, err := jsonrpc.DecodeMessage(data)
		if err != nil {
			return nil, false, nil // not a message: the SDK skips it too
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			if got, _ := m.ID.Raw().(string); got != id {
				return nil, false, nil
			}
			if m.Error != nil {
				var wire *jsonrpc.Error
				if errors.As(m.Error, &wire) {
					return nil, true, wire
				}
				return nil, true, m.Error
			}
			return m.Result, true, nil
		case *jsonrpc.Request:
			switch {
			case !m.ID.IsValid() && r.intercept != nil && r.intercept(m):
			case served.take(m):
			case m.ID.IsValid():
				// A request nobody relays: ping gets its answer, others an
				// error, so that the remote does not wait.
				out := &jsonrpc.Response{ID: m.ID, Result: json.RawMessage(`{}`)}
				if m.Method != "ping" {
					out = &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "mcp-gateway: " + m.Method + " is not relayed on this stream"}}
				}
				_ = r.answer(ctx, out)
			}
		}
		return nil, false, nil
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		b, err := io.ReadAll(io.LimitReader(resp.Body, int64(max)+1))
		if err != nil {
			return nil, fmt.Errorf("read the response: %w", err)
		}
		if res, ok, err := handle(b); ok {
			return res, err
		}
		return nil, fmt.Errorf("the remote's response is not the answer: %.80s", b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), max)
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 { // end of an event
			if len(data) > 0 {
				if res, ok, err := handle(data); ok {
					return res, err
				}
			}
			data = data[:0]
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			// The scanner bounds a line; an event of many data lines is
			// bounded as a whole, like a JSON answer.
			if len(data)+1+len(v) > max {
				return nil, fmt.Errorf("read the response stream: an event is larger than %d bytes", max)
			}
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(v, []byte(" "))...)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the response stream: %w", err)
	}
	return nil, errors.New("the remote's response stream ended before the answer")
}

// remoteSendTimeout bounds a POST that carries a notification or a
// response, which the remote accepts at once (202): one that stops reading
// must not hold a call, or a handler's goroutine, forever.
const remoteSendTimeout = 30 * time.Second

// answer POSTs a response to a request of the remote.
func (r *remoteRaw) answer(ctx context.Context, msg jsonrpc.Message) error {
	return r.send(ctx, msg)
}

// send POSTs a notification or a response, which the remote accepts with
// 202 and no body, within remoteSendTimeout, whether or not ctx has ended
// (a cancellation must still reach the remote).
func (r *remoteRaw) send(ctx context.Context, msg jsonrpc.Message) error {
	return r.sendWith(ctx, msg, r.sessionID(), r.version())
}

func (r *remoteRaw) sendWith(ctx context.Context, msg jsonrpc.Message, sessionID, version string) error {
	if req, ok := msg.(*jsonrpc.Request); ok && version >= Protocol2026 {
		ctx = context.WithValue(ctx, standardHeadersKey{}, standardHeaders{method: req.Method})
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	timeout := r.sendTimeout
	if timeout <= 0 {
		timeout = remoteSendTimeout
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	resp, err := r.postWith(ctx, b, sessionID, version)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return errors.New(resp.Status)
	}
	return nil
}

// sessionID and version are the session's, for the headers of a POST.
func (r *remoteRaw) sessionID() string { return r.cs.ID() }

// standardHeaders are the Mcp-Method and Mcp-Name headers of a 2026-era
// POST, which the remote checks against the body.
type standardHeaders struct{ method, name string }

type standardHeadersKey struct{}

func (r *remoteRaw) version() string {
	if ir := r.cs.InitializeResult(); ir != nil && ir.ProtocolVersion != "" {
		return ir.ProtocolVersion
	}
	return ProtocolVersion
}

func (r *remoteRaw) post(ctx context.Context, body []byte) (*http.Response, error) {
	return r.postWith(ctx, body, r.sessionID(), r.version())
}

// rawRequestKey marks the context of remoteRaw's own POSTs, whose response
// streams it reads itself (the transport filters only the SDK's).
type rawRequestKey struct{}

func (r *remoteRaw) postWith(ctx context.Context, body []byte, sessionID, version string) (*http.Response, error) {
	ctx = context.WithValue(ctx, rawRequestKey{}, true)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sessionID != "" {
		req.Header.Set("Mcp-Session-Id", sessionID)
	}
	if version == "" {
		version = ProtocolVersion
	}
	req.Header.Set("Mcp-Protocol-Version", version)
	if h, ok := ctx.Value(standardHeadersKey{}).(standardHeaders); ok && version >= Protocol2026 {
		req.Header.Set("Mcp-Method", h.method)
		if h.name != "" {
			req.Header.Set("Mcp-Name", h.name)
		}
	}
	return r.client.Do(req)
}
