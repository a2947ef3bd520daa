package aggregate

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestElicitationModes: which agents a server's elicitation request may
// reach, by its mode. A request without mode is a form unless it has a
// url; a form reaches an agent that declared forms, or one from before
// modes (elicitation: {}), not one that declared URL mode only; a URL
// request reaches only an agent that declared URL mode.
func TestElicitationModes(t *testing.T) {
	agents := map[string]*mcp.ClientCapabilities{
		"none":      {},
		"pre-modes": {Elicitation: &mcp.ElicitationCapabilities{}},
		"form":      {Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		"url":       {Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		"both": {Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{},
			URL: &mcp.URLElicitationCapabilities{}}},
	}
	form := map[string]bool{"pre-modes": true, "form": true, "both": true}
	url := map[string]bool{"url": true, "both": true}
	for _, c := range []struct {
		params  string
		feature string
		reaches map[string]bool
	}{
		{`{"message":"name?","requestedSchema":{"type":"object"}}`, "elicitation", form},
		{`{"mode":"form","message":"name?"}`, "elicitation", form},
		{`{"mode":"url","url":"https://example.com/a","elicitationId":"e"}`, "URL elicitation", url},
		{`{"message":"sign in","url":"https://example.com/a"}`, "URL elicitation", url},
		{`{"mode":"form","url":"https://example.com/a"}`, "elicitation", form},
	} {
		feature, supports := inputFeature("elicitation/create", json.RawMessage(c.params))
		if feature != c.feature {
			t.Errorf("%s: feature %q, want %q", c.params, feature, c.feature)
		}
		for name, caps := range agents {
			if got := supports(caps); got != c.reaches[name] {
				t.Errorf("%s to an agent declaring %s: supported %v, want %v", c.params, name, got, c.reaches[name])
			}
		}
	}
}
