package supervisor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxMessageBytes bounds one message from a server. The SDK's own
// CommandTransport caps frames at 16 MiB and then kills the session; we pass
// larger results and, beyond this bound, fail only the call the message
// answered.
const DefaultMaxMessageBytes = 64 << 20

// lineTransport speaks line-delimited JSON-RPC with a child process over its
// stdin and stdout. Unlike mcp.CommandTransport it survives what real servers
// do: a banner or a stray print on stdout is logged as noise and skipped
// instead of ending the session, and an oversized response fails its own call
// rather than the connection. It does not own the process; the supervisor
// does.
type lineTransport struct {
	r        io.ReadCloser
	w        io.WriteCloser
	maxBytes int
	// noise receives every stdout line that is not a JSON-RPC message.
	noise func(line []byte)
	// intercept, if set, sees every notification before the SDK does, on
	// the reader goroutine; returning true consumes it.
	intercept func(*jsonrpc.Request) bool
	// serve, if set, answers requests from the server past the SDK (see
	// Options.ServeRequest).
	serve func(method string) RequestHandler
	// offer are capabilities added to the initialize request (see
	// Options.OfferCapabilities).
	offer map[string]json.RawMessage
	// conn is the connection Connect made, for raw calls.
	conn *lineConn
}

func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	max := t.maxBytes
	if max <= 0 {
		max = DefaultMaxMessageBytes
	}
	t.conn = &lineConn{
		br:        bufio.NewReaderSize(t.r, 64<<10),
		r:         t.r,
		w:         t.w,
		max:       max,
		noise:     t.noise,
		intercept: t.intercept,
		offer:     t.offer,
		raw:       newRawCalls(),
	}
	t.conn.served = newServed(t.serve, t.conn.Write)
	return t.conn, nil
}

type lineConn struct {
	br        *bufio.Reader
	r         io.Closer
	max       int
	noise     func([]byte)
	intercept func(*jsonrpc.Request) bool
	raw       *rawCalls
	served    *served
	offer     map[string]json.RawMessage
	// The initialize request's id, and its result as the server sent it
	// (what the SDK's types do not hold, such as the tasks capability).
	initMu     sync.Mutex
	initID     jsonrpc.ID
	initResult json.RawMessage
	// meta is what raw requests carry in _meta once era2026 is set (the
	// session negotiated 2026-07-28), learned from the SDK's discover.
	meta    requestMeta
	era2026 atomic.Bool
	// heard is set once the server has sent a message: a server that
	// exits on the era probe without one is a 2025 server (era.go).
	heard atomic.Bool

	wmu sync.Mutex // serializes writes so each message is one line
	w   io.WriteCloser
	buf []byte // write buffer, guarded by wmu

	closeOnce sync.Once
	closeErr  error
}

func (c *lineConn) SessionID() string { return "" }

// Read returns the next JSON-RPC message, skipping blank and non-JSON lines.
// Close unblocks it: the pipe is an *os.File backed by the runtime poller.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		line, oversize, err := c.readLine()
		if err != nil {
			c.raw.end(err)
			return nil, err
		}
		if oversize > 0 {
			if msg := oversizeResponse(line, oversize, c.max); msg != nil {
				if c.raw.deliver(msg) {
					continue
				}
				return msg, nil
			}
			c.report([]byte(fmt.Sprintf("[dropped a %d-byte message: larger than the %d-byte limit]", oversize, c.max)))
			continue
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if line[0] != '{' {
			c.report(line)
			continue
		}
		msg, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			c.report(line)
			continue
		}
		c.heard.Store(true)
		if req, ok := msg.(*jsonrpc.Request); ok && !req.ID.IsValid() && c.intercept != nil && c.intercept(req) {
			continue
		}
		if c.raw.deliver(msg) || c.served.take(msg) {
			continue
		}
		if resp, ok := msg.(*jsonrpc.Response); ok {
			c.initMu.Lock()
			if c.initID.IsValid() && resp.ID == c.initID {
				c.initResult = resp.Result
			}
			c.initMu.Unlock()
		}
		return msg, nil
	}
}

// initializeResult is the server's initialize result as it sent it.
func (c *lineConn) initializeResult() json.RawMessage {
	c.initMu.Lock()
	defer c.initMu.Unlock()
	return c.initResult
}

