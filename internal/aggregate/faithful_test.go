package aggregate_test

import (
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestInstructionsReachTheAgent: a server's instructions tell the model how
// to use its tools. With one server that has them, the agent gets them as
// the server wrote them; with several, each under its server's name.
func TestInstructionsReachTheAgent(t *testing.T) {
	const text = "Call echo first.\nThen anything else."
	url, _ := startGateway(t, map[string]fixture.Options{"a": {Instructions: text}, "b": {}})
	if got := connect(t, url, nil).InitializeResult().Instructions; got != text {
		t.Fatalf("instructions = %q, want the server's verbatim %q", got, text)
	}
	url, _ = startGateway(t, map[string]fixture.Options{"a": {Instructions: "Use A."}, "b": {Instructions: "Use B."}})
	got := connect(t, url, nil).InitializeResult().Instructions
	want := "## Server \"a\"\n\nUse A.\n\n## Server \"b\"\n\nUse B."
	if got != want {
		t.Fatalf("instructions = %q, want %q", got, want)
	}
}
