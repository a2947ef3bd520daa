package endpoint

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// getStreams serves each session's standalone GET stream (where the
// server's messages that belong to no request go) in two ways the SDK does
// not:
//
//   - An idle stream gets an SSE comment line every interval. Clients and
//     proxies drop a response that sends nothing for a while (Node's HTTP
//     client, the TypeScript SDK's, after exactly 300 s; proxies after 60
//     or 100 s), and a comment is ignored by every SSE reader. A write to a
//     client that is gone also fails within --write-timeout, which ends the
//     stream instead of holding it for a client that will never read it.
//   - A new GET of a session replaces the stream it already has. The SDK
//     answers it 409 while the old one is open, but a client opens a new one
//     only when it thinks the old is gone: after its own idle timeout, or a
//     network change that the gateway has not noticed yet. The old request
//     is ended (its response finishes) and the new one takes its place.
//
// Safe for concurrent use.
type getStreams struct {
	interval time.Duration // <= 0: no keep-alive

	mu   sync.Mutex
	byID map[string]*getStream
}

// getStream is one GET being served.
type getStream struct {
	cancel context.CancelFunc // ends its request's context: the SDK lets go
	done   chan struct{}      // closed once its handler returned
}

func newGetStreams(interval time.Duration) *getStreams {
	return &getStreams{interval: interval, byID: make(map[string]*getStream)}
}

// take makes the GET r of session id the session's stream: it ends the one
// before, waits until the SDK has let go of it (bounded by --write-timeout
// when the old client stopped reading), and returns w and r to serve, and
// end, which the caller defers.
func (g *getStreams) take(id string, w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request, func()) {
	ctx, cancel := context.WithCancel(r.Context())
	mine := &getStream{cancel: cancel, done: make(chan struct{})}
	g.mu.Lock()
	old := g.byID[id]
	g.byID[id] = mine
	g.mu.Unlock()
	if old != nil {
		old.cancel()
		select {
		case <-old.done:
		case <-ctx.Done(): // this one was replaced or its client left meanwhile
		}
	}
	kw := &keepAliveWriter{ResponseWriter: w}
	stop := kw.keepAlive(g.interval)
	return kw, r.WithContext(ctx), func() {
		stop()
		cancel()
		g.mu.Lock()
		if g.byID[id] == mine {
			delete(g.byID, id)
		}
		g.mu.Unlock()
		close(mine.done)
	}
}

// keepAliveComment is the SSE comment an idle stream gets.
const keepAliveComment = ": keep-alive\n\n"

// keepAliveWriter is a GET stream's writer, shared by the SDK's event
// writes and the keep-alive comments: each write and flush holds mu, so a
// comment never lands inside an event (the SDK writes each event whole).
type keepAliveWriter struct {
	http.ResponseWriter

	mu      sync.Mutex
	started bool // answered 200: the SSE stream is open
	refused bool // answered otherwise: nothing more to write
	failed  bool // a write failed: the client is gone
}

func (w *keepAliveWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if code == http.StatusOK {
		w.started = true
	} else if !w.started {
		w.refused = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *keepAliveWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.refused {
		w.started = true
	}
	return w.ResponseWriter.Write(p)
}

// FlushError is what http.ResponseController.Flush calls (the SDK flushes
// each event through it); under mu, as the writes.
func (w *keepAliveWriter) FlushError() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *keepAliveWriter) Flush() { _ = w.FlushError() }

func (w *keepAliveWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// keepAlive writes a comment every interval once the stream is open, until
// the function it returns is called; that waits for the last write, so
// nothing is written after the handler returns.
func (w *keepAliveWriter) keepAlive(interval time.Duration) (stop func()) {
	if interval <= 0 {
		return func() {}
	}
	quit, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				w.comment()
			}
		}
	}()
	return func() {
		close(quit)
		<-exited
	}
}

// comment writes one keep-alive comment and flushes it, if the stream is
// open and the client still there.
func (w *keepAliveWriter) comment() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.started || w.refused || w.failed {
		return
	}
	_, err := io.WriteString(w.ResponseWriter, keepAliveComment)
	if err == nil {
		err = http.NewResponseController(w.ResponseWriter).Flush()
	}
	w.failed = err != nil
}
