package aggregate_test

import (
	"encoding/json"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
)

// rawInitUpstream is a memUpstream that keeps an initialize result as
// sent (aggregate.InitializeRawer), as the supervisor's upstreams do.
type rawInitUpstream struct {
	memUpstream
	raw json.RawMessage
}

func (u *rawInitUpstream) InitializeResultRaw() json.RawMessage { return u.raw }

// TestCapabilitiesWithoutRawInitialize: the capabilities an agent is told
// come from the SDK's decoding of a server's initialize result when its
// upstream keeps none as sent ("p", whose prompts the agent is told of),
// or keeps one without a capabilities member ("q": its decoded ones too,
// and the agent's initialize does not fail on it). Neither has tools: the
// agent is told of tools with listChanged all the same.
func TestCapabilitiesWithoutRawInitialize(t *testing.T) {
	g := aggregate.New(aggregate.Options{})
	p := &memUpstream{name: "p"}
	q := &rawInitUpstream{memUpstream: memUpstream{name: "q"},
		raw: json.RawMessage(`{"protocolVersion":"2025-11-25","serverInfo":{"name":"q","version":"1"}}`)}
	g.Add(p)
	g.Add(q)
	for _, u := range []*memUpstream{p, &q.memUpstream} {
		ss, cs := start(t, g, u)
		t.Cleanup(func() {
			cs.Close()
			ss.Close()
		})
	}
	caps := capabilitiesOf(t, initializeResult(t, serveGateway(t, g)))
	var m map[string]json.RawMessage
	if err := json.Unmarshal(caps, &m); err != nil {
		t.Fatalf("capabilities %s: %v", caps, err)
	}
	if string(m["prompts"]) != `{"listChanged":true}` {
		t.Errorf("capabilities %s, want p's prompts (listChanged)", caps)
	}
	if string(m["tools"]) != `{"listChanged":true}` {
		t.Errorf("capabilities %s, want tools with listChanged, which the gateway adds when no server has tools", caps)
	}
	if _, ok := m["resources"]; ok {
		t.Errorf("capabilities %s, want no resources (neither server has any)", caps)
	}
}
