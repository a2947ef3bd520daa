package aggregate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// CodeCallTimeout is the JSON-RPC code of a call the gateway ended because
// its server sent nothing for Options.CallTimeout: the code the TypeScript
// SDK gives its own request timeouts, so clients that know it read it as
// one.
const CodeCallTimeout = -32001

// callTimer ends a forwarded call whose server has sent neither its answer
// nor a progress notification for too long: a remote that hangs a call, or
// a stdio server stuck in one, is otherwise waited on for as long as the
// agent waits (some never give up). Progress restarts the wait, as the
// TypeScript SDK's resetTimeoutOnProgress does, so a long call that says
// how it is going is never cut off; so does a request the server sends the
// agent during the call (sampling, elicitation), which stops the clock
// until the agent answers: then the agent, not the server, is the one
// being waited on.
type callTimer struct {
	mu     sync.Mutex
	t      *time.Timer
	after  time.Duration
	held   int // requests to the agent in flight: the clock is stopped
	cancel context.CancelCauseFunc
}

// startTimer gives c a context of its own that ends after d without news
// from the server, with a *jsonrpc.Error naming the server as its cause.
func (c *call) startTimer(d time.Duration) {
	ctx, cancel := context.WithCancelCause(c.ctx)
	ct := &callTimer{after: d, cancel: cancel}
	err := &jsonrpc.Error{Code: CodeCallTimeout, Message: fmt.Sprintf(
		"server %q: no answer and no progress for %s; the call was cancelled (the gateway's --call-timeout)", c.server, d)}
	ct.t = time.AfterFunc(d, func() { cancel(err) })
	c.ctx, c.timer = ctx, ct
}

// progressed restarts c's wait: its server sent progress.
func (c *call) progressed() {
	ct := c.timer
	if ct == nil {
		return
	}
	ct.mu.Lock()
	if ct.held == 0 {
		ct.t.Reset(ct.after)
	}
	ct.mu.Unlock()
}

// hold stops c's clock while its server waits on the agent; the function
// it returns starts it again, from the beginning.
func (c *call) hold() func() {
	ct := c.timer
	if ct == nil {
		return func() {}
	}
	ct.mu.Lock()
	ct.held++
	ct.t.Stop()
	ct.mu.Unlock()
	return func() {
		ct.mu.Lock()
		if ct.held--; ct.held == 0 {
			ct.t.Reset(ct.after)
		}
		ct.mu.Unlock()
	}
}

// stop ends c's clock once the call is over, and releases its context.
func (c *call) stop() {
	if ct := c.timer; ct != nil {
		ct.mu.Lock()
		ct.t.Stop()
		ct.held = -1 << 30 // a late release restarts nothing
		ct.mu.Unlock()
		ct.cancel(context.Canceled)
	}
}

// expired returns the timeout's error in place of err when c ended because
// its server sent nothing for too long (the upstream's own error is then
// only the cancellation's), and err otherwise.
func (c *call) expired(err error) error {
	if err == nil || c.timer == nil {
		return err
	}
	var wire *jsonrpc.Error
	if cause := context.Cause(c.ctx); errors.As(cause, &wire) && wire.Code == CodeCallTimeout {
		return wire
	}
	return err
}
