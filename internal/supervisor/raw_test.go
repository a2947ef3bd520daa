package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// rawCall makes a tools/call through CallRaw and decodes the result.
func rawCall(ctx context.Context, s *Server, tool string, args any) (*mcp.CallToolResult, json.RawMessage, error) {
	params, err := json.Marshal(map[string]any{"name": tool, "arguments": args})
	if err != nil {
		return nil, nil, err
	}
	raw, err := s.CallRaw(ctx, "tools/call", params)
	if err != nil {
		return nil, nil, err
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, raw, fmt.Errorf("decode %s: %w", raw, err)
	}
	return &res, raw, nil
}

// callPaths are the two ways a call reaches a server: the SDK's client
// session (Do) and a raw request (CallRaw). Each returns the first text of
// the result.
var callPaths = map[string]func(ctx context.Context, s *Server, tool string, args map[string]any) (string, error){
	"sdk": func(ctx context.Context, s *Server, tool string, args map[string]any) (string, error) {
		res, err := call(ctx, s, tool, args)
		if err != nil {
			return "", err
		}
		return firstText(res), nil
	},
	"raw": func(ctx context.Context, s *Server, tool string, args map[string]any) (string, error) {
		res, _, err := rawCall(ctx, s, tool, args)
		if err != nil {
			return "", err
		}
		return firstText(res), nil
	},
}

func firstText(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// TestRawCallsShareTheSession: raw calls and the SDK session's own calls run
// at once on one connection, and each answer reaches its own caller; an
// upstream's JSON-RPC error comes back as such.
func TestRawCallsShareTheSession(t *testing.T) {
	s, _ := runServer(t, fixture.Options{}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 50 {
		wg.Go(func() {
			want := fmt.Sprintf("raw %d", i)
			res, raw, err := rawCall(ctx, s, "echo", map[string]any{"text": want})
			if err != nil {
				errs <- err
				return
			}
			if got := res.Content[0].(*mcp.TextContent).Text; got != want {
				errs <- fmt.Errorf("raw call %d got %q (%s)", i, got, raw)
			}
		})
		wg.Go(func() {
			want := fmt.Sprintf("sdk %d", i)
			res, err := call(ctx, s, "echo", map[string]any{"text": want})
			if err != nil {
				errs <- err
				return
			}
			if got := res.Content[0].(*mcp.TextContent).Text; got != want {
				errs <- fmt.Errorf("sdk call %d got %q", i, got)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	_, _, err := rawCall(ctx, s, "no_such_tool", map[string]any{})
	var wire *jsonrpc.Error
	if !errors.As(err, &wire) || !strings.Contains(wire.Message, "no_such_tool") {
		t.Errorf("unknown tool: err = %v, want the server's JSON-RPC error", err)
	}
}

// TestRawCallCancelReachesServer: when the caller gives up, the server is
// told with notifications/cancelled and stops the work.
func TestRawCallCancelReachesServer(t *testing.T) {
	s, logs := runServer(t, fixture.Options{}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
	callCtx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, _, err := rawCall(callCtx, s, "sleep", map[string]any{"ms": 600000})
		errc <- err
	}()
	for !strings.Contains(logs.String(), "sleep started") {
		if ctx.Err() != nil {
			t.Fatal("the sleep never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled raw call: err = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancelled raw call did not return")
	}
	for !strings.Contains(logs.String(), "sleep cancelled") {
		if ctx.Err() != nil {
			t.Fatalf("the server never saw the cancellation:\n%s", logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, _, err := rawCall(ctx, s, "echo", map[string]any{"text": "x"}); err != nil {
		t.Errorf("call after a cancellation: %v", err)
	}
}

// TestRawCancelledSettles: a raw request whose caller gives up returns a
// CancelledError at once; the server is told, and Settled closes when the
// server is done with the request (here: it answers the cancelled request
// with its error), not before.
func TestRawCancelledSettles(t *testing.T) {
	s, logs := runServer(t, fixture.Options{}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
	callCtx, cancelCall := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := s.CallRaw(callCtx, "tools/call", json.RawMessage(`{"name":"sleep","arguments":{"ms":60000}}`))
		errc <- err
	}()
	for !strings.Contains(logs.String(), "sleep started") {
		select {
		case <-ctx.Done():
			t.Fatal("the server never started sleeping")
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancelCall()
	err := <-errc
	var ce *CancelledError
	if !errors.As(err, &ce) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v, want a CancelledError", err)
	}
	select {
	case <-ce.Settled():
	case <-ctx.Done():
		t.Fatal("never settled though the server ended the request")
	}
	for !strings.Contains(logs.String(), "sleep cancelled") {
		select {
		case <-ctx.Done():
			t.Fatal("the server was not told of the cancellation")
		case <-time.After(10 * time.Millisecond):
		}
	}
}
