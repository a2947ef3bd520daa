package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// codeRejected is the JSON-RPC code the SDK gives a request its HTTP
// transport could not deliver or got a non-2xx answer for ("rejected by
// transport"). It is a *jsonrpc.Error but not an answer from the remote.
const codeRejected = -32005

// remoteTransport adds the server's headers to every request and remembers
// what the last failed exchange looked like, so errors can say "401" or
// "unreachable" instead of the SDK's wrapped text. It reports a 404 to a
// request that carried a session id through gone: the session is over.
type remoteTransport struct {
	base    http.RoundTripper
	headers map[string]string
	offer   map[string]json.RawMessage // added to the initialize request
	gone    func(status int)
	// stream, if set, sees each message of the SDK's streams (the
	// standalone GET stream, the response streams of its requests) before
	// the SDK does, and reports whether it consumed it.
	stream func(req *http.Request, data []byte) bool
	// sendTimeout, if set, replaces remoteSendTimeout (tests).
	sendTimeout time.Duration
	// meta learns the _meta of the SDK's server/discover, for the raw
	// requests of a 2026-era session.
	meta *requestMeta

	mu        sync.Mutex
	status    int      // status of the last non-2xx response, 0 if none
	err       error    // error of the last failed round trip, nil if none
	goneSince int      // the status that said the session is gone, 0 if none
	initBody  *capture // the initialize response, as the remote sent it
}

// capture keeps the first bytes read from a response body.
type capture struct {
	io.ReadCloser
	mu  sync.Mutex
	buf []byte
}

const captureMax = 1 << 20

func (c *capture) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.mu.Lock()
	if room := captureMax - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(n, room)]...)
	}
	c.mu.Unlock()
	return n, err
}

// initializeResult finds the initialize result in what the remote sent in
// answer to initialize (a JSON body or an SSE stream).
func (t *remoteTransport) initializeResult() json.RawMessage {
	t.mu.Lock()
	c := t.initBody
	t.mu.Unlock()
	if c == nil {
		return nil
	}
	c.mu.Lock()
	body := bytes.Clone(c.buf)
	c.mu.Unlock()
	candidates := [][]byte{body}
	for _, line := range bytes.Split(body, []byte("\n")) {
		if v, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:")); ok {
			candidates = append(candidates, bytes.TrimSpace(v))
		}
	}
	for _, c := range candidates {
		if msg, err := jsonrpc.DecodeMessage(c); err == nil {
			if r, ok := msg.(*jsonrpc.Response); ok && r.Result != nil {
				return r.Result
			}
		}
	}
	return nil
}

