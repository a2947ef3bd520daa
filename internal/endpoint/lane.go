package endpoint

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// The lane serves the tools/list and tools/call requests of a keep-alive
// connection without net/http. net/http costs a fast-path call
// about a third of the gateway's CPU: a full header parse into maps, a
// request context, a background reader started and stopped per request, the
// response machinery. Once net/http has answered a request through the fast
// path (fastpath.go), the connection is taken over (hijacked) and its next
// requests are read here: the head is parsed just enough to know it is a
// plain POST /mcp, the request runs through the same handler chain as
// before (token, readiness, body checks, session accounting, fast path),
// recorded, and written back in one write.
//
// The lane only serves what it understands completely. Anything else (any
// other method or path, a chunked body, Expect, Upgrade, a body over the
// limit, malformed headers, or a request the fast path declines, such as
// initialize or a call that needs an SSE stream) is handed back to net/http
// with the connection and the request's bytes, as if it had just been
// accepted, and net/http answers it as it always did.
//
// As with net/http, a client that goes away mid-call cancels the call: one
// reader per connection reads the next request while the current one runs,
// and a read error then ends the call's context.
type lane struct {
	handler http.Handler // the /mcp chain ending in the fast path alone
	token   string       // checked before a body is read, as net/http's chain does
	limits  Limits
	log     zerolog.Logger

	back    chan net.Conn // connections handed back, for laneListener
	stopped chan struct{} // closed by close

	closing atomic.Bool // set under mu, so that add sees it; read anywhere
	mu      sync.Mutex
	conns   map[*laneConn]struct{}
	wg      sync.WaitGroup

	// What happened, for tests: connections taken over, requests answered
	// here, connections handed back.
	adopted, served, handedBack atomic.Int64
}

func newLane(handler http.Handler, token string, limits Limits, log zerolog.Logger) *lane {
	return &lane{
		handler: handler,
		token:   token,
		limits:  limits.withDefaults(),
		log:     log,
		back:    make(chan net.Conn),
		stopped: make(chan struct{}),
		conns:   make(map[*laneConn]struct{}),
	}
}

// takeover passes requests to next, the server's whole handler; when next
// answered one with a complete fast-path response (offerResponse), the
// connection moves to the lane. It is the outermost handler, so that
// nothing after it (limits.go's body deadline) touches the connection.
func (l *lane) takeover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TransferEncoding) > 0 {
			// RFC 9112 6.1: after a request with both Transfer-Encoding
			// and Content-Length the server MUST close the connection: a
			// proxy that framed it by Content-Length would read the rest
			// as another request. net/http drops Content-Length before a
			// handler sees it (golang/go#80942), so every request with a
			// Transfer-Encoding is answered and its connection closed;
			// MCP clients send Content-Length. Nor is such a connection
			// given to the lane.
			next.ServeHTTP(&closeWriter{ResponseWriter: w}, r)
			return
		}
		if r.Method != http.MethodPost || r.ProtoMajor != 1 || r.ProtoMinor != 1 || r.Close {
			next.ServeHTTP(w, r)
			return
		}
		tw := &takeoverWriter{ResponseWriter: w}
		next.ServeHTTP(tw, r)
		if tw.response == nil {
			return
		}
		if !l.adopt(w, tw.response) {
			writeJSON(w, http.StatusOK, tw.response)
		}
	})
}

// adopt hijacks the connection of w, writes resp on it, and serves it from
// now on. It reports false, having done nothing, when the connection cannot
// be taken: the lane is closing, or net/http refuses the hijack.
func (l *lane) adopt(w http.ResponseWriter, resp []byte) bool {
	if w.Header().Get("Connection") != "" {
		return false // net/http means to close it (limits.go)
	}
	if l.closing.Load() {
		return false
	}
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	if pc, ok := c.(*prefixConn); ok {
		pc.headerBy = time.Time{} // net/http is done with it; the lane sets its own
	}
	h := w.Header().Clone()
	h.Set("Content-Type", "application/json")
	_ = c.SetReadDeadline(time.Now().Add(l.limits.IdleTimeout))
	lc := l.add(c, brw.Reader) // nil once closing: answer, then close
	if err := l.write(c, appendResponse(nil, http.StatusOK, h, resp, lc == nil)); err != nil || lc == nil {
		_ = c.Close()
		if lc != nil {
			lc.cancel()
			l.remove(lc)
		}
		return true
	}
	go lc.serve()
	return true
}

// add registers a connection, or returns nil once the lane is closing.
func (l *lane) add(c net.Conn, br *bufio.Reader) *laneConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing.Load() {
		return nil
	}
	// What net/http puts in a request's context and the handlers read.
	ctx := context.WithValue(context.Background(), http.LocalAddrContextKey, c.LocalAddr())
	ctx, cancel := context.WithCancel(ctx)
	lc := &laneConn{
		l: l, c: c, br: br, ctx: ctx, cancel: cancel,
		remote:     c.RemoteAddr().String(),
		items:      make(chan laneItem),
		verdict:    make(chan bool, 1),
		readerDone: make(chan struct{}),
		quit:       make(chan struct{}),
	}
	l.conns[lc] = struct{}{}
	l.wg.Add(1)
	l.adopted.Add(1)
	l.log.Debug().Str("remote", lc.remote).Msg("connection moved to the HTTP lane")
	return lc
}

