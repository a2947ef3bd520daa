package stdioserve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
)

// MaxLineBytes bounds one line the client sends (one message or batch),
// line break included: the SDK's own default frame cap, kept so that a
// client that worked against a server of the SDK works here too.
const MaxLineBytes = mcp.DefaultMaxLineLength

// lineGate stands between stdin and the SDK's transport and passes on only
// lines that hold one JSON value. The SDK decodes stdin as one JSON stream:
// a single bad byte ends its reader for good, and with it the session, so
// `printf 'oops\n<initialize>\n' | mcp-gateway stdio` printed nothing. A
// line that is not UTF-8, not JSON, or longer than the limit is answered
// here instead, with a parse error (-32700) and a null id as JSON-RPC asks
// (its id cannot be read), and the next line is read as if it had not come.
// A line of valid JSON that is no JSON-RPC message is left to the SDK's
// decoder, whose refusal tolerantConn answers.
type lineGate struct {
	br    *bufio.Reader
	out   *lineWriter
	limit int

	pending   []byte // the line being handed on, not yet read by the SDK
	lineBreak bool   // a line break is still to follow pending
	long      []byte // a line longer than br's buffer, put together
	err       error  // the read error to return once pending is empty
}

func newLineGate(in io.Reader, out *lineWriter, limit int) *lineGate {
	return &lineGate{br: bufio.NewReaderSize(in, 64<<10), out: out, limit: limit}
}

// readFailure is a failure to read stdin itself, not a bad message: it ends
// the session (tolerantConn tells the two apart by it).
type readFailure struct{ err error }

func (e *readFailure) Error() string { return "read stdin: " + e.err.Error() }
func (e *readFailure) Unwrap() error { return e.err }

// Read implements io.Reader.
func (g *lineGate) Read(p []byte) (int, error) {
	if len(g.pending) == 0 && g.lineBreak {
		g.lineBreak = false
		if len(p) == 0 {
			return 0, nil
		}
		p[0] = '\n'
		return 1, nil
	}
	for len(g.pending) == 0 {
		if g.err != nil {
			return 0, g.err
		}
		line, tooLong, err := g.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				g.err = io.EOF
			} else {
				g.err = &readFailure{err}
			}
		}
		switch {
		case tooLong:
			g.refuse("parse error: line longer than " + limitText(g.limit) + ", the most one message may take")
		case len(bytes.TrimSpace(line)) == 0:
		case !utf8.Valid(line):
			g.refuse("parse error: the line is not valid UTF-8")
		case !json.Valid(line):
			var v json.RawMessage
			detail := "not one JSON value"
			if err := json.Unmarshal(line, &v); err != nil {
				detail = err.Error()
			}
			g.refuse("parse error: " + detail)
		default:
			// The SDK's decoder takes a byte after the value other than a
			// line break for trailing garbage, and stops for good.
			g.pending = bytes.TrimRight(line, " \t\r\n")
			g.lineBreak = true
		}
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	if len(g.pending) == 0 && g.lineBreak && n < len(p) {
		p[n] = '\n'
		n++
		g.lineBreak = false
	}
	return n, nil
}

// next reads one line, its line break included. A line longer than the
// limit is read to its end and dropped (tooLong). The line is valid until
// the next call.
func (g *lineGate) next() (line []byte, tooLong bool, err error) {
	if cap(g.long) > 1<<20 {
		g.long = nil // one huge message does not hold its memory for good
	}
	g.long = g.long[:0]
	for {
		frag, err := g.br.ReadSlice('\n')
		if !tooLong && len(g.long)+len(frag) > g.limit {
			tooLong, g.long = true, g.long[:0]
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			if !tooLong {
				g.long = append(g.long, frag...)
			}
			continue
		}
		switch {
		case tooLong:
			return nil, true, err
		case len(g.long) == 0:
			return frag, false, err // most lines: no copy
		default:
			return append(g.long, frag...), false, err
		}
	}
}

// refuse answers a line that is no message with a parse error.
func (g *lineGate) refuse(msg string) {
	writeError(g.out, &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: msg})
}

// writeError writes a JSON-RPC error response with a null id: the id of
// what it answers could not be read.
func writeError(out *lineWriter, e *jsonrpc.Error) {
	b := append([]byte(`{"jsonrpc":"2.0","id":null,"error":`), aggregate.ErrorJSON(e)...)
	_, _ = out.Write(append(b, "}\n"...))
}

// tolerantConn answers a line of JSON that the SDK cannot decode as a
// JSON-RPC message (`{}`, `42`, a wrong "jsonrpc") with an invalid request
// error (-32600), where the SDK's session would end on it, and reads on.
// Behind a lineGate every line the SDK's decoder gets is one JSON value,
// so such an error leaves its reader intact; a failure of stdin itself
// (readFailure), EOF and a closed connection still end the session.
type tolerantConn struct {
	mcp.Connection
	out *lineWriter
}

func (c *tolerantConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err == nil || fatalRead(ctx, err) {
			return msg, err
		}
		writeError(c.out, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: " + err.Error()})
	}
}

// fatalRead reports whether err, from the SDK's stdio connection, ends the
// session rather than refusing one message.
func fatalRead(ctx context.Context, err error) bool {
	var rf *readFailure
	var syntax *json.SyntaxError
	// The SDK's reader also stops on trailing bytes after a value; the gate
	// passes none, but a session must not wait on a reader that stopped.
	return ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.As(err, &rf) || errors.As(err, &syntax) || strings.Contains(err.Error(), "trailing data")
}

// limitText renders a byte limit for a message ("16 MiB").
func limitText(n int) string {
	if n%(1<<20) == 0 {
		return strconv.Itoa(n>>20) + " MiB"
	}
	return strconv.Itoa(n) + " bytes"
}
