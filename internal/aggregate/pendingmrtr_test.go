package aggregate_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestPendingPromptAndRead: a 2025-era server (a fixture over stdio) that
// samples its client while it serves a prompts/get or a resources/read of
// a 2026-era agent gets the agent's answer: each runs as a pending call
// (the agent is answered with an InputRequiredResult holding the server's
// request, and its retry, with the answer and the gateway's requestState,
// resumes the server's request and gets the prompt or the contents). The
// agent is the Go SDK's client, which speaks 2026-07-28 to the SDK's
// stateless handler and runs the round trip itself: no session the server
// could reach it on otherwise. Its params reach the gateway decoded (no
// endpoint in front to pass them on as sent).
func TestPendingPromptAndRead(t *testing.T) {
	_, stateless := startStatelessGateway(t, map[string]fixture.Options{"a": {Name: "a", Tools: []string{"echo"}, SamplingExtras: true}})
	ctx := ctxT(t)
	var sampled atomic.Int32
	c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			sampled.Add(1)
			return &mcp.CreateMessageResult{Model: "m1", Role: "assistant", Content: &mcp.TextContent{Text: "hello"}}, nil
		},
	})
	agent, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: stateless}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	if v := agent.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("the agent's session is of %s, want 2026-07-28", v)
	}

	p, err := agent.GetPrompt(ctx, &mcp.GetPromptParams{Name: fixture.SamplingPrompt})
	if err != nil {
		t.Fatalf("prompts/get: %v", err)
	}
	if len(p.Messages) != 1 {
		t.Fatalf("prompts/get: %d messages, want 1", len(p.Messages))
	}
	if tc, _ := p.Messages[0].Content.(*mcp.TextContent); tc == nil || tc.Text != "model said: hello" {
		t.Errorf("prompts/get: %+v, want the server's prompt with the agent's sampling answer", p.Messages[0].Content)
	}
	if n := sampled.Load(); n != 1 {
		t.Errorf("after prompts/get the agent was asked %d times, want once", n)
	}

	r, err := agent.ReadResource(ctx, &mcp.ReadResourceParams{URI: fixture.SamplingResource})
	if err != nil {
		t.Fatalf("resources/read: %v", err)
	}
	if len(r.Contents) != 1 || r.Contents[0].Text != "model said: hello" {
		t.Errorf("resources/read: %+v, want the server's contents with the agent's sampling answer", r.Contents)
	}
	if n := sampled.Load(); n != 2 {
		t.Errorf("after resources/read the agent was asked %d times, want twice", n)
	}
}
