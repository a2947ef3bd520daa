package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/stdioserve"
)

// ServeStdio serves one MCP session of the merged server over in and out
// (line-delimited JSON-RPC 2.0) until in reaches EOF or ctx is done, then
// shuts the gateway down. Call it after a successful Start of a gateway
// without Config.Listen; requests that arrive while the servers start wait
// in the pipe. Stdout-like out carries protocol messages only.
func (g *Gateway) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	t := stdioserve.New(in, out, g.cfg.ShutdownGrace)
	t.Task = func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		for ss := range g.agg.Server().Sessions() { // stdio has one
			return g.agg.Task(ctx, ss, nil, method, params)
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "not initialized"}
	}
	// stdio has one session, whose id is "".
	t.Initialized = func(params json.RawMessage) { g.agg.AgentInitialized("", params) }
	t.TaskStatus = func(params json.RawMessage) {
		for ss := range g.agg.Server().Sessions() {
			g.agg.AgentTaskStatus(ss, params)
		}
	}
	// What aggregate.ForwardsRaw takes (tools/call, prompts/get, ...) is
	// answered outside the SDK, with the server's result bytes, as over
	// HTTP (the stdio client's one stream carries everything of a call).
	t.Forward = func(ctx context.Context, method string, params json.RawMessage, notify aggregate.Notify, ask aggregate.Ask) (json.RawMessage, error) {
		ctx = g.cfg.Telemetry.WithRequest(ctx, stdioserve.RequestID(ctx), "", "", "pipe")
		for ss := range g.agg.Server().Sessions() {
			return g.agg.RequestStream(ctx, ss, method, params, true, notify, ask, nil)
		}
		return nil, aggregate.ErrNeedsSession
	}
	err := serveSession(ctx, g.agg.Server(), t)
	if ctx.Err() == nil {
		g.log.Info().Msg("stdin closed; shutting down")
	} else {
		g.log.Info().Msg("shutting down")
	}
	g.stop(nil)
	if err != nil && !errors.Is(err, io.EOF) && ctx.Err() == nil {
		return fmt.Errorf("serve stdio: %w", err)
	}
	return nil
}

// serveSession is the SDK's Server.Run, but tells t when the session is
// connected, so that t reads the client's first message only then (see
// stdioserve.Transport.Connected).
func serveSession(ctx context.Context, s *mcp.Server, t *stdioserve.Transport) error {
	ss, err := s.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	t.Connected()
	closed := make(chan error, 1)
	go func() { closed <- ss.Wait() }()
	select {
	case <-ctx.Done():
		ss.Close()
		<-closed
		return ctx.Err()
	case err := <-closed:
		return err
	}
}
