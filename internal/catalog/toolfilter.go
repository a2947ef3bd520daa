package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
)

// ToolsKey is the member of a server's entry in the mcp config that filters
// its tools: {"allow": [globs], "deny": [globs]}. Its '-' keeps it apart from
// every catalog property (camelCase identifiers) and every field of local,
// GitHub and remote entries, so it means the same on every kind of server.
const ToolsKey = "x-tools"

// ToolFilter says which of a server's tools the agent is offered: those
// matching an Allow glob (all when Allow is empty) and no Deny glob. Globs use
// path.Match syntax over the tools' original names. A filtered-out tool is
// never listed, and a call to it fails as a call to an unknown tool.
type ToolFilter struct {
	Allow, Deny []string
}

// takeToolFilter reads and removes ToolsKey from a server's fields, so that
// the kind-specific resolution never sees it. nil when absent.
func takeToolFilter(server string, fields map[string]json.RawMessage) (*ToolFilter, error) {
	raw, ok := fields[ToolsKey]
	if !ok {
		return nil, nil
	}
	delete(fields, ToolsKey)
	fail := func(field string, err error) (*ToolFilter, error) {
		return nil, &ConfigError{Server: server, Field: field, Err: err}
	}
	if t := jsonType(raw); t != "object" {
		return fail(ToolsKey, fmt.Errorf(`must be an object {"allow": [...], "deny": [...]}, got %s`, t))
	}
	members, err := readObject(raw)
	if err != nil {
		return fail(ToolsKey, err)
	}
	f := &ToolFilter{}
	for _, m := range members {
		field := ToolsKey + "." + m.Key
		var globs *[]string
		switch m.Key {
		case "allow":
			globs = &f.Allow
		case "deny":
			globs = &f.Deny
		default:
			return fail(field, errors.New("unknown member: only allow and deny"))
		}
		list, err := decodeStrings(m.Value)
		if err != nil {
			return fail(field, err)
		}
		for _, g := range list {
			if g == "" {
				return fail(field, errors.New("has an empty glob"))
			}
			if _, err := path.Match(g, ""); err != nil {
				return fail(field, fmt.Errorf("glob %q: %w", g, err))
			}
		}
		*globs = list
	}
	if len(f.Allow) == 0 && len(f.Deny) == 0 {
		return fail(ToolsKey, errors.New("needs allow or deny globs"))
	}
	return f, nil
}
