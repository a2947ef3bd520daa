package aggregate_test

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestRootsOfTheCallingSession: a server asking roots/list during a call
// gets the roots of the session that made the call, among several
// connected sessions (outside a call, several sessions give no roots);
// and a session that declared no roots capability is not asked: the
// server gets an empty list, though that agent's client holds a root.
func TestRootsOfTheCallingSession(t *testing.T) {
	url, _ := startGateway(t, map[string]fixture.Options{"a": {}})
	ctx := ctxT(t)
	withRoot := func(uri string, caps *mcp.ClientCapabilities) *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{Capabilities: caps})
		c.AddRoots(&mcp.Root{URI: uri})
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	roots := &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{ListChanged: true}}
	first, second := withRoot("file:///first", roots), withRoot("file:///second", roots)
	rootless := withRoot("file:///undeclared", &mcp.ClientCapabilities{})
	ask := func(cs *mcp.ClientSession) string {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "roots"})
		if err != nil || res.IsError {
			t.Fatalf("roots: %+v %v", res, err)
		}
		return textOf(t, res)
	}
	for _, s := range []struct {
		cs   *mcp.ClientSession
		want string
	}{{first, "file:///first"}, {second, "file:///second"}, {first, "file:///first"}} {
		waitFor(t, "the calling session's roots ("+s.want+")", func() bool { return ask(s.cs) == s.want })
	}
	if got := ask(rootless); got != "" {
		t.Errorf("roots during the call of a session without the roots capability: %q, want none", got)
	}
}
