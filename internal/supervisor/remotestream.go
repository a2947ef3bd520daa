package supervisor

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// What a remote sends on the streams the SDK's client session reads (the
// standalone GET stream it holds open, and the response stream of each
// request it makes: a call through Do, a listing) is relayed as the stdio
// reader relays a child's stdout: each message is seen first, on the
// stream's reader, in order, by the gateway's intercept (progress, log
// messages, task status: relayed raw, at once) and by its request handlers
// (sampling, elicitation, roots: answered raw, with a POST of their own);
// what neither takes (responses, list_changed, resources/updated, ping) goes
// on to the SDK's client session. Through the SDK's types alone, messages
// the types do not know (notifications/tasks/status) were dropped, others
// re-encoded, and all of them queued behind the SDK's notification
// goroutine, which the SDK does not wait for before it hands a call its
// result: a call's last progress could reach the agent after the result,
// when the gateway had already forgotten the call's token, and was lost.

// standaloneRelay is the session's handler of those messages.
type standaloneRelay struct {
	raw    *remoteRaw
	served *served

	mu                 sync.Mutex
	sessionID, version string // from the stream's request, for the answers' POSTs
}

func newStandaloneRelay(raw *remoteRaw) *standaloneRelay {
	s := &standaloneRelay{raw: raw}
	s.served = newServed(raw.serve, s.write)
	return s
}

// handle reports whether it consumed data, one event's message on the
// response stream of req.
func (s *standaloneRelay) handle(req *http.Request, data []byte) bool {
	if !bytes.Contains(data, []byte(`"method"`)) {
		return false // a response (the SDK's result), not decoded twice
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return false // the SDK judges what is not a message
	}
	m, ok := msg.(*jsonrpc.Request)
	if !ok {
		return false
	}
	if sid := req.Header.Get("Mcp-Session-Id"); sid != "" {
		s.mu.Lock()
		s.sessionID, s.version = sid, req.Header.Get("Mcp-Protocol-Version")
		s.mu.Unlock()
	}
	if !m.ID.IsValid() && s.raw.intercept != nil && s.raw.intercept(m) {
		return true
	}
	return s.served.take(m)
}

// write POSTs the answer to a request the remote sent on one of the SDK's
// streams.
func (s *standaloneRelay) write(ctx context.Context, msg jsonrpc.Message) error {
	s.mu.Lock()
	sid, v := s.sessionID, s.version
	s.mu.Unlock()
	return s.raw.sendWith(ctx, msg, sid, v)
}

// close cancels the handlers still running: the session is over.
func (s *standaloneRelay) close() { s.served.close() }

// sseFilter passes an SSE body on to the SDK without the events whose
// message consume took: of those only the other fields (the event id, which
// the SDK resumes from, and retry) remain. An event too large to inspect
// (beyond max) is passed on as it is, for the SDK to judge.
type sseFilter struct {
	src     io.ReadCloser
	br      *bufio.Reader
	consume func(data []byte) bool
	max     int

	out  []byte // filtered bytes not yet returned
	off  int
	err  error // of src, returned once out is drained
	pass bool  // passing the rest of an oversized event as it is
}

func newSSEFilter(src io.ReadCloser, max int, consume func([]byte) bool) *sseFilter {
	return &sseFilter{src: src, br: bufio.NewReaderSize(src, 64<<10), consume: consume, max: max}
}

func (f *sseFilter) Read(p []byte) (int, error) {
	for f.off == len(f.out) {
		if f.err != nil {
			return 0, f.err
		}
		f.out, f.off = f.out[:0], 0
		f.err = f.next()
	}
	n := copy(p, f.out[f.off:])
	f.off += n
	return n, nil
}

func (f *sseFilter) Close() error { return f.src.Close() }

var errLineTooLarge = errors.New("line too large")

// readLine returns the next line with its end, bounded by room.
func (f *sseFilter) readLine(room int) ([]byte, error) {
	var acc []byte
	for {
		frag, err := f.br.ReadSlice('\n')
		acc = append(acc, frag...)
		if len(acc) > room {
			return acc, errLineTooLarge
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return acc, err
		}
	}
}

// next reads one event, through the blank line that ends it, and appends
// to out what the SDK is to see of it.
func (f *sseFilter) next() error {
	if f.pass {
		line, err := f.readLine(f.max)
		f.out = append(f.out, line...)
		if errors.Is(err, errLineTooLarge) {
			return nil
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 && err == nil {
			f.pass = false
		}
		return err
	}
	var raw, kept, data []byte
	hasData, named := false, false
	for {
		line, err := f.readLine(f.max - len(raw))
		raw = append(raw, line...)
		if errors.Is(err, errLineTooLarge) {
			f.out = append(f.out, raw...)
			f.pass = true
			return nil
		}
		if err != nil {
			f.out = append(f.out, raw...) // a partial event: as it is
			return err
		}
		field := bytes.TrimRight(line, "\r\n")
		if len(field) == 0 {
			if hasData && !named && f.consume(data) {
				f.out = append(append(f.out, kept...), '\n')
			} else {
				f.out = append(f.out, raw...)
			}
			return nil
		}
		name, value, _ := bytes.Cut(field, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(name) {
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
			continue
		case "event":
			named = len(value) > 0 && string(value) != "message"
		}
		kept = append(kept, line...)
	}
}
