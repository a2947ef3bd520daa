package endpoint

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Limits bound what one HTTP client can take of the gateway: memory for
// a request body, and a connection held by a client that sends slowly or not
// at all. The endpoint is on the network (behind the sandbox proxy) and most
// of these apply before the token is checked, so they matter even for
// clients that have no token. The zero value means the defaults.
type Limits struct {
	// MaxBodyBytes bounds one POST body; larger bodies are answered 413,
	// and at most 1 MiB more of them are read. Zero means
	// 4 MiB.
	MaxBodyBytes int64
	// ReadHeaderTimeout is how long a client has to send a request's
	// headers, counted from the first byte: a slow-loris client trickling
	// header bytes is cut off. Zero means 10 s.
	ReadHeaderTimeout time.Duration
	// BodyTimeout is how long a client has to send a POST body once its
	// headers are in; a client that stalls gets 408 and the connection is
	// closed. It does not bound responses: tool calls stream as long as
	// they take. Zero means 60 s.
	BodyTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request in
	// flight after this long. Zero means 2 minutes.
	IdleTimeout time.Duration
	// WriteTimeout is how long one write of a response may make no
	// progress (a client that stopped reading: a standalone GET stream
	// never read, an answer never fetched) before the connection is
	// closed, so that nothing waits on it holding what it would write.
	// It bounds a stall, not a response: a call streams as long as the
	// client reads. Zero means 30 s.
	WriteTimeout time.Duration
	// MaxBatch bounds the messages of one JSON-RPC batch, on the sessions
	// whose protocol has batches (2025-03-26 and older; later ones get
	// none). Zero means 64.
	MaxBatch int
	// MaxSessionRequests bounds the requests of one session in flight at
	// once (a batch counts each of its requests, and a call whose client
	// hung up counts until the SDK is done with it); beyond it a request
	// is refused (429). The SDK's bookkeeping of a session grows with the
	// most requests it ever had in flight and never shrinks, so this is
	// also what it keeps. Zero means 256.
	MaxSessionRequests int
	// MaxSubscriptions bounds the resource subscriptions one session
	// holds (from its subscribe to its unsubscribe); beyond it a
	// subscribe is refused (429). Zero means 256.
	MaxSubscriptions int
	// StreamKeepAlive is how often a standalone GET stream gets an SSE
	// comment line (getStreams), so that no client or proxy drops it as
	// idle. Zero means 25 s; negative sends none.
	StreamKeepAlive time.Duration
}

const (
	// The Go MCP SDK's own default: large tool arguments (files written
	// through the sandbox server) fit, a flood does not.
	defaultMaxBodyBytes      = 4 << 20
	defaultReadHeaderTimeout = 10 * time.Second
	defaultBodyTimeout       = 60 * time.Second
	// Longer than the 90 s idle timeout of Go's client pool
	// (http.DefaultTransport), so that side closes an idle connection first
	// and does not send a request on one the gateway is just closing.
	defaultIdleTimeout = 2 * time.Minute
	// A client reading at all drains a write in well under this.
	defaultWriteTimeout = 30 * time.Second
	// Batching clients (protocol 2025-03-26) batch a handful of messages.
	defaultMaxBatch = 64
	// Far more parallel calls than an agent makes on one session.
	defaultMaxSessionRequests = 256
	defaultMaxSubscriptions   = 256
	// Well inside the idle timeouts a stream meets: 60 s (nginx's
	// proxy_read_timeout, cloud load balancers), 100 s (Cloudflare), 300 s
	// (Node's HTTP client).
	defaultStreamKeepAlive = 25 * time.Second
	// maxHeaderBytes bounds a request's headers (431 beyond). MCP requests
	// carry a few short headers; net/http's default is 1 MiB.
	maxHeaderBytes = 64 << 10
	// maxDrainBytes is how much of a refused body is still read (and
	// dropped) so that the client, still writing it, gets to read the 413
	// instead of a reset connection. Beyond that the connection is closed.
	maxDrainBytes = 1 << 20
)

// DefaultLimits returns the limits a zero Limits stands for, for a command
// line that shows them as its flags' defaults.
func DefaultLimits() Limits { return Limits{}.withDefaults() }

// withDefaults returns l with every zero field set to its default.
func (l Limits) withDefaults() Limits {
	if l.MaxBodyBytes == 0 {
		l.MaxBodyBytes = defaultMaxBodyBytes
	}
	if l.ReadHeaderTimeout == 0 {
		l.ReadHeaderTimeout = defaultReadHeaderTimeout
	}
	if l.BodyTimeout == 0 {
		l.BodyTimeout = defaultBodyTimeout
	}
	if l.IdleTimeout == 0 {
		l.IdleTimeout = defaultIdleTimeout
	}
	if l.WriteTimeout == 0 {
		l.WriteTimeout = defaultWriteTimeout
	}
	if l.MaxBatch == 0 {
		l.MaxBatch = defaultMaxBatch
	}
	if l.StreamKeepAlive == 0 {
		l.StreamKeepAlive = defaultStreamKeepAlive
	}
	if l.MaxSessionRequests == 0 {
		l.MaxSessionRequests = defaultMaxSessionRequests
	}
	if l.MaxSubscriptions == 0 {
		l.MaxSubscriptions = defaultMaxSubscriptions
	}
	return l
}

