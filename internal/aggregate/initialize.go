package aggregate

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/rawjson"
)

// The gateway answers initialize as itself (its serverInfo), with the
// capabilities of the servers behind it. The SDK encodes its
// InitializeResult in the type's member order (capabilities, instructions,
// protocolVersion, serverInfo) and the capabilities in theirs; a server
// connected directly sends them in its own order. The result is written
// here instead: in the order the MCP schema lists the members (as the
// TypeScript and Python SDKs' servers send them), with the capabilities as
// the servers sent them.

// relayedCapability reports whether the gateway relays server capability
// k: the others (experimental ones, kinds it does not know) are not
// advertised, since their requests would not reach a server.
func relayedCapability(k string) bool {
	switch k {
	case "tools", "prompts", "resources", "logging", "completions", "tasks":
		return true
	}
	return false
}

// capabilitiesRaw returns the capabilities an agent is told: each one some
// server offers, as the first server (by name) that offers it sent it, in
// the order of the servers' own capabilities objects (with one server: its
// order), with what the gateway adds: tools always (a server may gain
// tools later, and clients ask only for what was advertised), listChanged
// on every list (the gateway announces changes of the merged lists),
// resources' subscribe when any server has it, and the servers' tasks
// capabilities merged.
func (g *Gateway) capabilitiesRaw() json.RawMessage {
	g.mu.RLock()
	var caps []json.RawMessage
	var tasks json.RawMessage
	for _, s := range g.serversLocked() {
		caps = append(caps, serverCapabilities(g.upstreams[s], g.caps[s]))
		if c := g.taskCaps[s]; c != nil {
			tasks = mergeObjects(tasks, c)
		}
	}
	subscribe := false
	for _, c := range g.caps {
		subscribe = subscribe || (c.Resources != nil && c.Resources.Subscribe)
	}
	g.mu.RUnlock()

	var names []string
	values := map[string]json.RawMessage{}
	for _, c := range caps {
		var m map[string]json.RawMessage
		if json.Unmarshal(c, &m) != nil {
			continue
		}
		for _, k := range rawjson.MemberNames(c) {
			v := m[k]
			if _, seen := values[k]; seen || !relayedCapability(k) || bytes.Equal(v, []byte("null")) {
				continue
			}
			names = append(names, k)
			values[k] = v
		}
	}
	if _, ok := values["tools"]; !ok {
		names = append(names, "tools")
		values["tools"] = json.RawMessage(`{}`)
	}
	if tasks != nil {
		values["tasks"] = tasks
	}
	out := json.RawMessage(`{}`)
	for _, k := range names {
		v := values[k]
		switch k {
		case "tools", "prompts", "resources":
			v = setTrue(v, "listChanged")
			if k == "resources" && subscribe {
				v = setTrue(v, "subscribe")
			}
		}
		if o, err := rawjson.SetMember(out, k, v); err == nil {
			out = o
		}
	}
	return out
}

// serverCapabilities returns the capabilities a server sent at initialize,
// as it sent them when its upstream keeps them (InitializeRawer), else as
// the SDK decoded them.
func serverCapabilities(up Upstream, typed *mcp.ServerCapabilities) json.RawMessage {
	if ir, ok := up.(InitializeRawer); ok {
		var r struct {
			Capabilities json.RawMessage `json:"capabilities"`
		}
		if json.Unmarshal(ir.InitializeResultRaw(), &r) == nil && len(r.Capabilities) > 0 && r.Capabilities[0] == '{' {
			return r.Capabilities
		}
	}
	b, err := json.Marshal(typed)
	if err != nil || typed == nil {
		return json.RawMessage(`{}`)
	}
	return b
}

// setTrue returns obj with member key true, every other byte as it was;
// obj itself when it is not an object.
func setTrue(obj json.RawMessage, key string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil || m == nil {
		obj = json.RawMessage(`{}`)
	} else if bytes.Equal(bytes.TrimSpace(m[key]), []byte("true")) {
		return obj
	}
	if out, err := rawjson.SetMember(obj, key, json.RawMessage("true")); err == nil {
		return out
	}
	return obj
}

// initializeResult writes the SDK's initialize result in the schema's
// member order, with the capabilities of capabilitiesRaw and the servers'
// instructions (mergedInstructions).
func (g *Gateway) initializeResult(r *mcp.InitializeResult) mcp.Result {
	var b bytes.Buffer
	b.WriteString(`{"protocolVersion":`)
	pv, _ := json.Marshal(r.ProtocolVersion)
	b.Write(pv)
	b.WriteString(`,"capabilities":`)
	b.Write(g.capabilitiesRaw())
	b.WriteString(`,"serverInfo":`)
	si, err := json.Marshal(r.ServerInfo)
	if err != nil {
		return r
	}
	b.Write(si)
	if ins := g.mergedInstructions(); ins != "" {
		b.WriteString(`,"instructions":`)
		is, _ := json.Marshal(ins)
		b.Write(is)
	}
	if len(r.Meta) > 0 {
		m, err := json.Marshal(r.Meta)
		if err != nil {
			return r
		}
		b.WriteString(`,"_meta":`)
		b.Write(m)
	}
	b.WriteByte('}')
	return &rawResult{raw: b.Bytes()}
}

// discoverResult is the SDK's server/discover result with the capabilities
// of capabilities2026Raw (the tasks extension, not the 2025 tasks
// capability) and the servers' instructions.
func (g *Gateway) discoverResult(r *mcp.DiscoverResult) mcp.Result {
	r.Instructions = g.mergedInstructions()
	b, err := json.Marshal(r)
	if err != nil {
		return r
	}
	if b, err = rawjson.SetMember(b, "capabilities", g.capabilities2026Raw()); err != nil {
		return r
	}
	return &rawResult{raw: b}
}
