package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
)

// RemoteOptions configure how remote servers are reached. They parallel
// Options; the zero value works.
type RemoteOptions struct {
	// Logger receives lifecycle events.
	Logger zerolog.Logger
	// ConnectTimeout bounds the MCP handshake of one connection, including
	// OnReady. Zero means 30s.
	ConnectTimeout time.Duration
	// NewClient returns the MCP client used to talk to the named server; the
	// aggregator uses it to receive that server's notifications. If nil, a
	// plain client is used.
	NewClient func(server string) *mcp.Client
	// OnReady is called after every successful connection with the new
	// session and raw requests on its connection, from the supervising
	// goroutine, before the session is handed to callers. The aggregator
	// lists the server's tools here.
	OnReady func(ctx context.Context, r *Remote, cs *mcp.ClientSession, raw RoundTrip) error
	// Intercept and ServeRequest are as in Options, for what the remote
	// sends during a raw request (see remoteRaw): notifications are
	// relayed before the request's result, so that those of a call reach
	// the agent first, and requests are answered as raw JSON.
	Intercept    func(server string, n *jsonrpc.Request) bool
	ServeRequest func(server, method string) RequestHandler
	// OfferCapabilities is as in Options.
	OfferCapabilities map[string]json.RawMessage
	// Redact, if set, is applied to every message that quotes the remote
	// (errors, log lines), so header values never reach a log.
	Redact func(string) string
	// RestartPolicy: backoff between reconnections and when a remote is
	// failed, as for a stdio server.
	RestartPolicy
}

func (o *RemoteOptions) defaults() {
	clientDefaults(&o.ConnectTimeout, &o.NewClient, &o.Redact)
	o.RestartPolicy.defaults()
}

// Remote supervises one remote MCP server reached over streamable HTTP. It
// offers what Server offers for a stdio child (Run, WaitStarted, Do, Status,
// the same states) so the gateway merges both alike. Where a child exits, a
// remote loses its session: the remote restarted or expired it (HTTP 404),
// or became unreachable. Remote then connects again with the same backoff
// and failure rules as a crashed child. All methods are safe for concurrent
// use.
type Remote struct {
	spec catalog.ServerSpec
	opts RemoteOptions
	log  zerolog.Logger
	// base carries every request (a clone of http.DefaultTransport, so its
	// idle connections can be closed when Run returns).
	base  *http.Transport
	where string // the URL without its query, for messages

	lifecycle // mu guards cur and initRaw too
	cur       *remoteSession
	initRaw   json.RawMessage
}

// InitializeResultRaw is the remote's latest initialize result as it sent
// it, with what the SDK's types leave out (the tasks capability); it is set
// before OnReady runs.
func (r *Remote) InitializeResultRaw() json.RawMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.initRaw
}

// NewRemote returns a supervisor for a KindRemote spec. Nothing connects
// until Run.
func NewRemote(spec catalog.ServerSpec, opts RemoteOptions) *Remote {
	opts.defaults()
	r := &Remote{
		spec:  spec,
		opts:  opts,
		log:   opts.Logger.With().Str("server", spec.Name).Logger(),
		base:  http.DefaultTransport.(*http.Transport).Clone(),
		where: safeURL(spec.URL),
	}
	r.init()
	return r
}

// safeURL drops the query and fragment, which may hold a key, so that the
// URL can appear in errors and logs.
func safeURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the remote"
	}
	u.RawQuery, u.Fragment, u.User = "", "", nil
	return u.String()
}

// Name is the server's key in the mcp config.
func (r *Remote) Name() string { return r.spec.Name }

// Spec returns the spec the remote was created from.
func (r *Remote) Spec() catalog.ServerSpec { return r.spec }

// Status returns the remote's current state. PID is always 0.
func (r *Remote) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.statusLocked(r.spec.Name, 0)
}

// Run connects to the remote and keeps a session to it until ctx is done,
// connecting again with backoff whenever the session is lost. It returns
// once the last session is closed.
func (r *Remote) Run(ctx context.Context) {
	defer func() {
		r.mu.Lock()
		r.cur = nil
		r.setStateLocked(StateStopped)
		r.mu.Unlock()
		r.markStarted(errors.New("stopped"))
		r.base.CloseIdleConnections()
	}()
	failures := 0
	for {
		begin := time.Now()
		sess, err := r.connect(ctx)
		if err == nil {
			r.markStarted(nil)
			err = r.hold(ctx, sess)
			if ctx.Err() != nil {
				return
			}
			r.log.Warn().Str("reason", err.Error()).Dur("uptime", time.Since(begin)).Msg("remote session lost; reconnecting")
			r.mu.Lock()
			r.lastExit = firstLine(err.Error())
			r.mu.Unlock()
		} else {
			if ctx.Err() != nil {
				return
			}
			r.log.Warn().Str("error", err.Error()).Msg("remote server failed to connect")
			r.markStarted(err)
		}
		if !r.lost(ctx, &r.opts.RestartPolicy, &failures, begin, err, func() { r.cur = nil }) {
			return
		}
	}
}

