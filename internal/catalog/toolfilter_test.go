package catalog

import (
	"reflect"
	"strings"
	"testing"
)

func TestToolFilterKey(t *testing.T) {
	cat := embeddedCatalog(t)
	r := resolveOK(t, cat, ResolveOptions{LookPath: allFound}, `{
		"local": {"runCmd": "srv", "x-tools": {"allow": ["get_*"], "deny": ["get_secret"]}},
		"time": {"x-tools": {"deny": ["convert_time"]}},
		"remote": {"url": "https://example.com/mcp", "x-tools": {"allow": ["search"]}},
		"plain": {"runCmd": "srv"}
	}`)
	want := map[string]*ToolFilter{
		"local":  {Allow: []string{"get_*"}, Deny: []string{"get_secret"}},
		"time":   {Deny: []string{"convert_time"}},
		"remote": {Allow: []string{"search"}},
		"plain":  nil,
	}
	for _, s := range r.Servers {
		if !reflect.DeepEqual(s.Tools, want[s.Name]) {
			t.Errorf("%s: filter %+v, want %+v", s.Name, s.Tools, want[s.Name])
		}
	}
	for _, w := range r.Warnings {
		if strings.Contains(w, "x-tools") {
			t.Errorf("x-tools warned about as unknown: %s", w)
		}
	}
}

func TestToolFilterKeyRejects(t *testing.T) {
	cat := embeddedCatalog(t)
	for config, want := range map[string]string{
		`{"x": {"runCmd": "s", "x-tools": []}}`:                   `server "x": x-tools: must be an object`,
		`{"x": {"runCmd": "s", "x-tools": {}}}`:                   `server "x": x-tools: needs allow or deny globs`,
		`{"x": {"runCmd": "s", "x-tools": {"allow": "get_*"}}}`:   `server "x": x-tools.allow: must be a list of strings`,
		`{"x": {"runCmd": "s", "x-tools": {"deny": ["["]}}}`:      `server "x": x-tools.deny: glob "[": syntax error in pattern`,
		`{"x": {"runCmd": "s", "x-tools": {"deny": [""]}}}`:       `server "x": x-tools.deny: has an empty glob`,
		`{"x": {"runCmd": "s", "x-tools": {"hide": ["a"]}}}`:      `server "x": x-tools.hide: unknown member`,
		`{"time": {"x-tools": {"allow": ["a"], "allow": ["b"]}}}`: `server "time": x-tools: duplicate key "allow"`,
	} {
		_, err := Resolve([]byte(config), cat, ResolveOptions{LookPath: allFound})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", config, err, want)
		}
	}
}
