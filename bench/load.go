package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// call makes one call and checks its result, so a benchmark of wrong answers
// fails instead of looking fast.
type call func(ctx context.Context) error

// stats are the client-side measurements of one load run.
type stats struct {
	calls   int
	elapsed time.Duration
	lat     []time.Duration // sorted
}

// rate is completed calls per second of wall time.
func (s stats) rate() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(s.calls) / s.elapsed.Seconds()
}

// pct returns the p-th percentile latency (nearest rank), 0 < p <= 100.
func (s stats) pct(p float64) time.Duration {
	if len(s.lat) == 0 {
		return 0
	}
	i := int(float64(len(s.lat))*p/100+0.5) - 1
	return s.lat[min(max(i, 0), len(s.lat)-1)]
}

// drive runs every worker on its own goroutine, calling it back to back,
// until d has passed (d > 0) or n calls in all have been started (n > 0).
// The first failed call stops the run and is returned.
func drive(ctx context.Context, workers []call, d time.Duration, n int) (stats, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		started  atomic.Int64
		mu       sync.Mutex
		firstErr error
		lats     = make([][]time.Duration, len(workers))
	)
	began := time.Now()
	deadline := began.Add(d)
	for i, w := range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				if d > 0 && !time.Now().Before(deadline) {
					return
				}
				if n > 0 && started.Add(1) > int64(n) {
					return
				}
				t0 := time.Now()
				if err := w(ctx); err != nil {
					mu.Lock()
					if firstErr == nil && !errors.Is(err, context.Canceled) {
						firstErr = err
					}
					mu.Unlock()
					cancel()
					return
				}
				lats[i] = append(lats[i], time.Since(t0))
			}
		})
	}
	wg.Wait()
	var s stats
	s.elapsed = time.Since(began)
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	if firstErr != nil {
		return s, firstErr
	}
	for _, l := range lats {
		s.lat = append(s.lat, l...)
	}
	slices.Sort(s.lat)
	s.calls = len(s.lat)
	return s, nil
}

// echoCall calls tool (the fixture's echo under some name) on cs and checks
// that the text comes back unchanged.
func echoCall(cs *mcp.ClientSession, tool string) call {
	const text = "the quick brown fox jumps over the lazy dog"
	args := map[string]any{"text": text}
	return func(ctx context.Context) error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			return fmt.Errorf("call %s: %w", tool, err)
		}
		return expectText(res, tool, text)
	}
}

// sleepCall calls the fixture's sleep tool for ms milliseconds.
func sleepCall(cs *mcp.ClientSession, tool string, ms int) call {
	want := fmt.Sprintf("slept %dms", ms)
	return func(ctx context.Context) error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"ms": ms}})
		if err != nil {
			return fmt.Errorf("call %s: %w", tool, err)
		}
		return expectText(res, tool, want)
	}
}

func expectText(res *mcp.CallToolResult, tool, want string) error {
	if res.IsError || len(res.Content) != 1 {
		return fmt.Errorf("call %s: unexpected result %+v", tool, res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok || tc.Text != want {
		return fmt.Errorf("call %s: got %+v, want text %q", tool, res.Content[0], want)
	}
	return nil
}

// overlap makes n calls at once, each on its own goroutine, and returns the
// wall time until the last one finished.
func overlap(ctx context.Context, calls []call) (time.Duration, error) {
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, c := range calls {
		wg.Go(func() {
			<-start
			errs[i] = c(ctx)
		})
	}
	began := time.Now()
	close(start)
	wg.Wait()
	took := time.Since(began)
	return took, errors.Join(errs...)
}

// listAll lists every tool, all pages, and returns how many and in how many
// pages.
func listAll(ctx context.Context, cs *mcp.ClientSession) (tools, pages int, err error) {
	params := &mcp.ListToolsParams{}
	for {
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return 0, 0, fmt.Errorf("tools/list page %d: %w", pages+1, err)
		}
		pages++
		tools += len(res.Tools)
		if res.NextCursor == "" {
			return tools, pages, nil
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}
