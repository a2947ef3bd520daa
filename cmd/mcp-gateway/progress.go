package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
)

// progressDelay is how long a start may take before progress is shown: a
// quick start prints only its summary line.
const progressDelay = time.Second

// isTerminal reports whether w is a terminal, where a person reads.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// progressPrinter shows startup progress on a terminal once the start has
// taken longer than a delay: first what happened so far (one line per
// server: its result, or "starting"), then each event as it comes. Its
// methods are safe for concurrent use.
type progressPrinter struct {
	w     io.Writer
	timer *time.Timer

	mu      sync.Mutex
	live    bool
	done    bool
	order   []string                    // servers in the order first seen
	pending map[string]gateway.Progress // each server's latest event, before going live
}

// newProgressPrinter returns a printer writing to w after delay.
func newProgressPrinter(w io.Writer, delay time.Duration) *progressPrinter {
	p := &progressPrinter{w: w, pending: map[string]gateway.Progress{}}
	p.timer = time.AfterFunc(delay, p.goLive)
	return p
}

// add records e, printing it if the delay has passed.
func (p *progressPrinter) add(e gateway.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.done:
	case p.live:
		fmt.Fprintln(p.w, e)
	default:
		if _, seen := p.pending[e.Server]; !seen {
			p.order = append(p.order, e.Server)
		}
		p.pending[e.Server] = e
	}
}

func (p *progressPrinter) goLive() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	p.live = true
	for _, s := range p.order {
		fmt.Fprintln(p.w, p.pending[s])
	}
	p.pending = nil
}

// stop ends the printer: nothing more is printed after it returns.
func (p *progressPrinter) stop() {
	p.timer.Stop()
	p.mu.Lock()
	p.done = true
	p.mu.Unlock()
}
