package endpoint

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync"
)

// eventStream turns a fast-path response into an SSE stream at the first
// message of its call for the agent (progress, log messages, a server's
// request), as the SDK path answers such a call; the JSON-RPC response is
// its last event. A call that sends nothing is answered with plain JSON.
//
// Notifications are relayed on the server's reader (aggregate.Intercept),
// which must never wait for an agent: one that stops reading its stream
// would hold every session's calls to that server. So send only queues the
// event, and a goroutine of the stream's own writes it (each write bounded
// by --write-timeout, stallWriter). The queue is bounded: past
// maxStreamBacklog bytes waiting, a notification is dropped (the agent is
// not reading them anyway). close waits for the queue to drain, so every
// event queued goes out before the response.
type eventStream struct {
	w      http.ResponseWriter
	needed bool // the call could send notifications (aggregate.MayStream)

	mu      sync.Mutex
	started bool // the writer runs: the response is an SSE stream
	closed  bool
	failed  bool     // a write failed: the agent is gone
	queue   [][]byte // events not yet written
	queued  int      // their bytes
	dropped int      // notifications dropped for a full queue
	wake    chan struct{}
	done    chan struct{} // closed when the writer returns
}

// maxStreamBacklog bounds the bytes of notifications waiting for one
// agent's stream.
const maxStreamBacklog = 4 << 20

// errStreamBehind is send's error for a notification dropped because the
// agent has not read the ones before it.
var errStreamBehind = errors.New("the agent is not reading its stream: notification dropped")

// send queues one notification as an event, to be written and flushed by
// the stream's writer; it never waits for the agent.
func (s *eventStream) send(method string, params json.RawMessage) error {
	m, _ := json.Marshal(method)
	ev := make([]byte, 0, len(params)+len(m)+64)
	ev = append(ev, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":"...)
	ev = append(ev, m...)
	ev = append(ev, `,"params":`...)
	ev = append(ev, params...)
	ev = append(ev, "}\n\n"...)
	return s.enqueue(ev, true)
}

// request queues a request to the agent as an event (never dropped: the
// server waits for its answer); params absent stay absent.
func (s *eventStream) request(id, method string, params json.RawMessage) error {
	m, _ := json.Marshal(method)
	ev := make([]byte, 0, len(params)+len(m)+len(id)+64)
	ev = append(ev, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"...)
	ev = append(ev, id...)
	ev = append(ev, `,"method":`...)
	ev = append(ev, m...)
	if len(params) > 0 {
		ev = append(ev, `,"params":`...)
		ev = append(ev, params...)
	}
	ev = append(ev, "}\n\n"...)
	return s.enqueue(ev, false)
}

// enqueue queues an event for the writer, which it starts with the first;
// a bounded event is dropped when the backlog is full.
func (s *eventStream) enqueue(ev []byte, bounded bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return errors.New("the call's response is complete")
	case s.failed:
		return errors.New("the call's stream failed")
	case bounded && s.queued > 0 && s.queued+len(ev) > maxStreamBacklog:
		s.dropped++
		return errStreamBehind
	}
	s.queue = append(s.queue, ev)
	s.queued += len(ev)
	if !s.started {
		s.started = true
		s.wake = make(chan struct{}, 1)
		s.done = make(chan struct{})
		go s.write()
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

// write starts the SSE response and writes queued events until the stream
// is closed and drained, or a write fails.
func (s *eventStream) write() {
	defer close(s.done)
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	s.w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(s.w)
	for {
		s.mu.Lock()
		batch, closed := s.queue, s.closed
		s.queue, s.queued = nil, 0
		s.mu.Unlock()
		if len(batch) == 0 {
			if closed {
				return
			}
			<-s.wake
			continue
		}
		var err error
		for _, ev := range batch {
			if _, err = s.w.Write(ev); err != nil {
				break
			}
		}
		if err == nil {
			err = rc.Flush()
		}
		if err != nil {
			s.mu.Lock()
			s.failed, s.queue, s.queued = true, nil, 0
			s.mu.Unlock()
			return
		}
	}
}

// close ends sending, waits until the events queued are written (or the
// stream failed), and reports whether the stream started.
func (s *eventStream) close() bool {
	s.mu.Lock()
	s.closed = true
	started := s.started
	s.mu.Unlock()
	if started {
		select {
		case s.wake <- struct{}{}:
		default:
		}
		<-s.done
	}
	return started
}

// droppedCount is the number of notifications dropped for a full queue.
func (s *eventStream) droppedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// final writes the response to the call as the stream's last event.
func (s *eventStream) final(id json.RawMessage, member string, raw json.RawMessage) {
	b := make([]byte, 0, len(raw)+len(id)+64)
	b = append(b, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"...)
	b = append(b, id...)
	b = append(b, `,"`+member+`":`...)
	b = append(b, raw...)
	b = append(b, "}\n\n"...)
	_, _ = s.w.Write(b)
}
