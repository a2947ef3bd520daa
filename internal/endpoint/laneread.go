package endpoint

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-gateway/mcp-gateway/internal/auth"
)

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