func (t *remoteTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet {
		// The SDK's standalone stream: see lateStream.
		return lateStream(req, t.roundTrip), nil
	}
	// remoteRaw bounds its own POSTs.
	if _, bounded := req.Context().Deadline(); bounded || req.Method != http.MethodPost ||
		req.Context().Value(rawRequestKey{}) != nil || isCall(req) {
		return t.roundTrip(req)
	}
	// A notification or an answer the SDK sends with no deadline (its
	// notifications/cancelled, its answer to a ping): the remote accepts
	// it at once, and one that stops reading must not hold the SDK's
	// goroutine forever.
	timeout := t.sendTimeout
	if timeout <= 0 {
		timeout = remoteSendTimeout
	}
	ctx, cancel := context.WithTimeout(req.Context(), timeout)
	resp, err := t.roundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// isCall reports whether req's body is a JSON-RPC request (one that waits
// for its answer), or may be: a body it cannot read again counts as one.
func isCall(req *http.Request) bool {
	if req.GetBody == nil || req.ContentLength < 0 || req.ContentLength > 64<<10 {
		return true // notifications and answers are small
	}
	body, err := req.GetBody()
	if err != nil {
		return true
	}
	defer body.Close()
	b, err := io.ReadAll(io.LimitReader(body, 1<<20))
	if err != nil {
		return true
	}
	msg, err := jsonrpc.DecodeMessage(b)
	if err != nil {
		return true
	}
	call, ok := msg.(*jsonrpc.Request)
	return ok && call.ID.IsValid()
}

// cancelOnClose ends a request's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

func (t *remoteTransport) roundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	if req.Method == http.MethodPost {
		// A nil Idempotency-Key is not sent but lets net/http retry a POST
		// that met a keep-alive connection the remote had just closed (load
		// balancers close idle ones all the time). It retries only when no
		// response byte arrived on a reused connection; without it the call
		// would fail with a bare "EOF".
		req.Header["Idempotency-Key"] = nil
	}
	// A 2026-era request has no session but names its method in a header.
	method := req.Header.Get("Mcp-Method")
	if method == "server/discover" && t.meta != nil && req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			if b, err := io.ReadAll(io.LimitReader(body, 1<<20)); err == nil {
				if msg, err := jsonrpc.DecodeMessage(b); err == nil {
					if call, ok := msg.(*jsonrpc.Request); ok {
						t.meta.learn(call.Method, call.Params)
					}
				}
			}
			body.Close()
		}
	}
	if req.Method == http.MethodPost && req.Header.Get("Mcp-Session-Id") == "" && method == "" {
		if err := offerBody(req, t.offer); err != nil {
			return nil, err
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err == nil && req.Method == http.MethodPost && req.Header.Get("Mcp-Session-Id") == "" && method == "" {
		// The initialize request: keep its answer, for what the SDK's
		// types leave out. It is the first such POST of the session's
		// transport; a remote that gives no session id (a stateless
		// one) has every later POST without one too.
		t.mu.Lock()
		if t.initBody == nil {
			c := &capture{ReadCloser: resp.Body}
			resp.Body = c
			t.initBody = c
		}
		t.mu.Unlock()
	}
	if req.Method == http.MethodDelete {
		return resp, err // the end of a session says nothing about the remote
	}
	// The SDK's own streams: its standalone GET stream, and the response
	// stream of each request it makes (a call through Do, a listing),
	// whose progress would otherwise reach the agent through the SDK's
	// notification goroutine, possibly after the result. remoteRaw reads
	// the streams of its requests itself.
	sdkStream := req.Method == http.MethodGet || (req.Method == http.MethodPost && req.Context().Value(rawRequestKey{}) == nil)
	if err == nil && sdkStream && t.stream != nil && resp.StatusCode == http.StatusOK &&
		strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body = newSSEFilter(resp.Body, DefaultMaxMessageBytes, func(data []byte) bool { return t.stream(req, data) })
	}
	gone := 0
	if resp != nil && resp.StatusCode == http.StatusBadRequest && req.Header.Get("Mcp-Session-Id") != "" && sessionUnknown(resp) {
		gone = http.StatusBadRequest
	}
	t.mu.Lock()
	switch {
	case err != nil:
		if req.Context().Err() == nil {
			t.err, t.status = err, 0
		}
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		// Any answer shows the remote reachable; only a POST's answer
		// replaces the status of the POST before it: the SDK's standalone
		// GET stream (re)opening says nothing about how calls fare.
		t.err = nil
		if req.Method == http.MethodPost {
			t.status = 0
		}
	default:
		// Statuses of POSTs only: the standalone GET stream may be refused
		// (405) by remotes that do not offer it, which is no failure.
		if req.Method == http.MethodPost {
			t.err, t.status = nil, resp.StatusCode
		}
		// A 404 for a known session means the remote lost it (the spec's
		// "session terminated"); the gateway speaks a pinned protocol
		// version that never answers 404 for anything else.
		if resp.StatusCode == http.StatusNotFound && req.Header.Get("Mcp-Session-Id") != "" {
			gone = http.StatusNotFound
		}
		if gone != 0 && t.goneSince == 0 {
			t.goneSince = gone
		}
	}
	t.mu.Unlock()
	if gone != 0 {
		t.gone(gone)
	}
	return resp, err
}

// sessionUnknown reports whether a 400 answer says that the remote does
// not know the request's session: some servers (the TypeScript SDK's, e.g.
// server-everything) answer a session they lost after a restart with 400
// "Bad Request: No valid session ID provided" rather than the 404 the
// transport asks for. The body is read (a bounded prefix) and put back.
func sessionUnknown(resp *http.Response) bool {
	head, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	if err != nil {
		return false
	}
	msg := strings.ToLower(string(head))
	if !strings.Contains(msg, "session") {
		return false
	}
	for _, says := range []string{"no valid session", "session not found", "unknown session", "invalid session", "session expired", "session id not found"} {
		if strings.Contains(msg, says) {
			return true
		}
	}
	return false
}

// last returns what the last failed exchange saw.
func (t *remoteTransport) last() (status int, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.status, t.err
}

// sessionGone returns the status with which the remote said it no longer
// knows the session (404, or a 400 saying so), or 0.
func (t *remoteTransport) sessionGone() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.goneSince
}
