package aggregate

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRawEligibleRoots: a session whose client declared roots may be asked
// for them during a call (a server's roots/list), so its calls go outside
// the SDK only where the agent can be reached (hasStream); a client that
// declared no roots needs no stream.
func TestRawEligibleRoots(t *testing.T) {
	for _, c := range []struct {
		name  string
		caps  *mcp.ClientCapabilities
		roots bool
	}{
		{"roots", &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{ListChanged: true}}, true},
		{"none", &mcp.ClientCapabilities{}, false},
	} {
		g, ss, _ := memGatewayOf(t, Options{}, echoOnly(), json.RawMessage(`{}`), &mcp.ClientOptions{Capabilities: c.caps})
		if got := ss.InitializeParams().Capabilities.RootsV2 != nil; got != c.roots {
			t.Fatalf("%s: the client declared roots: %v, want %v", c.name, got, c.roots)
		}
		if !g.RawEligible(ss, true, false) {
			t.Errorf("%s: not eligible with a stream the agent can be reached on", c.name)
		}
		if got := g.RawEligible(ss, false, false); got == c.roots {
			t.Errorf("%s: eligible without a stream = %v, want %v", c.name, got, !c.roots)
		}
	}
}
