package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// RequestHandler answers one request a server sent to the gateway, with its
// params and result as raw JSON. A *jsonrpc.Error is sent to the server as
// it is; any other error as an internal error with its message.
type RequestHandler = func(ctx context.Context, params json.RawMessage) (json.RawMessage, error)

// served answers requests a server sends (sampling, elicitation, roots, tasks/*)
// past the SDK's client session, so their params and results are relayed
// as bytes; see Options.ServeRequest. A notifications/cancelled from the
// server for one of them cancels its handler.
type served struct {
	handler func(method string) RequestHandler
	write   func(context.Context, jsonrpc.Message) error

	mu      sync.Mutex
	cancels map[jsonrpc.ID]context.CancelFunc
	closed  bool
}

func newServed(handler func(method string) RequestHandler, write func(context.Context, jsonrpc.Message) error) *served {
	if handler == nil {
		return nil
	}
	return &served{handler: handler, write: write, cancels: make(map[jsonrpc.ID]context.CancelFunc)}
}

// take reports whether msg is a request (or a cancellation of one) that s
// handles; it starts the handler on its own goroutine, so the reader goes
// on at once.
func (s *served) take(msg jsonrpc.Message) bool {
	if s == nil {
		return false
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return false
	}
	if !req.ID.IsValid() {
		if req.Method == "notifications/cancelled" {
			var p mcp.CancelledParams
			if json.Unmarshal(req.Params, &p) == nil {
				if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
					s.mu.Lock()
					cancel := s.cancels[id]
					s.mu.Unlock()
					if cancel != nil {
						cancel()
						return true
					}
				}
			}
		}
		return false
	}
	h := s.handler(req.Method)
	if h == nil {
		return false
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel()
		return true
	}
	s.cancels[req.ID] = cancel
	s.mu.Unlock()
	go func() {
		res, err := h(ctx, req.Params)
		s.mu.Lock()
		delete(s.cancels, req.ID)
		s.mu.Unlock()
		if ctx.Err() != nil {
			return // the server gave up on it: no answer, as the spec asks
		}
		cancel()
		resp := &jsonrpc.Response{ID: req.ID, Result: res}
		if err != nil {
			var wire *jsonrpc.Error
			if !errors.As(err, &wire) {
				wire = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
			}
			resp.Result, resp.Error = nil, wire
		}
		_ = s.write(context.Background(), resp)
	}()
	return true
}

// close cancels every handler still running: the connection is gone.
func (s *served) close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for id, cancel := range s.cancels {
		cancel()
		delete(s.cancels, id)
	}
}
