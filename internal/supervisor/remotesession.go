package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

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
	// served is set once the session has answered a call: when it ends,
	// however soon, the remote was not failing to start.
	served atomic.Bool
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

// connect opens a session and runs OnReady, in the era the remote speaks:
// a remote that refuses the 2025 era is connected to again at once in the
// 2026 era, which later connections keep (see era.go). Errors say what the
// remote answered, in words: an HTTP status, "unreachable", or a timeout.
func (r *Remote) connect(ctx context.Context) (*remoteSession, error) {
	version := r.era.get()
	sess, err := r.connectAs(ctx, version)
	if err != nil && version < Protocol2026 && errors.Is(err, errLegacyRefused) {
		r.log.Info().Msg("remote refused the 2025-11-25 initialize for 2026-07-28; connecting again in the 2026 era")
		r.era.set(Protocol2026)
		return r.connectAs(ctx, Protocol2026)
	}
	return sess, err
}

// connectAs is connect with the version the handshake opens with.
func (r *Remote) connectAs(ctx context.Context, version string) (*remoteSession, error) {
	sess := &remoteSession{broken: make(chan struct{})}
	sess.raw = &remoteRaw{url: r.spec.URL, meta: &requestMeta{}}
	if f := r.opts.Intercept; f != nil {
		sess.raw.intercept = func(n *jsonrpc.Request) bool { return f(r.spec.Name, n) }
	}
	if f := r.opts.ServeRequest; f != nil {
		sess.raw.serve = func(method string) RequestHandler { return f(r.spec.Name, method) }
	}
	sess.stream = newStandaloneRelay(sess.raw)
	sess.rt = &remoteTransport{base: r.base, headers: r.spec.Headers, offer: r.opts.OfferCapabilities, gone: func(status int) { sess.markBroken(sessionGone(status)) },
		stream: sess.stream.handle, meta: sess.raw.meta}
	client := &http.Client{Transport: sess.rt}
	sess.raw.client = client
	tr := &mcp.StreamableClientTransport{Endpoint: r.spec.URL, HTTPClient: client}
	cctx, cancel := context.WithTimeout(ctx, r.opts.ConnectTimeout)
	defer cancel()
	cs, err := r.opts.NewClient(r.spec.Name).Connect(cctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		sess.stream.close()
		if refusesLegacy(err) && version < Protocol2026 {
			return nil, fmt.Errorf("%w: %w", errLegacyRefused, err)
		}
		if ctx.Err() == nil && cctx.Err() != nil {
			return nil, r.clean(fmt.Errorf("%s: no MCP handshake within %s", r.where, r.opts.ConnectTimeout))
		}
		return nil, r.clean(r.describe(sess.rt, fmt.Errorf("mcp handshake: %w", err)))
	}
	sess.cs = cs
	initRaw := sess.rt.initializeResult()
	if is2026(cs) {
		sess.raw.era2026 = true
		initRaw = discoveredRaw(cs)
	} else {
		r.era.set(ProtocolVersion) // a 2025 remote (the SDK fell back): so shall later connections be
	}
	r.mu.Lock()
	r.initRaw = initRaw
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
	r.failing = ""
	r.setStateLocked(StateReady)
	r.mu.Unlock()
	r.log.Info().Str("url", r.where).Str("protocol", cs.InitializeResult().ProtocolVersion).Msg("remote server ready")
	return sess, nil
}

// hold waits until sess ends or ctx is done, then closes it and says why it
// ended.
func (r *Remote) hold(ctx context.Context, sess *remoteSession) error {
	var err error
	var tick <-chan time.Time
	if r.opts.ProbeInterval > 0 {
		t := time.NewTicker(r.opts.ProbeInterval)
		defer t.Stop()
		tick = t.C
	}
	probing := make(chan struct{}, 1) // one probe at a time
	defer func() { probing <- struct{}{} }()
	for over := false; !over; {
		select {
		case <-tick:
			select {
			case probing <- struct{}{}:
				go func() {
					r.probe(ctx, sess)
					<-probing
				}()
			default: // the last probe still waits for its answer
			}
		case <-ctx.Done():
			over = true
		case <-sess.broken:
			err, over = sess.breakErr, true
		case <-sess.ended:
			err = sess.waitErr
			if err == nil {
				err = errors.New("the remote closed the session")
			}
			err, over = r.describe(sess.rt, err), true
		}
	}
	if err != nil {
		err = r.clean(err)
	}
	r.mu.Lock()
	if r.cur == sess {
		r.cur = nil
		if ctx.Err() == nil {
			// Why, in the same step: a status that says restarting says
			// why (Run records the rest once the session is closed).
			if err != nil {
				r.lastErr = firstLine(err.Error())
			}
			r.setStateLocked(StateRestarting)
		}
	}
	r.mu.Unlock()
	sess.cs.Close()
	<-sess.ended
	sess.stream.close()
	return err
}

