package endpoint

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/auth"
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

// handBack gives c to net/http, which reads prefix first. headerBy, when
// set, is the deadline the lane started for the head of the request being
// handed back: net/http keeps it rather than start its own afresh, so a
// request's head gets --read-header-timeout from its first byte whichever
// reader saw that byte.
func (l *lane) handBack(c net.Conn, prefix []byte, headerBy time.Time) {
	if pc, ok := c.(*prefixConn); ok { // never wrap twice
		prefix = append(prefix, pc.pending...)
		c = pc.Conn
	}
	l.handedBack.Add(1)
	select {
	case l.back <- &prefixConn{Conn: c, pending: prefix, headerBy: headerBy}:
	case <-l.stopped:
		_ = c.Close()
	}
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

// listener returns ln with the handed-back connections among its accepted
// ones: net/http serves them from their first unanswered request on.
func (l *lane) listener(ln net.Listener) net.Listener {
	ll := &laneListener{Listener: ln, back: l.back, accepted: make(chan accepted), done: make(chan struct{})}
	go ll.pump()
	return ll
}

type laneListener struct {
	net.Listener
	back      <-chan net.Conn
	accepted  chan accepted
	done      chan struct{}
	closeOnce sync.Once
}

type accepted struct {
	c   net.Conn
	err error
}

// pump moves the real listener's connections to Accept, so that Accept can
// also wait for handed-back ones.
func (ll *laneListener) pump() {
	for {
		c, err := ll.Listener.Accept()
		select {
		case ll.accepted <- accepted{c, err}:
		case <-ll.done:
			if c != nil {
				_ = c.Close()
			}
			return
		}
		if errors.Is(err, net.ErrClosed) {
			return
		}
	}
}

func (ll *laneListener) Accept() (net.Conn, error) {
	select {
	case c := <-ll.back:
		return c, nil
	case a := <-ll.accepted:
		return a.c, a.err
	case <-ll.done:
		return nil, net.ErrClosed
	}
}

func (ll *laneListener) Close() error {
	ll.closeOnce.Do(func() { close(ll.done) })
	return ll.Listener.Close()
}

// prefixConn is a connection whose first bytes were read already: Read
// returns pending first.
type prefixConn struct {
	net.Conn
	pending []byte
	// headerBy, when set, caps the read deadlines net/http sets until it
	// has read the head of the first request (its first clearing of the
	// deadline, net/http's sign that a head is in: see conn.readRequest).
	headerBy time.Time
}

func (c *prefixConn) SetReadDeadline(t time.Time) error {
	if !c.headerBy.IsZero() {
		if t.IsZero() {
			c.headerBy = time.Time{}
		} else if t.After(c.headerBy) {
			t = c.headerBy
		}
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// CloseWrite keeps net/http's graceful close of a TCP connection.
func (c *prefixConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
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

// handBack returns the connection to net/http; the reader has ended, so
// what it buffered is the connection's to read next.
func (lc *laneConn) handBack(raw []byte, headerBy time.Time) {
	if n := lc.br.Buffered(); n > 0 {
		b, _ := lc.br.Peek(n)
		raw = append(raw, b...)
	}
	lc.cancel()
	lc.l.log.Debug().Str("remote", lc.remote).Msg("connection handed back to net/http")
	lc.l.handBack(lc.c, raw, headerBy)
}

// end closes the connection (and ends a call still running on it).
func (lc *laneConn) end() {
	lc.cancel()
	_ = lc.c.Close()
}

// read is the reader goroutine. It never closes the connection: serve may
// still be writing an answer, and closes it when items ends.
func (lc *laneConn) read() {
	defer close(lc.readerDone)
	defer close(lc.items)
	for {
		it, err := lc.next()
		if err != nil {
			return // EOF, idle timeout, the lane closing, or a bad body
		}
		select {
		case lc.items <- it:
		case <-lc.quit:
			return
		}
		if !it.lane {
			return
		}
		// Wait for the next request, or the client's leaving, while
		// serve answers this one: a read error before the verdict is a
		// client gone mid-call, and ends the call (except when the lane
		// closing woke the read: a call then still gets its answer).
		_, err = lc.br.Peek(1)
		if err != nil {
			select {
			case <-lc.verdict:
				return
			default:
			}
			if !(isTimeout(err) && lc.l.closing.Load()) {
				lc.cancel()
			}
		}
		select {
		case goOn := <-lc.verdict:
			if !goOn || err != nil {
				return
			}
		case <-lc.quit:
			return
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// next reads one request. A request the lane does not serve comes back with
// lane false and the bytes read of it; the rest of it is still unread.
func (lc *laneConn) next() (laneItem, error) {
	if _, err := lc.br.Peek(1); err != nil {
		return laneItem{}, err
	}
	l := lc.l
	if l.closing.Load() {
		return laneItem{}, net.ErrClosed
	}
	headerBy := time.Now().Add(l.limits.ReadHeaderTimeout)
	_ = lc.c.SetReadDeadline(headerBy)
	raw := make([]byte, 0, 512)
	// notOurs hands the request, as read so far, to net/http, with the
	// head's deadline.
	notOurs := func() (laneItem, error) { return laneItem{raw: raw, headerBy: headerBy}, lc.clearDeadline() }
	line, err := lc.line(&raw)
	if err != nil {
		return lc.cut(raw, err, headerBy)
	}
	if string(line) != "POST /mcp HTTP/1.1" {
		return notOurs()
	}
	h := make(http.Header, 12)
	length, hosts := -1, 0
	for {
		line, err := lc.line(&raw)
		if err != nil {
			return lc.cut(raw, err, headerBy)
		}
		if line == nil { // too long: net/http says 431
			return notOurs()
		}
		if len(line) == 0 {
			break
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok || !validHeaderName(k) {
			return notOurs()
		}
		v = bytes.Trim(v, " \t")
		if !validHeaderValue(v) {
			return notOurs()
		}
		key := textproto.CanonicalMIMEHeaderKey(string(k))
		val := string(v)
		switch key {
		case "Content-Length": // digits only, as net/http reads it
			n, err := strconv.ParseUint(val, 10, 63)
			if length >= 0 || err != nil || n > uint64(l.limits.MaxBodyBytes) {
				return notOurs()
			}
			length = int(n)
		case "Host":
			if hosts++; !plainHost(v) {
				return notOurs()
			}
		case "Connection":
			if !asciiEqualFold(val, "keep-alive") {
				return notOurs()
			}
		case "Transfer-Encoding", "Expect", "Upgrade", "Te", "Trailer":
			return notOurs()
		}
		h[key] = append(h[key], val)
	}
	// A request without the token is refused before its body is read,
	// and its connection closed: net/http's answer (auth.Bearer).
	if length < 0 || hosts != 1 || !auth.Matches(h.Get("Authorization"), l.token) {
		return notOurs()
	}
	host := h.Get("Host")
	delete(h, "Host") // as net/http: r.Host has it
	// The body grows as it arrives, like rpcGuard's read of it: a client
	// cannot make the gateway hold what it only announced.
	_ = lc.c.SetReadDeadline(time.Now().Add(l.limits.BodyTimeout))
	headLen := len(raw)
	buf := bytes.NewBuffer(raw)
	buf.Grow(min(length, 64<<10))
	n, err := io.CopyN(buf, lc.br, int64(length))
	raw = buf.Bytes()
	if err != nil {
		if isTimeout(err) { // rpcGuard's 408 (protocol.go), then close
			rec := &laneRecorder{header: make(http.Header, 2)}
			writeRPCError(rec, http.StatusRequestTimeout, nil, jsonrpc.CodeInvalidRequest,
				fmt.Sprintf("request body not received within %s (--body-timeout)", l.limits.BodyTimeout))
			return laneItem{refusal: rec}, nil
		}
		return lc.cut(raw[:headLen+int(n)], err, time.Time{})
	}
	if err := lc.clearDeadline(); err != nil {
		return laneItem{}, err
	}
	body := raw[headLen:]
	r := &http.Request{
		Method:        http.MethodPost,
		URL:           &url.URL{Path: "/mcp"},
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          readCloser{bytes.NewReader(body)},
		ContentLength: int64(length),
		Host:          host,
		RemoteAddr:    lc.remote,
		RequestURI:    "/mcp",
	}
	if length == 0 {
		r.Body = http.NoBody
	}
	return laneItem{raw: raw, req: r.WithContext(lc.ctx), lane: true}, nil
}

// cut ends a request the client stopped sending: past a deadline the
// connection closes (as net/http closes it on its own timeouts); at EOF, or
// another error, net/http gets what came, and answers it as it would have.
func (lc *laneConn) cut(raw []byte, err error, headerBy time.Time) (laneItem, error) {
	if isTimeout(err) || len(raw) == 0 {
		return laneItem{}, err
	}
	return laneItem{raw: raw, headerBy: headerBy}, lc.clearDeadline()
}

func (lc *laneConn) clearDeadline() error { return lc.c.SetReadDeadline(time.Time{}) }

// line reads one line of the head, without its line ending, and appends it
// to raw as read. A head longer than net/http takes gives a nil line.
func (lc *laneConn) line(raw *[]byte) ([]byte, error) {
	start := len(*raw)
	for {
		chunk, err := lc.br.ReadSlice('\n')
		*raw = append(*raw, chunk...)
		if len(*raw) > maxHeaderBytes {
			return nil, nil
		}
		switch {
		case err == nil:
			line := (*raw)[start : len(*raw)-1]
			return bytes.TrimSuffix(line, []byte("\r")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}

// validHeaderName reports whether k is an RFC 9110 token; a header line
// that starts with white space (obsolete folding) fails here too.
func validHeaderName(k []byte) bool {
	if len(k) == 0 {
		return false
	}
	for _, c := range k {
		if c >= 0x7f || c <= ' ' || bytes.IndexByte([]byte(`"(),/:;<=>?@[\]{}`), c) >= 0 {
			return false
		}
	}
	return true
}

// validHeaderValue reports whether v has no control bytes (a tab aside),
// which net/http refuses.
func validHeaderValue(v []byte) bool {
	for _, c := range v {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// plainHost reports whether a Host value is made of the bytes of a host
// name, an IP address and a port only; net/http judges anything else.
func plainHost(v []byte) bool {
	for _, c := range v {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '-', c == ':', c == '[', c == ']', c == '_':
		default:
			return false
		}
	}
	return len(v) > 0
}

func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// laneRecorder is the ResponseWriter of a lane request: the handler chain
// never streams here (the SDK is not part of it), so the response is
// recorded and written in one piece.
type laneRecorder struct {
	header http.Header
	status int
	body   []byte
}

func (r *laneRecorder) Header() http.Header { return r.header }

func (r *laneRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *laneRecorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	r.body = append(r.body, p...)
	return len(p), nil
}

// complete takes a whole fast-path response (offerResponse), which its
// writer no longer touches: kept, not copied.
func (r *laneRecorder) complete(body []byte) {
	r.header["Content-Type"] = jsonContentType
	r.WriteHeader(http.StatusOK)
	if len(r.body) == 0 {
		r.body = body
	} else {
		r.body = append(r.body, body...)
	}
}

// closeWriter makes the response the connection's last: it says
// "Connection: close" whenever the header may go out (limits.go's
// bodyDeadline takes its own "close" back once a body has been read).
type closeWriter struct{ http.ResponseWriter }

func (w *closeWriter) WriteHeader(code int) {
	w.Header().Set("Connection", "close")
	w.ResponseWriter.WriteHeader(code)
}

func (w *closeWriter) Write(p []byte) (int, error) {
	w.Header().Set("Connection", "close")
	return w.ResponseWriter.Write(p)
}

func (w *closeWriter) FlushError() error {
	w.Header().Set("Connection", "close")
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *closeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// jsonContentType is shared by the recorded responses; nothing changes it.
var jsonContentType = []string{"application/json"}

// takeoverWriter is the ResponseWriter of a net/http request that the lane
// may take over: a complete fast-path response is kept for adopt instead of
// being written.
type takeoverWriter struct {
	http.ResponseWriter
	response []byte
}

func (w *takeoverWriter) complete(body []byte) { w.response = body }

func (w *takeoverWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// completer is a ResponseWriter that takes a whole JSON response at once.
type completer interface{ complete(body []byte) }

// offerResponse gives a complete JSON response (status 200) to the lane's
// writer under w, if there is one, and reports whether it took it.
func offerResponse(w http.ResponseWriter, body []byte) bool {
	for {
		if c, ok := w.(completer); ok {
			c.complete(body)
			return true
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return false
		}
		w = u.Unwrap()
	}
}

// writeJSON writes a JSON body with its length.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// appendResponse appends an HTTP/1.1 response with a Content-Length, and
// "Connection: close" when it is the connection's last. Header values come
// from the gateway's own handlers; one with a line break would be dropped
// rather than split the response.
func appendResponse(b []byte, status int, h http.Header, body []byte, last bool) []byte {
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(status)...)
	b = append(b, "\r\n"...)
	for k, vs := range h {
		if k == "Content-Length" || k == "Date" || k == "Connection" || k == "Transfer-Encoding" {
			continue
		}
		for _, v := range vs {
			if bytes.ContainsAny([]byte(v), "\r\n") {
				continue
			}
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	b = append(b, "Content-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	if last {
		b = append(b, "\r\nConnection: close"...)
	}
	b = append(b, "\r\nDate: "...)
	b = time.Now().UTC().AppendFormat(b, http.TimeFormat)
	b = append(b, "\r\n\r\n"...)
	return append(b, body...)
}
