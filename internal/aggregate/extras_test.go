package aggregate_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
)

// memUpstream is an upstream over an in-memory transport.
type memUpstream struct {
	name string
	cs   *mcp.ClientSession
}

func (u *memUpstream) Name() string { return u.name }
func (u *memUpstream) Do(ctx context.Context, fn func(*mcp.ClientSession) error) error {
	return fn(u.cs)
}

// upstreamServer has one prompt, "greet", whose text names the server.
func upstreamServer(name string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	s.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: name}}}}, nil
	})
	return s
}

// start connects a new instance of u's server and syncs it, as a
// supervisor's (re)start does.
func start(t *testing.T, g *aggregate.Gateway, u *memUpstream) (*mcp.ServerSession, *mcp.ClientSession) {
	ct, st := mcp.NewInMemoryTransports()
	ss, err := upstreamServer(u.name).Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := g.NewClient(u.name).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	u.cs = cs
	if err := g.Sync(context.Background(), u.name, cs, nil); err != nil {
		t.Fatal(err)
	}
	return ss, cs
}

// TestFirstListingSurvivesARestart: server "a" (first by name) is ready,
// then dies before the gateway lists its prompts, and restarts. The first
// naming waits for its listing: a keeps "greet".
func TestFirstListingSurvivesARestart(t *testing.T) {
	log := &logs{}
	g := aggregate.New(aggregate.Options{Logger: zerolog.New(log)})
	a, b := &memUpstream{name: "a"}, &memUpstream{name: "b"}
	g.Add(a)
	g.Add(b)
	ssA, csA := start(t, g, a)
	start(t, g, b)
	// a dies after ready (supervisor would restart it after a backoff). As
	// when a process dies, both ends go: the client first, since closing the
	// server end waits for its handlers, and one may be writing an answer
	// into the in-memory pipe that only the client reads.
	csA.Close()
	ssA.Close()
	g.Open()
	// The supervisor restarts a after a backoff; by then its listing has
	// failed, which the gateway logs.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(log.String(), `"server":"a","message":"listing prompts and resources failed; waiting for the server's next start"`) {
		if time.Now().After(deadline) {
			t.Fatalf("a's failed listing was never logged:\n%s", log)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// a restarts.
	start(t, g, a)

	ct, st := mcp.NewInMemoryTransports()
	if _, err := g.Server().Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	agent, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := agent.ListPrompts(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range res.Prompts {
		names = append(names, p.Name)
	}
	got, err := agent.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "greet"})
	owner := ""
	if err == nil {
		owner = got.Messages[0].Content.(*mcp.TextContent).Text
	}
	if strings.Join(names, ",") != "greet,b_greet" || owner != "a" {
		t.Errorf("first server by name lost the plain name: prompts %v, greet -> %q", names, owner)
	}
}