func (c *lineConn) report(line []byte) {
	if c.noise != nil {
		c.noise(line)
	}
}

// readLine reads one line. When the line exceeds c.max, it is consumed and
// dropped, and readLine returns its first bytes (enough to find its id) with
// oversize set to its full length.
//
// A long line is kept as the pieces the reader returns and joined once it
// is whole, not grown by append: growing copies it again at every step (a
// 64 MiB line peaked at about twice that). Past c.max the pieces are
// dropped at once and the rest of the line is only read through (it must
// be, to find the next message), so an oversized result holds at most
// c.max while it is read; what it held is then given back to the OS
// (freeOversize).
func (c *lineConn) readLine() (line []byte, oversize int, err error) {
	var pieces [][]byte
	var prefix []byte // the first bytes, for oversizeResponse
	total := 0
	for {
		frag, err := c.br.ReadSlice('\n')
		if total == 0 && err == nil {
			// Fast path: the whole line fit in the buffer. Copy it, since
			// ReadSlice's result is only valid until the next read.
			if len(frag) > c.max {
				return bytes.Clone(frag[:min(len(frag), 512)]), len(frag), nil
			}
			return bytes.Clone(frag), 0, nil
		}
		if len(prefix) < 512 {
			prefix = append(prefix, frag[:min(len(frag), 512-len(prefix))]...)
		}
		total += len(frag)
		if total <= c.max {
			pieces = append(pieces, bytes.Clone(frag))
		} else if pieces != nil {
			pieces = nil // over the limit: only its prefix is kept
			c.freeOversize()
		}
		switch {
		case err == nil, errors.Is(err, io.EOF) && total > 0 && total <= c.max:
			if total > c.max {
				return prefix, total, nil
			}
			return bytes.Join(pieces, nil), 0, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, 0, err
		}
	}
}

// freeOversize gives the memory of a dropped oversized message back to the
// OS once it is garbage. Go's scavenger would return it only over minutes,
// and a sandbox's memory is small; an oversized message is rare enough
// that a forced collection for it costs nothing that matters.
func (c *lineConn) freeOversize() {
	go func() {
		// After the reader has dropped its last reference.
		runtime.Gosched()
		debug.FreeOSMemory()
	}()
}

var idPattern = regexp.MustCompile(`"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?[0-9]+)`)

// oversizeResponse turns a dropped oversized response into an error response
// for the same id, so the call it answered fails with a clear message instead
// of waiting forever. Servers built on the official SDKs write "id" before
// "result", so the id is in the retained prefix.
func oversizeResponse(prefix []byte, size, max int) jsonrpc.Message {
	if !bytes.Contains(prefix, []byte(`"result"`)) && !bytes.Contains(prefix, []byte(`"error"`)) {
		return nil // not a response, or not one we can attribute
	}
	m := idPattern.FindSubmatch(prefix)
	if m == nil {
		return nil
	}
	var raw any
	if m[1][0] == '"' {
		raw = string(bytes.Trim(m[1], `"`))
	} else {
		var n float64
		if _, err := fmt.Sscan(string(m[1]), &n); err != nil {
			return nil
		}
		raw = n
	}
	id, err := jsonrpc.MakeID(raw)
	if err != nil {
		return nil
	}
	return &jsonrpc.Response{
		ID: id,
		Error: &jsonrpc.Error{
			Code:    jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("result too large: %d bytes exceeds the gateway's %d-byte limit per message", size, max),
		},
	}
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok {
		c.meta.learn(req.Method, req.Params)
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "initialize" {
		c.initMu.Lock()
		c.initID = req.ID
		c.initMu.Unlock()
		var err error
		if msg, err = offerWrite(msg, c.offer); err != nil {
			return err
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.buf = append(append(c.buf[:0], data...), '\n')
	_, err = c.w.Write(c.buf)
	if cap(c.buf) > 1<<20 {
		c.buf = nil // don't pin a large buffer after a large request
	}
	return err
}

// Close closes both pipes. Closing stdin is also the polite first step of
// stopping an MCP stdio server; the supervisor escalates from there.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() {
		c.raw.end(errors.New("connection closed"))
		c.served.close()
		werr := c.w.Close()
		rerr := c.r.Close()
		c.closeErr = errors.Join(werr, rerr)
	})
	return c.closeErr
}
