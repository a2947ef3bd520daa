package aggregate_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// severalCallers is what the gateway logs when a server's request cannot
// be routed exactly: calls of several agents are in flight to the server.
const severalCallers = "several sessions call this server; routing to the latest caller"

// sendStateless sends a 2026-era agent's tools/call of tool on the raw
// path, as the endpoint does for a request without a session, its agent
// declaring caps (a JSON object), and returns the answer.
func sendStateless(t *testing.T, g *aggregate.Gateway, tool, args, caps string) string {
	t.Helper()
	params := `{"name":"` + tool + `","arguments":` + args + `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":` + caps + `}}`
	s, ok := g.RouteStateless(json.RawMessage(params), "2026-07-28", tool, false)
	if !ok {
		t.Fatalf("RouteStateless declined %s", params)
	}
	res, err := g.SendStateless(ctxT(t), &s, nil)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return string(res)
}

// TestServerRequestGoesToTheLatestCaller: a 2025 server's request during
// calls of several agents goes to the agent whose call started last, and
// the gateway logs that the routing is a guess; with one agent's call in
// flight it goes there without the log line. The agents are 2026-era
// ones without a session (each its own agent): the first one's elicit
// call waits on the server for the agent's answer (the gateway answered it
// with an InputRequiredResult), and the second one's sample call then
// asks for sampling, which only the second declared: it must reach it, as
// an InputRequiredResult of its own, not go to the first (which would
// refuse it).
func TestServerRequestGoesToTheLatestCaller(t *testing.T) {
	url, log, g := startGatewayG(t, map[string]fixture.Options{"a": {}})

	// One 2025 agent's call: exact, nothing logged.
	agent := connect(t, url, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "mine"}}, nil
		},
	})
	res, err := agent.CallTool(ctxT(t), &mcp.CallToolParams{Name: "sample", Arguments: map[string]any{"prompt": "p"}})
	if err != nil || textOf(t, res) != "model said: mine" {
		t.Fatalf("sample of one agent: %+v %v", res, err)
	}
	if strings.Contains(log.String(), severalCallers) {
		t.Errorf("one agent's call was routed as a guess:\n%s", log)
	}

	first := sendStateless(t, g, "elicit", `{"message":"proceed?"}`, `{"elicitation":{}}`)
	if !strings.Contains(first, `"input_required"`) || !strings.Contains(first, "elicitation/create") {
		t.Fatalf("the first agent's elicit call: %s, want an InputRequiredResult asking elicitation/create", first)
	}
	// The elicit call is still in flight: the server waits for the answer.
	second := sendStateless(t, g, "sample", `{"prompt":"p"}`, `{"sampling":{}}`)
	if !strings.Contains(second, `"input_required"`) || !strings.Contains(second, "sampling/createMessage") {
		t.Errorf("the second agent's sample call: %s, want an InputRequiredResult asking sampling/createMessage", second)
	}
	if !strings.Contains(log.String(), severalCallers) {
		t.Errorf("two agents' calls in flight, and the routing was not logged as a guess:\n%s", log)
	}
}
