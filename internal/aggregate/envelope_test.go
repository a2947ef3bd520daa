package aggregate

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestEnvelopeCacheBound: an agent's envelope is decoded once and then
// found in the cache (the same InitializeParams), for up to maxAgents
// agents; the one after them empties it, so that any number of agents
// holds at most maxAgents entries.
func TestEnvelopeCacheBound(t *testing.T) {
	var sl statelessShared
	meta := func(i int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"io.modelcontextprotocol/protocolVersion":%q,`+
			`"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"agent %d","version":"1"}}`,
			statelessRevision, i))
	}
	read := func(i int) *mcp.InitializeParams {
		t.Helper()
		ip, ok := sl.envelopeOf(meta(i), statelessRevision)
		if !ok {
			t.Fatalf("envelopeOf(agent %d) declined", i)
		}
		return ip
	}
	first := make([]*mcp.InitializeParams, maxAgents)
	for i := range maxAgents {
		first[i] = read(i)
	}
	for i := range maxAgents {
		if read(i) != first[i] {
			t.Fatalf("agent %d of %d was decoded again: its envelope was not cached", i, maxAgents)
		}
	}
	if n := len(sl.agents); n != maxAgents {
		t.Fatalf("%d agents cached, want %d", n, maxAgents)
	}
	read(maxAgents) // one more than the cache holds
	if n := len(sl.agents); n != 1 {
		t.Errorf("after agent %d, %d agents cached, want 1 (the cache emptied when full)", maxAgents+1, n)
	}
}

// TestEnvelopeDeclines: envelopes that are not the plain case are the SDK
// path's to answer (its errors, its defaults): no _meta, _meta not an
// object, another version, a log level, no capabilities, capabilities or
// client info that are not objects.
func TestEnvelopeDeclines(t *testing.T) {
	v := `"io.modelcontextprotocol/protocolVersion":"` + statelessRevision + `"`
	for _, meta := range []string{
		``,
		`[]`,
		`{}`,
		`{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}`,
		`{` + v + `,"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"info"}`,
		`{` + v + `}`,
		`{` + v + `,"io.modelcontextprotocol/clientCapabilities":[]}`,
		`{` + v + `,"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":"agent"}`,
		`{` + v + `,"io.modelcontextprotocol/clientCapabilities":{}} trailing`,
	} {
		var sl statelessShared
		if ip, ok := sl.envelopeOf(json.RawMessage(meta), statelessRevision); ok {
			t.Errorf("envelopeOf(%s) = %+v, want declined", meta, ip)
		}
	}
	var sl statelessShared
	ip, ok := sl.envelopeOf(json.RawMessage(`{`+v+`,"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},`+
		`"io.modelcontextprotocol/clientInfo":{"name":"agent","version":"2"}}`), statelessRevision)
	if !ok || ip.ProtocolVersion != statelessRevision || ip.Capabilities.RootsV2 == nil || !ip.Capabilities.RootsV2.ListChanged ||
		ip.ClientInfo == nil || ip.ClientInfo.Name != "agent" {
		t.Errorf("envelopeOf of the plain case = %+v, %v", ip, ok)
	}
}

// TestServerInfoMeta: the _meta a 2026-era result without one gets is the
// gateway's serverInfo alone, encoded once when the gateway is made.
func TestServerInfoMeta(t *testing.T) {
	got := serverInfoMeta(&mcp.Implementation{Name: "mcp-gateway", Version: "1.2.3"})
	if want := `{"io.modelcontextprotocol/serverInfo":{"name":"mcp-gateway","version":"1.2.3"}}`; string(got) != want {
		t.Errorf("serverInfoMeta = %s, want %s", got, want)
	}
	g := New(Options{Version: "1.2.3"})
	if string(g.sl.infoMeta) != string(got) {
		t.Errorf("the gateway's infoMeta = %s, want %s", g.sl.infoMeta, got)
	}
}
