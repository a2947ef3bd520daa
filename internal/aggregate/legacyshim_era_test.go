package aggregate

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestNoShimFor2026Agents: an agent of the 2026 era (protocol 2026-07-28
// exactly, the first whose clients answer input requests themselves) gets
// the server's InputRequiredResult as the server sent it, to answer and
// retry itself; the gateway asks it nothing.
func TestNoShimFor2026Agents(t *testing.T) {
	up := &inputServer{answer: func(int, json.RawMessage) json.RawMessage { return inputRequest("s", `"st"`) }}
	agent := shimGatewayVersion(t, up, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}, protocol2026)
	if v := agent.InitializeResult().ProtocolVersion; v != protocol2026 {
		t.Fatalf("the agent's session is of %s, want %s", v, protocol2026)
	}
	res, err := agent.CallTool(ctx30(t), &mcp.CallToolParams{Name: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.InputRequests) != 1 || res.IsError {
		t.Errorf("a 2026 agent's call: %+v, want the server's input request", res)
	}
	if n := len(up.calls()); n != 1 {
		t.Errorf("the server was called %d times, want once (no retry of the gateway's)", n)
	}
}