// probe pings sess, so that a remote that stopped answering is seen while
// no calls come: an unreachable remote ends the session (as a call that
// finds it so does), an HTTP error or no answer within the probe's time
// leaves the remote degraded until a call or probe succeeds.
func (r *Remote) probe(ctx context.Context, sess *remoteSession) {
	wait := min(r.opts.ProbeInterval, 10*time.Second)
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var err error
	if sess.raw.era2026 {
		// The 2026 era has no ping (a 404 with -32601): ask what
		// every 2026 server answers.
		_, err = sess.raw.roundTrip(pctx, "server/discover", json.RawMessage(`{}`))
	} else {
		err = sess.cs.Ping(pctx, nil)
	}
	if ctx.Err() != nil {
		return
	}
	var wire *jsonrpc.Error
	switch {
	case err == nil:
	case errors.As(err, &wire) && wire.Code != codeRejected:
		err = nil // an answer, if not the one hoped for
	case pctx.Err() != nil:
		err = fmt.Errorf("%s: no answer to a ping within %s", r.where, wait)
	default:
		status, rtErr := sess.rt.last()
		err = r.clean(r.describe(sess.rt, err))
		if rtErr != nil || status == http.StatusUnauthorized || status == http.StatusForbidden {
			sess.markBroken(err)
		}
	}
	r.noteOutcome(sess, err)
}

// noteOutcome records how the latest call or probe of sess went: err nil
// for an answer, else the transport-level failure.
func (r *Remote) noteOutcome(sess *remoteSession, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur != sess {
		return
	}
	if err == nil {
		r.failing = ""
	} else {
		r.failing = firstLine(err.Error())
	}
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
		if sess.raw.era2026 {
			r, ok, err := subscribe2026(ctx, sess.cs, method, params)
			if ok {
				res = r
				return err
			}
		}
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
		sess.served.Store(true)
		r.noteOutcome(sess, nil)
		return nil
	}
	if status := sess.rt.sessionGone(); status != 0 || errors.Is(err, mcp.ErrSessionMissing) {
		if status == 0 {
			status = http.StatusNotFound
		}
		sess.markBroken(sessionGone(status))
		r.log.Info().Ctx(ctx).Int("status", status).Msg("remote session expired; re-initializing and retrying the call")
		telemetry.SessionExpired(ctx, status)
		next, err := r.session(ctx, sess)
		if err != nil {
			return &CallError{Server: r.spec.Name, Err: fmt.Errorf("session expired and no new session: %w", err)}
		}
		sess = next
		telemetry.Retry(ctx, 2, "session_expired")
		if err = fn(sess); err == nil {
			sess.served.Store(true)
			r.noteOutcome(sess, nil)
			return nil
		}
	}
	rejected := errors.Is(err, &jsonrpc.Error{Code: codeRejected}) // *jsonrpc.Error matches by code
	var wire *jsonrpc.Error
	if !rejected && errors.As(err, &wire) {
		sess.served.Store(true) // an answer, if not the one hoped for
		r.noteOutcome(sess, nil)
		return err
	}
	if ctx.Err() != nil {
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
		failed := r.clean(r.describe(sess.rt, err))
		r.noteOutcome(sess, failed)
		return &CallError{Server: r.spec.Name, Err: failed}
	}
	// Neither an answer nor an HTTP failure: give the SDK a moment to report
	// a dead connection. A session still alive after that only failed this
	// call (the SDK refused a result, say) and is kept.
	select {
	case <-sess.ended:
	case <-time.After(time.Second):
		if status != 0 { // an HTTP error, not a result the SDK refused
			r.noteOutcome(sess, r.clean(r.describe(sess.rt, err)))
		}
		return &CallError{Server: r.spec.Name, Err: r.clean(err)}
	}
	failed := r.clean(r.describe(sess.rt, err))
	sess.markBroken(failed)
	return &CallError{Server: r.spec.Name, Err: failed}
}
