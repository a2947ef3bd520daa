package aggregate

import (
	"encoding/json"
	"testing"
)

// TestClaimedVersion: only the params' own _meta claims a version; the key
// elsewhere (a tool's arguments) claims nothing.
func TestClaimedVersion(t *testing.T) {
	for _, tc := range []struct {
		params  string
		version string
		claimed bool
	}{
		{`{"name":"echo"}`, "", false},
		{`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"echo"}`, "2026-07-28", true},
		{`{"name":"echo","_meta":{"progressToken":1,"io.modelcontextprotocol/protocolVersion":"1900-01-01"}}`, "1900-01-01", true},
		{`{"_meta":{"io.modelcontextprotocol/protocolVersion":20260728}}`, "", true},
		{`{"arguments":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, "", false},
		{`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"`, "", false},
	} {
		v, ok := ClaimedVersion(json.RawMessage(tc.params))
		if v != tc.version || ok != tc.claimed {
			t.Errorf("ClaimedVersion(%s) = %q, %v; want %q, %v", tc.params, v, ok, tc.version, tc.claimed)
		}
	}
	if e := UnsupportedVersion("1900-01-01"); e.Code != -32022 || len(e.Data) == 0 {
		t.Errorf("UnsupportedVersion: %+v", e)
	}
}
