package supervisor

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
)

// The SDK opens its standalone GET stream inside the handshake and waits
// for the stream's response headers before Connect returns. A buffering
// reverse proxy in front of a remote holds those headers until the first
// event, which may come never: the handshake then lasted until the proxy
// gave up (15 s behind one such proxy), on every reconnect. The stream is
// optional, so the handshake must not wait on it: the GET is answered at
// once with a stream whose bytes come when the remote's answer does.

// lateStream starts req (a GET for the standalone stream) through rt and
// returns at once a 200 event stream that reads from the remote's answer
// when it arrives. An answer that is no event stream (405: the remote
// offers none; a 4xx) leaves the stream open and silent until the client
// closes it, as the SDK would give up on the stream; a failed request
// ends it with the error, and the SDK reconnects as for a broken stream.
func lateStream(req *http.Request, rt func(*http.Request) (*http.Response, error)) *http.Response {
	b := &lateBody{ctx: req.Context(), ready: make(chan struct{}), closed: make(chan struct{})}
	go func() {
		resp, err := rt(req)
		if err == nil && (resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")) {
			resp.Body.Close()
			resp = nil
		}
		b.mu.Lock()
		b.body, b.err = nil, err
		if resp != nil {
			b.body = resp.Body
		}
		closed := b.isClosed
		b.mu.Unlock()
		close(b.ready)
		if closed && resp != nil {
			resp.Body.Close()
		}
	}()
	h := make(http.Header)
	h.Set("Content-Type", "text/event-stream")
	return &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: b, ContentLength: -1, Request: req,
	}
}

// lateBody is the body of lateStream's response.
type lateBody struct {
	ctx    context.Context
	ready  chan struct{} // closed once body or err is set
	closed chan struct{}

	mu       sync.Mutex
	body     io.ReadCloser // nil: the remote offers no stream
	err      error
	isClosed bool
	once     sync.Once
}

var errStreamClosed = errors.New("stream closed")

func (b *lateBody) Read(p []byte) (int, error) {
	select {
	case <-b.ready:
	case <-b.closed:
		return 0, errStreamClosed
	case <-b.ctx.Done():
		return 0, b.ctx.Err()
	}
	b.mu.Lock()
	body, err := b.body, b.err
	b.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if body == nil {
		select {
		case <-b.closed:
			return 0, errStreamClosed
		case <-b.ctx.Done():
			return 0, b.ctx.Err()
		}
	}
	return body.Read(p)
}

func (b *lateBody) Close() error {
	b.once.Do(func() {
		b.mu.Lock()
		b.isClosed = true
		body := b.body
		b.mu.Unlock()
		close(b.closed)
		if body != nil {
			body.Close()
		}
	})
	return nil
}
