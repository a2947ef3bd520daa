package stdioserve

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// batchSpy passes the client's bytes to the SDK's transport unchanged and
// notes the ids of the requests that came inside a JSON-RPC batch (a line
// whose first non-space byte is '['). The SDK's stdio connection holds the
// answers of a batch until each of its requests has one and writes them as
// one array, so such a request must be answered through the SDK: an answer
// the raw path wrote itself would never complete the batch.
type batchSpy struct {
	r io.Reader

	// Read's state, used only by the SDK's reading goroutine.
	atStart bool   // the next byte begins a line
	inBatch bool   // inside a line that began with '['
	line    []byte // that line so far

	mu      sync.Mutex
	ids     map[jsonrpc.ID]bool // requests read in a batch, not yet taken
	unknown bool                // a batch line that did not parse: which requests it held is unknown
}

func newBatchSpy(r io.Reader) *batchSpy {
	return &batchSpy{r: r, atStart: true, ids: map[jsonrpc.ID]bool{}}
}

// Read implements io.Reader. A batch's ids are recorded before its last byte
// is returned, so before the SDK decodes any of its messages.
func (s *batchSpy) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	b := p[:n]
	for len(b) > 0 {
		if s.inBatch {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				s.line = append(s.line, b...)
				break
			}
			s.line = append(s.line, b[:i]...)
			s.record(s.line)
			s.line, s.inBatch, s.atStart = s.line[:0], false, true
			b = b[i+1:]
			continue
		}
		if s.atStart {
			switch b[0] {
			case ' ', '\t', '\r', '\n':
				b = b[1:]
				continue
			case '[':
				s.inBatch = true
				continue
			}
			s.atStart = false
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		s.atStart = true
		b = b[i+1:]
	}
	if err != nil && s.inBatch {
		s.record(s.line) // a last batch without its line break
		s.line, s.inBatch = s.line[:0], false
	}
	return n, err
}

// record notes the requests of one batch line.
func (s *batchSpy) record(line []byte) {
	var msgs []struct {
		ID     any    `json:"id"`
		Method string `json:"method"`
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if json.Unmarshal(line, &msgs) != nil {
		s.unknown = true
		return
	}
	for _, m := range msgs {
		if m.ID == nil || m.Method == "" {
			continue
		}
		if id, err := jsonrpc.MakeID(m.ID); err == nil {
			s.ids[id] = true
		}
	}
}

// batched reports whether the request id came inside a batch (or may have),
// forgetting it: a later request may reuse the id.
func (s *batchSpy) batched(id jsonrpc.ID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids[id] {
		delete(s.ids, id)
		return true
	}
	return s.unknown
}
