package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// sdkPathSessions is the concurrency of the paths rows, as of the CPU
// target.
const sdkPathSessions = 8

// statelessProtocol is the MCP revision served without sessions; the
// stateless row's clients ask for it.
const statelessProtocol = "2026-07-28"

// pathRuns measures the gateway's CPU per request on each of its paths,
// at 8 sessions against one server: the fast path (a plain call, served on
// the HTTP lane); a call with a progress token (the fast path too, but off
// the lane: the lane cannot stream, so each such call goes back to
// net/http); a call from a client that offers sampling (the fast path off
// the lane: the server could ask the agent something on the call's
// stream); prompts/get, resources/read, completion/complete and
// resources/subscribe/unsubscribe, which take the fast path as calls do;
// and the SDK path, what a client still sends through the Go SDK's server
// session: logging/setLevel, answered by the gateway. A second server,
// with completions, answers completion/complete only.
func (b *bench) pathRuns(ctx context.Context) error {
	b.logf("launching a gateway with 1 server for the paths rows")
	var env []string
	if b.opt.profile != "" {
		// A profile of all paths: the SDK path's frames tell them apart.
		f, err := filepath.Abs(filepath.Join(b.opt.profile, "paths.pprof"))
		if err != nil {
			return err
		}
		env = append(env, "MCP_GATEWAY_CPUPROFILE="+f)
	}
	servers := fixtureServers(2, func(i int) fixture.Options {
		o := plainServer(i)
		o.Verbatim = i == 1 // completions
		return o
	})
	bx, _, err := b.launch(ctx, "paths", servers, env...)
	if err != nil {
		return err
	}
	css, err := bx.connectN(ctx, sdkPathSessions)
	if err != nil {
		return err
	}
	defer closeAll(css)
	sampling := make([]*mcp.ClientSession, sdkPathSessions)
	hc := bx.httpClient()
	for i := range sampling {
		client := mcp.NewClient(&mcp.Implementation{Name: "bench-agent", Version: "1"}, &mcp.ClientOptions{
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return nil, fmt.Errorf("not asked in the benchmark")
			},
		})
		tr := &mcp.StreamableClientTransport{Endpoint: "http://" + bx.addr + "/mcp", HTTPClient: hc}
		if sampling[i], err = client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: bx.protocol}); err != nil {
			return fmt.Errorf("connect to gateway: %w", err)
		}
	}
	defer closeAll(sampling)
	// Stateless clients: the Go SDK client asking for the 2026 era gets it
	// from the gateway (server/discover instead of initialize), and each of
	// its calls is one POST with no session, served by the gateway's
	// stateless path. A client that fell back to a 2025 session would
	// measure the fast path again, so the era is checked.
	stateless := make([]*mcp.ClientSession, sdkPathSessions)
	for i := range stateless {
		client := mcp.NewClient(&mcp.Implementation{Name: "bench-agent", Version: "1"}, nil)
		tr := &mcp.StreamableClientTransport{Endpoint: "http://" + bx.addr + "/mcp", HTTPClient: hc}
		if stateless[i], err = client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: statelessProtocol}); err != nil {
			return fmt.Errorf("connect to gateway on %s: %w", statelessProtocol, err)
		}
		if v := stateless[i].InitializeResult().ProtocolVersion; v != statelessProtocol {
			closeAll(stateless[:i+1])
			return fmt.Errorf("client asking for %s negotiated %s with the gateway", statelessProtocol, v)
		}
	}
	defer closeAll(stateless)
	var token atomic.Int64
	progressCall := func(cs *mcp.ClientSession) call {
		const text = "the quick brown fox jumps over the lazy dog"
		args := map[string]any{"text": text}
		return func(ctx context.Context) error {
			p := &mcp.CallToolParams{Name: directEchoTool, Arguments: args}
			p.SetProgressToken("bench-" + strconv.FormatInt(token.Add(1), 10))
			res, err := cs.CallTool(ctx, p)
			if err != nil {
				return fmt.Errorf("call %s: %w", directEchoTool, err)
			}
			return expectText(res, directEchoTool, text)
		}
	}
	// resources/subscribe and unsubscribe take the fast path too: each is
	// forwarded to the server that owns the URI and answered with its
	// result bytes; the gateway keeps which session subscribed to what.
	// Each worker subscribes and unsubscribes in turn (one request per
	// call) to a URI of its own, so that every request goes to the server
	// (an unsubscribe while another session holds the URI is answered by
	// the gateway alone).
	subscribe := func(i int, cs *mcp.ClientSession) call {
		uri := fixture.ResourceURI(directServerName) + "/bench-" + strconv.Itoa(i)
		on := false
		return func(ctx context.Context) error {
			on = !on
			if on {
				if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
					return fmt.Errorf("resources/subscribe %s: %w", uri, err)
				}
				return nil
			}
			if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
				return fmt.Errorf("resources/unsubscribe %s: %w", uri, err)
			}
			return nil
		}
	}
	var sessionNo atomic.Int64
	perSession := func(cs *mcp.ClientSession) call { return subscribe(int(sessionNo.Add(1)), cs) }
	// What a client still sends through the Go SDK's server session (the
	// SDK path: the request decoded into its types, through its handlers
	// and the gateway's middleware, the answer framed as SSE), now that
	// every call, forwarded request, list, ping and subscription of a live
	// session is the fast path's: initialize, and logging/setLevel,
	// measured here.
	// logging/setLevel is answered by the gateway (the SDK records the
	// session's level; the gateway passes a changed minimum upstream). The
	// level stays the same, as a client sets it once: the cost is the SDK
	// path's own. It goes last: sessions that set a level have their
	// calls' log messages on the calls' streams, which the rows above do
	// not measure.
	setLevel := func(cs *mcp.ClientSession) call {
		return func(ctx context.Context) error {
			if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
				return fmt.Errorf("logging/setLevel: %w", err)
			}
			return nil
		}
	}
	for _, path := range []struct {
		name     string
		call     func(*mcp.ClientSession) call
		sessions []*mcp.ClientSession
	}{
		{"fast path (plain call)", func(cs *mcp.ClientSession) call { return echoCall(cs, directEchoTool) }, css},
		{"stateless 2026-07-28 tools/call (8 clients, no session)", func(cs *mcp.ClientSession) call { return echoCall(cs, directEchoTool) }, stateless},
		{"call with a progress token", progressCall, css},
		{"call from a client that offers sampling", func(cs *mcp.ClientSession) call { return echoCall(cs, directEchoTool) }, sampling},
		{"prompts/get", promptGetCall, css},
		{"resources/read", resourceReadCall, css},
		{"completion/complete", completeCall, css},
		{"resources/subscribe, unsubscribe in turn", perSession, css},
		{"SDK path (logging/setLevel)", setLevel, css},
	} {
		workers := make([]call, len(path.sessions))
		for i, cs := range path.sessions {
			workers[i] = path.call(cs)
		}
		if _, err := drive(ctx, workers, 0, warmupCalls); err != nil {
			return fmt.Errorf("%s warm-up: %w", path.name, err)
		}
		b.logf("gateway, %d sessions, %s, %s", sdkPathSessions, path.name, b.opt.duration)
		gw0, err := cpuTime(bx.gwPID)
		if err != nil {
			return err
		}
		c0 := ownCPUTime()
		s, err := drive(ctx, workers, b.opt.duration, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", path.name, err)
		}
		client := perCall(ownCPUTime()-c0, s.calls)
		gw1, err := cpuTime(bx.gwPID)
		if err != nil {
			return err
		}
		cpu := perCall(gw1-gw0, s.calls)
		b.tbl.add(fmt.Sprintf("gateway CPU per call, %d sessions, %s", sdkPathSessions, path.name),
			fmt.Sprintf("%s (%s; client CPU %s per call)", dur(cpu), throughput(s), dur(client)), "≤ 150 µs", judge(cpu <= targetCPUPerCall))
	}
	// The two eras' plain call again, with one client for both
	// (rawcalls.go): the rows above use each era's Go SDK client, whose
	// costs differ.
	if err := b.rawEraRuns(ctx, bx); err != nil {
		return err
	}
	return b.stop(bx)
}
