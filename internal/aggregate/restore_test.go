package aggregate_test

import (
	"context"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
)

// levelRecorder is a server's log of the logging/setLevel requests it got.
type levelRecorder struct {
	mu     sync.Mutex
	levels []mcp.LoggingLevel
}

func (r *levelRecorder) got() []mcp.LoggingLevel {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]mcp.LoggingLevel(nil), r.levels...)
}

// startRecording connects a new instance of u's server, which declares
// logging or not and records the setLevel requests it gets, and syncs
// it, as a supervisor's (re)start does.
func startRecording(t *testing.T, g *aggregate.Gateway, u *memUpstream, logging bool, rec *levelRecorder) {
	t.Helper()
	caps := &mcp.ServerCapabilities{}
	if logging {
		caps.Logging = &mcp.LoggingCapabilities{}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: u.name, Version: "1"}, &mcp.ServerOptions{Capabilities: caps})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && method == "logging/setLevel" {
				rec.mu.Lock()
				rec.levels = append(rec.levels, p.Level)
				rec.mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := g.NewClient(u.name).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Close()
	})
	u.cs = cs
	if err := g.Sync(context.Background(), u.name, cs, nil); err != nil {
		t.Fatal(err)
	}
}

// TestLogLevelRestoredOnRestart: the level an agent set reaches a
// restarted server that logs, as it reached the first instance; a server
// that declares no logging is never sent one.
func TestLogLevelRestoredOnRestart(t *testing.T) {
	g := aggregate.New(aggregate.Options{Logger: zerolog.Nop()})
	logs, quiet := &memUpstream{name: "logs"}, &memUpstream{name: "quiet"}
	g.Add(logs)
	g.Add(quiet)
	first, quietRec := &levelRecorder{}, &levelRecorder{}
	startRecording(t, g, logs, true, first)
	startRecording(t, g, quiet, false, quietRec)
	g.Open()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := g.Server().Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	agent, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	if err := agent.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	// A server slow to take the level gets it in the background.
	waitFor(t, "the first instance to get the level", func() bool { return len(first.got()) > 0 })
	if got := first.got(); len(got) != 1 || got[0] != "debug" {
		t.Fatalf("the first instance got levels %v, want [debug]", got)
	}
	again, quietAgain := &levelRecorder{}, &levelRecorder{}
	startRecording(t, g, logs, true, again) // Sync returns once restored
	startRecording(t, g, quiet, false, quietAgain)
	if got := again.got(); len(got) != 1 || got[0] != "debug" {
		t.Errorf("the restarted instance got levels %v, want [debug]", got)
	}
	if a, b := quietRec.got(), quietAgain.got(); len(a)+len(b) != 0 {
		t.Errorf("a server without logging got levels %v, then %v after its restart", a, b)
	}
}