// remoteSession is one MCP session with the remote. It ends when the SDK
// connection fails (its standalone SSE stream could not be resumed, or a
// request met 404) or when a call finds it broken.
type remoteSession struct {
	cs  *mcp.ClientSession
	rt  *remoteTransport
	raw *remoteRaw // for raw requests, beside cs
	// stream relays what the remote sends on the SDK's streams (see
	// standaloneRelay).
	stream *standaloneRelay
	// ended is closed when the SDK connection is over; waitErr says why.
	ended   chan struct{}
	waitErr error
	// broken is closed by markBroken when we decide the session is dead
	// before the SDK does (a 404, an unreachable remote).
	once     sync.Once
	broken   chan struct{}
	breakErr error
}

// markBroken ends the session; the first reason wins.
func (s *remoteSession) markBroken(err error) {
	s.once.Do(func() {
		s.breakErr = err
		close(s.broken)
	})
}

// sessionGone is why a session ends when the remote answered status (404,
// or a 400 that says so) for it: it restarted, or expired the session.
func sessionGone(status int) error {
	return fmt.Errorf("the remote no longer knows the session (HTTP %d: restarted or expired)", status)
}

// connect opens a session and runs OnReady. Errors say what the remote
// answered, in words: an HTTP status, "unreachable", or a timeout.
func (r *Remote) connect(ctx context.Context) (*remoteSession, error) {
	sess := &remoteSession{broken: make(chan struct{})}
	sess.raw = &remoteRaw{url: r.spec.URL}
	if f := r.opts.Intercept; f != nil {
		sess.raw.intercept = func(n *jsonrpc.Request) bool { return f(r.spec.Name, n) }
	}
	if f := r.opts.ServeRequest; f != nil {
		sess.raw.serve = func(method string) RequestHandler { return f(r.spec.Name, method) }
	}
	sess.stream = newStandaloneRelay(sess.raw)
	sess.rt = &remoteTransport{base: r.base, headers: r.spec.Headers, offer: r.opts.OfferCapabilities, gone: func(status int) { sess.markBroken(sessionGone(status)) },
		stream: sess.stream.handle}
	client := &http.Client{Transport: sess.rt}
	sess.raw.client = client
	tr := &mcp.StreamableClientTransport{Endpoint: r.spec.URL, HTTPClient: client}
	cctx, cancel := context.WithTimeout(ctx, r.opts.ConnectTimeout)
	defer cancel()
	cs, err := r.opts.NewClient(r.spec.Name).Connect(cctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		sess.stream.close()
		if ctx.Err() == nil && cctx.Err() != nil {
			return nil, r.clean(fmt.Errorf("%s: no MCP handshake within %s", r.where, r.opts.ConnectTimeout))
		}
		return nil, r.clean(r.describe(sess.rt, fmt.Errorf("mcp handshake: %w", err)))
	}
	sess.cs = cs
	r.mu.Lock()
	r.initRaw = sess.rt.initializeResult()
	r.mu.Unlock()
	sess.raw.cs = cs
	sess.ended = make(chan struct{})
	go func() {
		sess.waitErr = cs.Wait()
		close(sess.ended)
	}()
	if r.opts.OnReady != nil {
		if err := r.opts.OnReady(cctx, r, cs, sess.raw.roundTrip); err != nil {
			cs.Close()
			sess.stream.close()
			return nil, r.clean(r.describe(sess.rt, err))
		}
	}
	r.mu.Lock()
	r.cur = sess
	r.lastErr = ""
	r.setStateLocked(StateReady)
	r.mu.Unlock()
	r.log.Info().Str("url", r.where).Msg("remote server ready")
	return sess, nil
}

// hold waits until sess ends or ctx is done, then closes it and says why it
// ended.
func (r *Remote) hold(ctx context.Context, sess *remoteSession) error {
	var err error
	select {
	case <-ctx.Done():
	case <-sess.broken:
		err = sess.breakErr
	case <-sess.ended:
		err = sess.waitErr
		if err == nil {
			err = errors.New("the remote closed the session")
		}
		err = r.describe(sess.rt, err)
	}
	r.mu.Lock()
	if r.cur == sess {
		r.cur = nil
		if ctx.Err() == nil {
			r.setStateLocked(StateRestarting)
		}
	}
	r.mu.Unlock()
	sess.cs.Close()
	<-sess.ended
	sess.stream.close()
	if err != nil {
		err = r.clean(err)
	}
	return err
}

// describe rewrites a failed exchange with the remote in terms of what the
// HTTP layer saw: a 401/403 is a header problem, a transport error means
// the remote is unreachable. Other errors are returned as they are.
func (r *Remote) describe(rt *remoteTransport, err error) error {
	status, rtErr := rt.last()
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return fmt.Errorf("%s answered %d %s: check the server's headers (credentials)", r.where, status, http.StatusText(status))
	case status != 0:
		return fmt.Errorf("%s answered %d %s: %w", r.where, status, http.StatusText(status), err)
	case rtErr != nil:
		return fmt.Errorf("%s unreachable: %w", r.where, rtErr)
	}
	return err
}

