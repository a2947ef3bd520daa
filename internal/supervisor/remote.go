package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
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
	// ProbeInterval is how often a live session is pinged, so that /health
	// sees a remote that stopped answering while no calls came. Zero means
	// DefaultProbeInterval; negative turns the probe off.
	ProbeInterval time.Duration
	// RestartPolicy: backoff between reconnections and when a remote is
	// failed, as for a stdio server.
	RestartPolicy
	// RetryFailed is how often a call may have a failed remote tried at
	// once (it then waits for that try) rather than fail: a reconnection
	// is one HTTP request, and a remote that was failing (404s, 5xx on
	// initialize) is then back for the first call that finds it healthy,
	// not at the slow retry up to MaxBackoff later. Zero means 1 s.
	RetryFailed time.Duration
}

func (o *RemoteOptions) defaults() {
	clientDefaults(&o.ConnectTimeout, &o.NewClient, &o.Redact)
	if o.ProbeInterval == 0 {
		o.ProbeInterval = DefaultProbeInterval
	}
	o.RestartPolicy.defaults()
	if o.RetryFailed <= 0 {
		o.RetryFailed = time.Second
	}
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

	lifecycle // mu guards cur, initRaw and failing too
	cur       *remoteSession
	initRaw   json.RawMessage
	// failing is why the latest call or probe of cur failed, "" after a
	// success: Status reports the remote degraded while it is set.
	failing string
	era     eraMemo // the protocol version a connection opens with
}

// DefaultProbeInterval is RemoteOptions.ProbeInterval's default: well
// inside the time an operator looks at /health after a remote breaks.
const DefaultProbeInterval = 30 * time.Second

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
	r.era.pin(spec.Protocol)
	r.init()
	r.retryFailed = opts.RetryFailed
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
	st := r.statusLocked(r.spec.Name, 0)
	if st.State == StateReady && r.failing != "" {
		st.State, st.LastError = StateDegraded, r.failing
	}
	return st
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
			r.log.Warn().Str("reason", err.Error()).Int64("uptime_ms", time.Since(begin).Round(time.Millisecond).Milliseconds()).Msg("remote session lost; reconnecting")
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
		served := sess != nil && sess.served.Load()
		if !r.lost(ctx, &r.opts.RestartPolicy, &failures, begin, served, err, func() { r.cur = nil }) {
			return
		}
	}
}
