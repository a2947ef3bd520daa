package aggregate

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCapabilities2026: a 2025 agent's capabilities reach a 2026 server as
// it declared them: roots only when it declared roots (the SDK's legacy
// Roots member encodes for every client), the rest as they are.
func TestCapabilities2026(t *testing.T) {
	for _, c := range []struct {
		name string
		caps *mcp.ClientCapabilities
		want string
	}{
		{"none", &mcp.ClientCapabilities{}, `{}`},
		{"roots", &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{ListChanged: true}}, `{"roots":{"listChanged":true}}`},
		{"url elicitation", &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}, `{"elicitation":{"url":{}}}`},
		{"sampling", &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}, `{"sampling":{}}`},
	} {
		if got := capabilities2026(c.caps); canon(t, got) != canon(t, []byte(c.want)) {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
