package aggregate_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
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

// TestPendingSecondRoundUntyped: a server whose tool asks in two rounds of
// input requests, on the 2025-era session the gateway holds (a Go SDK
// server: its shim answers the first round itself, through the gateway's
// pending call, and sends the second as a plain result, without
// resultType), gives a 2026-era agent that second round typed
// input_required, with the server's own requestState; the agent's retry
// with it reaches the server, which answers with both answers. The agent
// is plain HTTP: the Go SDK's client would take the untyped round for one
// too (it looks at inputRequests only), other clients go by resultType.
// Its requests reach the gateway with their params as sent, as the
// endpoint passes them, and decoded, as the SDK's stateless handler with
// nothing in front passes them: the retry's state and answers must reach
// the server either way.
func TestPendingSecondRoundUntyped(t *testing.T) {
	_, _, g := startGatewayG(t, map[string]fixture.Options{"a": {Name: "a", Tools: []string{"echo"}, SamplingExtras: true}})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.Server() }, &mcp.StreamableHTTPOptions{Stateless: true})
	for name, h := range map[string]http.Handler{"params as sent": withRawParams(sdk), "params decoded": sdk} {
		t.Run(name, func(t *testing.T) {
			sl := httptest.NewServer(h)
			t.Cleanup(sl.Close)
			// The tool and the prompt of the same rounds.
			for _, m := range []struct{ method, name string }{
				{"tools/call", fixture.SamplingRoundsTool},
				{"prompts/get", fixture.SamplingRoundsPrompt},
			} {
				t.Run(m.method, func(t *testing.T) { secondRoundUntyped(t, sl.URL, m.method, m.name) })
			}
		})
	}
}

// secondRoundUntyped is TestPendingSecondRoundUntyped against the
// stateless handler at url, for the tool or prompt name of method.
func secondRoundUntyped(t *testing.T, url, method, name string) {
	type round struct {
		ResultType    string `json:"resultType"`
		RequestState  string `json:"requestState"`
		InputRequests map[string]struct {
			Method string `json:"method"`
		} `json:"inputRequests"`
		Content []struct { // a tool's
			Text string `json:"text"`
		} `json:"content"`
		Messages []struct { // a prompt's
			Content struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	}
	call := func(extra string) (r round) {
		t.Helper()
		meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
			`"io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"io.modelcontextprotocol/clientInfo":{"name":"agent","version":"1"}}`
		body := post2026(t, url, method, name, `{"name":"`+name+`",`+meta+extra+`}`)
		if res := resultIn(body); res == nil || json.Unmarshal(res, &r) != nil {
			t.Fatalf("%s: no result in %s", method, body)
		}
		return r
	}
	text := func(r round) []string {
		var out []string
		for _, c := range r.Content {
			out = append(out, c.Text)
		}
		for _, m := range r.Messages {
			out = append(out, m.Content.Text)
		}
		return out
	}
	answer := func(key, text string) string {
		return `"` + key + `":{"role":"assistant","model":"m1","content":{"type":"text","text":"` + text + `"}}`
	}

	first := call("")
	if first.ResultType != "input_required" || !strings.HasPrefix(first.RequestState, "gw1.") || len(first.InputRequests) != 1 {
		t.Fatalf("first answer: %+v, want the gateway's InputRequiredResult with the server's one request", first)
	}
	var asked string
	for k, r := range first.InputRequests {
		if asked = k; r.Method != "sampling/createMessage" {
			t.Fatalf("first round: %s %s, want sampling/createMessage", k, r.Method)
		}
	}
	second := call(`,"inputResponses":{` + answer(asked, "answer to first") + `},"requestState":"` + first.RequestState + `"`)
	if second.ResultType != "input_required" || second.RequestState != "round2:answer to first" || len(second.InputRequests) != 1 {
		t.Fatalf("second answer: %+v, want the server's second round typed input_required with its own state", second)
	}
	if _, ok := second.InputRequests["second"]; !ok {
		t.Fatalf("second round: %+v, want the server's request \"second\"", second.InputRequests)
	}
	last := call(`,"inputResponses":{` + answer("second", "answer to second") + `},"requestState":"` + second.RequestState + `"`)
	if want := "first: answer to first; second: answer to second"; last.ResultType != "complete" || !slices.Equal(text(last), []string{want}) {
		t.Errorf("last answer: %+v, want the result %q", last, want)
	}
}

// resultIn returns the result of the one JSON-RPC response in body (plain
// JSON or an SSE stream), or nil.
func resultIn(body string) json.RawMessage {
	msgs := []string{body}
	if !strings.HasPrefix(strings.TrimSpace(body), "{") {
		msgs = nil
		for _, line := range strings.Split(body, "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				msgs = append(msgs, data)
			}
		}
	}
	for _, m := range msgs {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(m), &msg) == nil && len(msg.ID) > 0 && msg.Result != nil {
			return msg.Result
		}
	}
	return nil
}
