package aggregate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// inputServer stands for a 2026-era server that asks for input: its tools
// are listed by an in-process SDK server, and each raw call is answered by
// answer, given the call's number (from 1) and its params as received.
// Every server of that era would do the same; none here lets a test choose
// how many rounds it asks.
type inputServer struct {
	memUpstream
	answer func(n int, params json.RawMessage) json.RawMessage
	mu     sync.Mutex
	got    []json.RawMessage
}

func (u *inputServer) CallRaw(_ context.Context, _ string, params json.RawMessage) (json.RawMessage, error) {
	u.mu.Lock()
	u.got = append(u.got, params)
	n := len(u.got)
	u.mu.Unlock()
	return u.answer(n, params), nil
}

func (u *inputServer) calls() []json.RawMessage {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]json.RawMessage(nil), u.got...)
}

// shimGateway is a gateway over up (tool echo) and a 2025-era agent of it
// with copts, connected over in-memory transports.
func shimGateway(t *testing.T, up *inputServer, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return shimGatewayVersion(t, up, copts, "2025-11-25")
}

// shimGatewayVersion is shimGateway with an agent of protocol version.
func shimGatewayVersion(t *testing.T, up *inputServer, copts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, ct := mcp.NewInMemoryTransports()
	if _, err := echoOnly().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "gateway"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	up.name, up.cs = "fx", cs
	g := New(Options{})
	g.Add(up)
	if err := g.Sync(ctx, "fx", cs, nil); err != nil {
		t.Fatal(err)
	}
	g.Open()
	st, ct = mcp.NewInMemoryTransports()
	if _, err := g.Server().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	agent, err := mcp.NewClient(&mcp.Implementation{Name: "agent"}, copts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = agent.Close() })
	return agent
}

// inputRequest is an InputRequiredResult asking one sampling request
// under key, with state (none when ""; a requestState is an opaque
// string, here written with an escape that a decoder would not keep).
func inputRequest(key, state string) json.RawMessage {
	s := `{"resultType":"input_required","inputRequests":{"` + key + `":{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}}`
	if state != "" {
		s += `,"requestState":` + state
	}
	return json.RawMessage(s + `}`)
}

func samplingAgent(count *int, mu *sync.Mutex) *mcp.ClientOptions {
	return &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			mu.Lock()
			*count++
			mu.Unlock()
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "sampled"}}, nil
		},
	}
}

