package aggregate

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/supervisor"
)

// TestToolCallKeepsTheAgentsParams: a tools/call on the SDK path whose
// transport passed on the params as the agent sent them (the endpoint and
// stdio mode do so for the requests they leave to the SDK) reaches the
// server with those bytes, the routed name aside: members the SDK's types
// do not know stay, in their order, rather than the SDK's decoding of
// them encoded again. The fixture says what it read (ParamsSeenTool).
func TestToolCallKeepsTheAgentsParams(t *testing.T) {
	g := New(Options{Logger: zerolog.Nop()})
	argv, env := fixture.Command(fixture.Options{Name: "a", Verbatim: true})
	envs := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		envs[k] = v
	}
	s := supervisor.New(catalog.ServerSpec{Name: "a", Kind: catalog.KindLocal, Command: argv, Env: envs}, supervisor.Options{
		Logger: zerolog.Nop(), NewClient: g.NewClient, Intercept: g.Intercept, ServeRequest: g.ServeRequest,
		OnReady: func(ctx context.Context, s *supervisor.Server, cs *mcp.ClientSession, raw supervisor.RoundTrip) error {
			return g.Sync(ctx, s.Name(), cs, raw)
		},
	})
	g.Add(s)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	if err := s.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
	g.Open()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := g.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	agent, err := mcp.NewClient(&mcp.Implementation{Name: "agent"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()

	const sent = `{"extra":{"z":1,"a":2},"name":"echo","arguments":{"text":"hi"}}`
	req := &mcp.CallToolRequest{Session: ss, Params: &mcp.CallToolParamsRaw{Name: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)},
		Extra: &mcp.RequestExtra{Header: WithRawParams(nil, json.RawMessage(sent))}}
	if _, err := g.callTool(ctx, req); err != nil {
		t.Fatal(err)
	}
	res, err := agent.CallTool(ctx, &mcp.CallToolParams{Name: fixture.ParamsSeenTool, Arguments: map[string]any{"method": "tools/call"}})
	if err != nil || len(res.Content) == 0 {
		t.Fatalf("%s: %+v %v", fixture.ParamsSeenTool, res, err)
	}
	var seen []json.RawMessage
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &seen); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(seen, func(p json.RawMessage) bool { return string(p) == sent }) {
		t.Errorf("the agent sent\n%s\nthe server read\n%s", sent, seen)
	}
}
