package catalog

import (
	"encoding/json"
	"fmt"
)

// ProtocolKey is the member of a server's entry in the mcp config that pins
// the protocol era the gateway speaks to it. The gateway speaks 2026-07-28
// to every server that answers server/discover with it; a server of both
// eras whose tools send sampling or elicitation requests themselves (which
// the 2026 era forbids) keeps working for 2025-era agents only when spoken
// to in the 2025 era, and this is how its operator says so. Like ToolsKey,
// its '-' keeps it apart from every catalog property and entry field.
const ProtocolKey = "x-protocol"

// Protocol2025 is the one value ProtocolKey takes: the 2025 era
// (initialize, no server/discover probe).
const Protocol2025 = "2025-11-25"

// takeProtocol reads and removes ProtocolKey from a server's fields. ""
// when absent: the era is learned from the server.
func takeProtocol(server string, fields map[string]json.RawMessage) (string, error) {
	raw, ok := fields[ProtocolKey]
	if !ok {
		return "", nil
	}
	delete(fields, ProtocolKey)
	var v string
	if t := jsonType(raw); t != "string" || json.Unmarshal(raw, &v) != nil || v != Protocol2025 {
		return "", &ConfigError{Server: server, Field: ProtocolKey,
			Err: fmt.Errorf("must be %q (speak the 2025 era to this server), got %s", Protocol2025, raw)}
	}
	return v, nil
}