// clean redacts an error's message. The chain is dropped: these errors end
// in logs and in messages for agents, never in errors.Is checks.
func (r *Remote) clean(err error) error {
	return errors.New(r.opts.Redact(err.Error()))
}

// session returns the live session, waiting while the remote connects or
// reconnects; not, if non-nil, is a session known to be dead and is waited
// past. A failed remote fails at once.
func (r *Remote) session(ctx context.Context, not *remoteSession) (*remoteSession, error) {
	var sess *remoteSession
	err := r.await(ctx, func(st State) bool {
		if st == StateReady && r.cur != nil && r.cur != not {
			sess = r.cur
			return true
		}
		return false
	})
	return sess, err
}

// Do runs fn with a live session, waiting (within ctx) while the remote
// connects. An error the remote returned (a JSON-RPC error) is passed
// through as is. When the remote answers 404 for the session (it restarted
// or expired the session), Do waits for a new session and runs fn once
// more: a 404 means the request was not processed, so repeating it is safe.
// When the remote is unreachable, the call fails with an error saying so
// and the session is replaced with backoff.
func (r *Remote) Do(ctx context.Context, fn func(cs *mcp.ClientSession) error) error {
	return r.do(ctx, func(sess *remoteSession) error { return fn(sess.cs) })
}

// CallRaw sends one request with raw JSON params and returns the remote's
// raw result, with Do's waiting, retry and errors. The bytes pass through
// undecoded.
func (r *Remote) CallRaw(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	var res json.RawMessage
	err := r.do(ctx, func(sess *remoteSession) error {
		var err error
		res, err = sess.raw.roundTrip(ctx, method, params)
		return err
	})
	return res, err
}

// NotifyRaw sends a notification with raw JSON params in the remote's
// session, with Do's waiting and errors.
func (r *Remote) NotifyRaw(ctx context.Context, method string, params json.RawMessage) error {
	return r.do(ctx, func(sess *remoteSession) error {
		return sess.raw.send(ctx, &jsonrpc.Request{Method: method, Params: params})
	})
}

func (r *Remote) do(ctx context.Context, fn func(sess *remoteSession) error) error {
	sess, err := r.session(ctx, nil)
	if err != nil {
		return &CallError{Server: r.spec.Name, Err: err}
	}
	err = fn(sess)
	if err == nil {
		return nil
	}
	if status := sess.rt.sessionGone(); status != 0 || errors.Is(err, mcp.ErrSessionMissing) {
		if status == 0 {
			status = http.StatusNotFound
		}
		sess.markBroken(sessionGone(status))
		r.log.Info().Msg("remote session expired; re-initializing and retrying the call")
		next, err := r.session(ctx, sess)
		if err != nil {
			return &CallError{Server: r.spec.Name, Err: fmt.Errorf("session expired and no new session: %w", err)}
		}
		sess = next
		if err = fn(sess); err == nil {
			return nil
		}
	}
	rejected := errors.Is(err, &jsonrpc.Error{Code: codeRejected}) // *jsonrpc.Error matches by code
	var wire *jsonrpc.Error
	if ctx.Err() != nil || (!rejected && errors.As(err, &wire)) {
		return err
	}
	status, rtErr := sess.rt.last()
	switch {
	case rtErr != nil || status == http.StatusUnauthorized || status == http.StatusForbidden:
		// Unreachable, or the credentials stopped working: this session is
		// useless. Replace it (with backoff) and say why in words.
		failed := r.clean(r.describe(sess.rt, err))
		sess.markBroken(failed)
		return &CallError{Server: r.spec.Name, Err: failed}
	case rejected:
		// The remote refused this request with an HTTP error (a 5xx, a 429)
		// that leaves the session usable.
		return &CallError{Server: r.spec.Name, Err: r.clean(r.describe(sess.rt, err))}
	}
	// Neither an answer nor an HTTP failure: give the SDK a moment to report
	// a dead connection. A session still alive after that only failed this
	// call (the SDK refused a result, say) and is kept.
	select {
	case <-sess.ended:
	case <-time.After(time.Second):
		return &CallError{Server: r.spec.Name, Err: r.clean(err)}
	}
	failed := r.clean(r.describe(sess.rt, err))
	sess.markBroken(failed)
	return &CallError{Server: r.spec.Name, Err: failed}
}

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
	if req.Method == http.MethodPost && req.Header.Get("Mcp-Session-Id") == "" {
		if err := offerBody(req, t.offer); err != nil {
			return nil, err
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err == nil && req.Method == http.MethodPost && req.Header.Get("Mcp-Session-Id") == "" {
		// The initialize request: keep its answer, for what the SDK's
		// types leave out.
		c := &capture{ReadCloser: resp.Body}
		resp.Body = c
		t.mu.Lock()
		t.initBody = c
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
		t.err, t.status = nil, 0
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