// TestLegacyShimRounds: for a 2025-era agent, the gateway answers a
// server's input requests round after round, each retry carrying that
// round's answers and requestState as the server wrote them, for up to
// maxInputRounds retries: a server that asks maxInputRounds times then
// answers gets its answer to the agent; one that asks once more gets the
// call ended with an error result saying so.
func TestLegacyShimRounds(t *testing.T) {
	done := json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`)
	for _, c := range []struct {
		name   string
		asks   int // rounds the server asks before it answers
		failed bool
	}{
		{"two rounds", 2, false},
		{"the most rounds", maxInputRounds, false},
		{"one round too many", maxInputRounds + 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			asked := 0
			up := &inputServer{answer: func(n int, _ json.RawMessage) json.RawMessage {
				if n <= c.asks {
					return inputRequest(fmt.Sprintf("s%d", n), fmt.Sprintf(`"round\u0020%d"`, n))
				}
				return done
			}}
			agent := shimGateway(t, up, samplingAgent(&asked, &mu))
			res, err := agent.CallTool(ctx30(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"a": 1}})
			if err != nil {
				t.Fatal(err)
			}
			calls := up.calls()
			if c.failed {
				if !res.IsError || !strings.Contains(textOf(res), fmt.Sprintf("more than %d times", maxInputRounds)) {
					t.Errorf("a server asking %d times: %+v, want an error result saying it asked too often", c.asks, res)
				}
				if len(calls) != maxInputRounds+1 {
					t.Errorf("the server was called %d times, want %d", len(calls), maxInputRounds+1)
				}
				return
			}
			if res.IsError || textOf(res) != "done" {
				t.Errorf("a server asking %d times: %+v, want its final answer", c.asks, res)
			}
			if len(calls) != c.asks+1 || asked != c.asks {
				t.Errorf("the server was called %d times and the agent asked %d, want %d and %d", len(calls), asked, c.asks+1, c.asks)
			}
			for i, p := range calls[1:] {
				key := fmt.Sprintf(`"s%d":`, i+1)
				state := fmt.Sprintf(`"requestState":"round\u0020%d"`, i+1)
				if !strings.Contains(string(p), `"inputResponses":{`+key) || !strings.Contains(string(p), state) || !strings.Contains(string(p), `"arguments":{"a":1}`) {
					t.Errorf("retry %d: %s, want the call's arguments, the answer to %s and %s", i+1, p, key, state)
				}
			}
		})
	}
}

// TestLegacyShimRetryWithoutInput: a round without input requests (a
// server shedding load) is retried with the requestState alone, and a
// round without requestState is retried without one: the retry carries
// only what the server's round had.
func TestLegacyShimRetryWithoutInput(t *testing.T) {
	var mu sync.Mutex
	asked := 0
	up := &inputServer{answer: func(n int, _ json.RawMessage) json.RawMessage {
		switch n {
		case 1:
			return json.RawMessage(`{"resultType":"input_required","requestState":"later"}`)
		case 2:
			return inputRequest("s", "")
		}
		return json.RawMessage(`{"content":[]}`)
	}}
	agent := shimGateway(t, up, samplingAgent(&asked, &mu))
	if res, err := agent.CallTool(ctx30(t), &mcp.CallToolParams{Name: "echo"}); err != nil || res.IsError {
		t.Fatalf("%+v %v", res, err)
	}
	calls := up.calls()
	if len(calls) != 3 {
		t.Fatalf("the server was called %d times, want 3: %s", len(calls), calls)
	}
	if p := string(calls[1]); strings.Contains(p, "inputResponses") || !strings.Contains(p, `"requestState":"later"`) {
		t.Errorf("retry of a round without input requests: %s, want the state alone", p)
	}
	if p := string(calls[2]); strings.Contains(p, "requestState") || !strings.Contains(p, `"inputResponses":{"s":`) {
		t.Errorf("retry of a round without requestState: %s, want the answers alone", p)
	}
}

func textOf(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// TestLegacyShimURLElicitationID: a 2026 server's URL elicitation, which
// carries no elicitationId, reaches a 2025-era agent with one (that era
// requires it of URL mode); a form elicitation gets none.
func TestLegacyShimURLElicitationID(t *testing.T) {
	var mu sync.Mutex
	ids := map[string]string{}
	up := &inputServer{answer: func(n int, _ json.RawMessage) json.RawMessage {
		if n == 1 {
			return json.RawMessage(`{"resultType":"input_required","inputRequests":{` +
				`"u":{"method":"elicitation/create","params":{"mode":"url","message":"sign in","url":"https://example.com/a"}},` +
				`"f":{"method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object","properties":{}}}}}}`)
		}
		return json.RawMessage(`{"content":[]}`)
	}}
	agent := shimGateway(t, up, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
			Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			ids[r.Params.Message] = r.Params.ElicitationID
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	if res, err := agent.CallTool(ctx30(t), &mcp.CallToolParams{Name: "echo"}); err != nil || res.IsError {
		t.Fatalf("%+v %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if id, ok := ids["sign in"]; !ok || id == "" {
		t.Errorf("the URL elicitation reached the agent without an elicitationId (asked: %v)", ids)
	}
	if id, ok := ids["name?"]; !ok || id != "" {
		t.Errorf("the form elicitation reached the agent with elicitationId %q (asked: %v), want none", id, ids)
	}
}

// ctx30 is a context for one call, which ends the test's wait should the
// call never end.
func ctx30(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
