package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/logfile"
)

// stdioFlags are the flags that mean something in stdio mode.
var stdioFlags = []string{"config", "config-file", "log-file", "log-level", "catalog", "servers-dir",
	"startup-timeout", "shutdown-grace", "max-backoff", "procs", "interceptors"}

// runStdio is `mcp-gateway stdio`: the merged server on stdin and stdout
// (line-delimited JSON-RPC 2.0), for MCP clients that launch servers as
// commands (desktop apps, IDEs). The client is the one process that can
// reach it, so there is no token, no HTTP listener and no token file.
// Stdout carries protocol messages only; logs go to stderr, or to
// --log-file when it is given.
func runStdio(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	set, fs, err := parseFlags(command{
		name:     "stdio",
		synopsis: "mcp-gateway stdio [--config '<json>' | --config-file PATH] [flags]",
		shown:    stdioFlags,
		defaults: map[string]string{"log-file": "stderr"},
		usages:   map[string]string{"log-file": "write the log to this file instead of stderr"},
	}, args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	// An allowlist, not a denylist: flags for the HTTP endpoint, the token
	// or the pid file keep being added, and none of them means anything here.
	var refused string
	fs.Visit(func(f *flag.Flag) {
		if !slices.Contains(stdioFlags, f.Name) && refused == "" {
			refused = f.Name
		}
	})
	if refused != "" {
		return &usageError{fmt.Sprintf("--%s does not apply to stdio mode (no HTTP endpoint, no token, no pid file)", refused)}
	}
	logw := stderr
	if flagSet(fs, "log-file") {
		f, err := logfile.Open(set.LogFile)
		if err != nil {
			return err
		}
		defer f.Close()
		logw = f
	}
	log, err := newLogger(logw, set.LogLevel)
	if err != nil {
		return err
	}
	specs, err := set.resolveOrDefault(stderr)
	if err != nil {
		return err
	}
	g := newGateway(set, specs, "", log)
	return g.runStdio(ctx, stdin, stdout)
}

// runStdio starts every server, waits for all of them as a launch does
// (failing with the same message when one fails or the startup times out),
// then serves one MCP session over in and out until in reaches EOF or ctx
// is done, and stops everything. Requests that arrive while the servers
// start wait in the pipe.
func (g *gateway) runStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	began := time.Now()
	if err := g.startInterceptors(ctx); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	g.runServers(runCtx, &wg)
	stop := func() {
		cancel()
		wg.Wait()
		g.icpt.Close()
		g.log.Info().Msg("gateway stopped")
	}
	tools, err := g.open(ctx)
	if err != nil {
		stop()
		return err
	}
	g.log.Info().Int("servers", len(g.servers)).Int("tools", tools).Dur("elapsed", time.Since(began)).
		Str("transport", "stdio").Msg("ready")

	t := &drainTransport{
		inner: &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}},
		grace: g.set.ShutdownGrace,
		task: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			for ss := range g.agg.Server().Sessions() { // stdio has one
				return g.agg.Task(ctx, ss, method, params)
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "not initialized"}
		},
	}
	err = g.agg.Server().Run(ctx, t)
	if ctx.Err() == nil {
		g.log.Info().Msg("stdin closed; shutting down")
	} else {
		g.log.Info().Msg("shutting down")
	}
	stop()
	if err != nil && !errors.Is(err, io.EOF) && ctx.Err() == nil {
		return fmt.Errorf("serve stdio: %w", err)
	}
	return nil
}

// nopWriteCloser keeps the MCP transport from closing stdout: the process
// may still need it, and closing it is the exit's job.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// drainTransport answers what was asked before stdin closed, except what
// the client cancelled. The SDK ends a
// session at EOF and cancels the requests still in flight, so
// `printf '<initialize>\n<tools/list>\n' | mcp-gateway stdio` would print
// only the first answer, or none. Its connection holds EOF back until every
// request read so far has its response written, or grace has passed.
//
// It also answers task requests (aggregate.IsTaskRequest) with task, as the
// HTTP endpoint does: the SDK's server does not know them.
type drainTransport struct {
	inner mcp.Transport
	grace time.Duration
	task  func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

func (t *drainTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &drainConn{Connection: c, grace: t.grace, task: t.task, pending: map[jsonrpc.ID]bool{}, cancelled: map[jsonrpc.ID]bool{}, listed: map[string]bool{},
		changed: make(chan struct{}, 1), closed: make(chan struct{})}, nil
}

type drainConn struct {
	mcp.Connection
	grace time.Duration
	task  func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)

	mu        sync.Mutex
	pending   map[jsonrpc.ID]bool // calls read and not yet answered
	cancelled map[jsonrpc.ID]bool // calls the client cancelled before their answer: it is not sent
	changed   chan struct{}       // signalled when pending shrinks
	listed    map[string]bool     // kinds of list the client asked for: "tools", "prompts", "resources"
	closed    chan struct{}
	closeOnce sync.Once
}

