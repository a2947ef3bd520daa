package endpoint

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
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
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 0 { // no body (chunked is -1)
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(l.BodyTimeout))
		w.Header().Set("Connection", "close")
		body := &deadlineBody{ReadCloser: r.Body, header: w.Header(), rc: rc}
		r.Body = body
		next.ServeHTTP(w, r)
		if !body.eof {
			_ = rc.SetReadDeadline(time.Now())
		}
	})
}

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
// l.BodyTimeout when the server was built by l.server. Of a body over the
// limit at most maxDrainBytes more are read, and dropped; a body announced
// larger than that is refused before a byte of it is read.
func (l Limits) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	l = l.withDefaults()
	if r.ContentLength > l.MaxBodyBytes {
		if r.ContentLength <= l.MaxBodyBytes+maxDrainBytes {
			_, _ = io.CopyN(io.Discard, r.Body, r.ContentLength)
		}
		return nil, errBodyTooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, l.MaxBodyBytes))
	var mbe *http.MaxBytesError
	switch {
	case err == nil:
		return body, nil
	case errors.As(err, &mbe):
		_, _ = io.CopyN(io.Discard, r.Body, maxDrainBytes)
		return nil, errBodyTooLarge
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, errBodyTimeout
	default:
		return nil, fmt.Errorf("read request body: %w", err)
	}
}