// server returns the http.Server for h with the limits applied.
// http.Server.ReadTimeout stays zero: it would also cut off the background
// read that net/http keeps on a connection while a response streams, which
// cancels long tool calls. Bodies get their own deadline in bodyDeadline.
func (l Limits) server(h http.Handler) *http.Server {
	l = l.withDefaults()
	return &http.Server{
		Handler:           l.bodyDeadline(h),
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
}

// bodyDeadline gives a request with a body BodyTimeout to deliver it, and
// makes sure that a request refused before its body was read (401, 503,
// 413) cannot hold the connection: net/http would otherwise read the unread
// rest of a small body, with no deadline, before it sends the refusal and
// again before it reuses the connection. Until the body has been read to
// its end the response says "Connection: close"; after the handler, a body
// still unread gets a read deadline in the past, so that read fails at once
// and the connection closes.
func (l Limits) bodyDeadline(next http.Handler) http.Handler {
	l = l.withDefaults()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		sw := &stallWriter{ResponseWriter: w, rc: rc, timeout: l.WriteTimeout}
		defer sw.finish()
		if r.ContentLength == 0 { // no body (chunked is -1)
			next.ServeHTTP(sw, r)
			return
		}
		_ = rc.SetReadDeadline(time.Now().Add(l.BodyTimeout))
		w.Header().Set("Connection", "close")
		body := &deadlineBody{ReadCloser: r.Body, header: w.Header(), rc: rc}
		r.Body = body
		next.ServeHTTP(sw, r)
		if !body.eof {
			_ = rc.SetReadDeadline(time.Now())
		}
	})
}

// stallWriter gives every write of a response WriteTimeout to get through.
// A client that stops reading (a standalone GET stream never read, an
// answer never fetched) would otherwise block the writer for good, and
// with it whatever it holds (a session's outgoing messages wait for the
// stream's lock). A write past the deadline fails, net/http then cancels
// the request's context and closes the connection. Between writes there is
// no deadline: a response may stream as long as it likes.
type stallWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	wrote   bool // something may be buffered: finish flushes it
}

func (w *stallWriter) WriteHeader(code int) {
	w.wrote = true
	w.ResponseWriter.WriteHeader(code)
}

// Write may reach the connection (past net/http's buffer): under a
// deadline, which stays until the next flush clears it.
func (w *stallWriter) Write(p []byte) (int, error) {
	w.wrote = true
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	return w.ResponseWriter.Write(p)
}

// FlushError is what http.ResponseController.Flush calls (the SDK's SSE
// writes flush through it).
func (w *stallWriter) FlushError() error {
	w.wrote = true
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	err := w.rc.Flush()
	_ = w.rc.SetWriteDeadline(time.Time{})
	return err
}

func (w *stallWriter) Flush() { _ = w.FlushError() }

// finish flushes what the handler left buffered, under the deadline, so
// that net/http's own last write has little left to block on. A response
// not written at all (the lane may take the connection over) is left alone.
func (w *stallWriter) finish() {
	if w.wrote {
		_ = w.FlushError()
	}
}

func (w *stallWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// deadlineBody lifts bodyDeadline's deadline and "Connection: close" once
// the body has been read to its end. The deadline must go before a
// response streams: net/http then reads the connection in the background,
// and a read error there cancels the request's context, and the tool call.
type deadlineBody struct {
	io.ReadCloser
	header http.Header
	rc     *http.ResponseController
	eof    bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.eof {
		b.eof = true
		_ = b.rc.SetReadDeadline(time.Time{})
		b.header.Del("Connection")
	}
	return n, err
}

// errBodyTooLarge and errBodyTimeout are readBody's refusals.
var (
	errBodyTooLarge = errors.New("request body too large")
	errBodyTimeout  = errors.New("request body not received in time")
)

// readBody reads r's body whole, within l.MaxBodyBytes, and within
// l.BodyTimeout when the server was built by l.server. It stops at the
// limit: a body announced larger, or one that grows past it, is refused as
// soon as that is known (refuseBody answers it), not when its last byte
// comes or its time is up.
func (l Limits) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	l = l.withDefaults()
	if r.ContentLength > l.MaxBodyBytes {
		return nil, errBodyTooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, l.MaxBodyBytes))
	var mbe *http.MaxBytesError
	switch {
	case err == nil:
		return body, nil
	case errors.As(err, &mbe):
		return nil, errBodyTooLarge
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, errBodyTimeout
	default:
		return nil, fmt.Errorf("read request body: %w", err)
	}
}

// drainWait bounds how long the rest of a refused body is read before
// the 413: enough for a client still writing it to finish and then read the
// answer (instead of a reset connection, and with the connection kept),
// not a wait for a client that stalled.
const drainWait = time.Second

// refuseBody answers a body over the limit with 413: first it reads (and
// drops) at most maxDrainBytes more of it, for at most drainWait, so that
// a client still sending it reads the answer rather than a reset; a body
// not read to its end closes the connection after the answer.
func (l Limits) refuseBody(w http.ResponseWriter, r *http.Request) {
	l = l.withDefaults()
	if r.ContentLength < 0 || r.ContentLength <= l.MaxBodyBytes+maxDrainBytes {
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(min(drainWait, l.BodyTimeout)))
		_, _ = io.CopyN(io.Discard, r.Body, maxDrainBytes)
	}
	writeRPCError(w, http.StatusRequestEntityTooLarge, nil, jsonrpc.CodeInvalidRequest,
		fmt.Sprintf("request body exceeds %d bytes (--max-body-bytes)", l.MaxBodyBytes))
}