func (l *lane) remove(lc *laneConn) {
	l.mu.Lock()
	delete(l.conns, lc)
	l.mu.Unlock()
	l.wg.Done()
}

// write writes an answer within the limits' WriteTimeout, as stallWriter
// does on net/http's connections: a client that stops reading does not
// keep the answer, or the connection, past it.
func (l *lane) write(c net.Conn, b []byte) error {
	_ = c.SetWriteDeadline(time.Now().Add(l.limits.WriteTimeout))
	_, err := c.Write(b)
	_ = c.SetWriteDeadline(time.Time{})
	return err
}

// close stops taking connections and ends the lane's: idle ones at once,
// busy ones when their request is answered, all of them by ctx's end.
func (l *lane) close(ctx context.Context) {
	l.mu.Lock()
	if l.closing.Load() {
		l.mu.Unlock()
		return
	}
	l.closing.Store(true)
	close(l.stopped)
	for lc := range l.conns {
		// Wakes the reader; a request in flight still gets its answer.
		_ = lc.c.SetReadDeadline(time.Now())
	}
	l.mu.Unlock()
	done := make(chan struct{})
	go func() {
		l.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		l.mu.Lock()
		for lc := range l.conns {
			lc.cancel()
			_ = lc.c.Close()
		}
		l.mu.Unlock()
		<-done
	}
}

// laneConn is one connection the lane serves. Its reader goroutine parses
// requests and hands them to serve; between requests the reader's blocked
// read is also what notices a client that goes away.
type laneConn struct {
	l      *lane
	c      net.Conn
	br     *bufio.Reader // the reader's until it is done
	ctx    context.Context
	cancel context.CancelFunc
	remote string

	items      chan laneItem // reader -> serve; closed when the reader ends
	verdict    chan bool     // serve -> reader, one per item: true = go on
	readerDone chan struct{}
	quit       chan struct{} // closed when serve returns
}

// laneItem is a request read off the connection: raw holds its bytes (for a
// hand-back); a request not for the lane has only raw.
type laneItem struct {
	raw  []byte
	req  *http.Request
	lane bool
	// refusal, when set, is the answer to a request that cannot be
	// served, written before the connection closes.
	refusal *laneRecorder
	// headerBy is the deadline of the head of a request handed back
	// before its head was read whole (see lane.handBack).
	headerBy time.Time
}

// serve answers the reader's requests in order until the connection ends
// or is handed back.
func (lc *laneConn) serve() {
	defer lc.l.remove(lc)
	defer close(lc.quit)
	go lc.read()
	var out []byte // the response being written, reused
	for it := range lc.items {
		if it.refusal != nil {
			_ = lc.l.write(lc.c, appendResponse(out[:0], it.refusal.status, it.refusal.header, it.refusal.body, true))
			break
		}
		if !it.lane {
			<-lc.readerDone
			lc.handBack(it.raw, it.headerBy)
			return
		}
		rec, ok := lc.run(it.req)
		if !ok { // the handler panicked: net/http aborts the connection
			break
		}
		if rec == nil { // declined: net/http's request after all
			lc.verdict <- false
			_ = lc.c.SetReadDeadline(time.Now()) // wake the reader
			<-lc.readerDone
			_ = lc.c.SetReadDeadline(time.Time{})
			lc.handBack(it.raw, time.Time{})
			return
		}
		lc.l.served.Add(1)
		_ = lc.c.SetReadDeadline(time.Now().Add(lc.l.limits.IdleTimeout))
		lc.verdict <- true
		closing := lc.l.closing.Load()
		out = appendResponse(out[:0], rec.status, rec.header, rec.body, closing)
		if err := lc.l.write(lc.c, out); err != nil || closing {
			break
		}
		if cap(out) > 64<<10 {
			out = nil // a large answer's buffer is not kept
		}
	}
	lc.end()
}

// run passes r through the lane's handler and returns what it wrote, or nil
// when it wrote nothing (the fast path declined); ok is false when the
// handler panicked.
func (lc *laneConn) run(r *http.Request) (rec *laneRecorder, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler {
				lc.l.log.Error().Str("panic", fmt.Sprint(p)).Str("stack", string(debug.Stack())).Msg("lane handler panicked")
			}
			rec, ok = nil, false
		}
	}()
	rec = &laneRecorder{header: make(http.Header, 2)}
	lc.l.handler.ServeHTTP(rec, r)
	if rec.status == 0 {
		return nil, true
	}
	return rec, true
}

// end closes the connection (and ends a call still running on it).
func (lc *laneConn) end() {
	lc.cancel()
	_ = lc.c.Close()
}