// listKind names the list a list request or a list_changed notification is
// about ("tools", "prompts", "resources"; templates count as resources, as
// the notification does), or "" for any other method.
func listKind(method string) string {
	switch method {
	case "tools/list", "notifications/tools/list_changed":
		return "tools"
	case "prompts/list", "notifications/prompts/list_changed":
		return "prompts"
	case "resources/list", "resources/templates/list", "notifications/resources/list_changed":
		return "resources"
	}
	return ""
}

func (c *drainConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		if errors.Is(err, io.EOF) {
			c.drain(ctx)
		}
		return nil, err
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() && c.task != nil && aggregate.IsTaskRequest(req.Method, req.Params) {
		c.mu.Lock()
		c.pending[req.ID] = true
		c.mu.Unlock()
		go func() {
			res, err := c.task(context.WithoutCancel(ctx), req.Method, req.Params)
			resp := &jsonrpc.Response{ID: req.ID, Result: res}
			if err != nil {
				var wire *jsonrpc.Error
				if !errors.As(err, &wire) {
					wire = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
				}
				resp.Result, resp.Error = nil, wire
			}
			_ = c.Write(context.Background(), resp)
		}()
		return c.Read(ctx)
	}
	if req, ok := msg.(*jsonrpc.Request); ok {
		c.mu.Lock()
		switch {
		case req.IsCall():
			c.pending[req.ID] = true
			if kind := listKind(req.Method); kind != "" {
				c.listed[kind] = true
			}
		case req.Method == "notifications/cancelled":
			// The receiver of a cancellation should not answer the request
			// (a server connected directly does not), but the SDK answers
			// "context canceled" once the handler returns: that answer is
			// dropped in Write. Marked before the SDK reads the notification,
			// so before the handler learns of it. Only a call still pending
			// is marked, so a later call reusing an answered id is answered.
			var p struct {
				RequestID any `json:"requestId"`
			}
			if json.Unmarshal(req.Params, &p) == nil {
				if id, err := jsonrpc.MakeID(p.RequestID); err == nil && c.pending[id] {
					delete(c.pending, id)
					c.cancelled[id] = true
				}
			}
		}
		c.mu.Unlock()
	}
	return msg, nil
}

func (c *drainConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	// A list_changed about a list the client never asked for carries no
	// news, and one sent while the servers' prompts and resources are first
	// named can reach a client before its initialize answer (a client reading
	// "one answer per request" then takes it for the answer). Such a
	// notification is not sent; once the client has listed that kind, every
	// change is.
	if req, ok := msg.(*jsonrpc.Request); ok && !req.IsCall() {
		if kind := listKind(req.Method); kind != "" {
			c.mu.Lock()
			listed := c.listed[kind]
			c.mu.Unlock()
			if !listed {
				return nil
			}
		}
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		dropped := c.cancelled[resp.ID]
		delete(c.cancelled, resp.ID)
		c.mu.Unlock()
		if dropped {
			return nil
		}
	}
	err := c.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		delete(c.pending, resp.ID)
		c.mu.Unlock()
		select {
		case c.changed <- struct{}{}:
		default:
		}
	}
	return err
}

func (c *drainConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Connection.Close()
}

// drain waits until every pending call is answered, grace passes, or the
// connection is closed.
func (c *drainConn) drain(ctx context.Context) {
	timer := time.NewTimer(c.grace)
	defer timer.Stop()
	for {
		c.mu.Lock()
		n := len(c.pending)
		c.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-c.changed:
		case <-timer.C:
			return
		case <-c.closed:
			return
		case <-ctx.Done():
			return
		}
	}
}
