package catalog

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// e2bSchema is the E2B SDK's typed mcp option (data/e2b-mcp-server.schema.json, a copy of
// e2b-dev/E2B spec/mcp-server.json): the keys and properties E2B users send.
type e2bSchema struct {
	Properties map[string]struct {
		Required   []string `json:"required"`
		Properties map[string]struct {
			Type  string `json:"type"`
			Items *struct {
				Type string `json:"type"`
			} `json:"items"`
		} `json:"properties"`
	} `json:"properties"`
}

func readE2BSchema(t *testing.T) e2bSchema {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "data", "e2b-mcp-server.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s e2bSchema
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Properties) < 200 {
		t.Fatalf("schema copy has %d keys; is it the whole E2B schema?", len(s.Properties))
	}
	return s
}

// TestCatalogHoldsE2BSchema holds the embedded catalog to the E2B schema: every key is an
// entry, with every property under the same name, type and required flag, each going somewhere,
// and every entry's start is well formed. A property may be optional here where E2B requires it
// (a config E2B accepts is still accepted) only with a note saying why; never the reverse.
func TestCatalogHoldsE2BSchema(t *testing.T) {
	schema := readE2BSchema(t)
	c := embeddedCatalog(t)
	for _, key := range slices.Sorted(maps.Keys(schema.Properties)) {
		s := schema.Properties[key]
		e, ok := c.Lookup(key)
		if !ok {
			t.Errorf("E2B key %q is not in the catalog", key)
			continue
		}
		if got, want := slices.Sorted(maps.Keys(e.Properties)), slices.Sorted(maps.Keys(s.Properties)); !slices.Equal(got, want) {
			t.Errorf("%s: properties %v, E2B has %v", key, got, want)
		}
		for name, sp := range s.Properties {
			p, ok := e.Properties[name]
			if !ok {
				continue
			}
			if string(p.Type) != sp.Type {
				t.Errorf("%s.%s: type %s, E2B says %s", key, name, p.Type, sp.Type)
			}
			if sp.Items != nil && string(p.Items) != sp.Items.Type {
				t.Errorf("%s.%s: items %s, E2B says %s", key, name, p.Items, sp.Items.Type)
			}
			e2bRequired := slices.Contains(s.Required, name)
			switch {
			case p.Required && !e2bRequired:
				t.Errorf("%s.%s: required here, optional in E2B", key, name)
			case !p.Required && e2bRequired && p.Note == "":
				t.Errorf("%s.%s: optional here, required in E2B, and no note says why", key, name)
			}
			if destination(p) == "" {
				t.Errorf("%s.%s: no destination", key, name)
			}
		}
		checkStart(t, e)
	}
	for _, e := range c.Entries() {
		if _, ok := schema.Properties[e.Name]; !ok && e.Name != "everything" && e.Name != "sandbox" {
			t.Errorf("entry %q is neither an E2B key nor one of the gateway's own", e.Name)
		}
	}
}

// destination names where a property's value goes, "" for nowhere.
func destination(p Property) string {
	switch {
	case p.Env != "":
		return "env"
	case p.Flag != "", p.Arg != "", p.Positional:
		return "argument"
	case p.Header != "":
		return "header"
	case p.Unused != "":
		return "unused"
	}
	return ""
}

// checkStart checks that entry e says completely how it starts.
func checkStart(t *testing.T, e Entry) {
	t.Helper()
	p := e.Package
	switch p.Manager {
	case ManagerNPM:
		if p.Version == "" && p.Unverified == "" {
			t.Errorf("%s: npm package %s is neither pinned nor marked unverified", e.Name, p.Name)
		}
		if p.Name == "" || p.Bin == "" {
			t.Errorf("%s: npm package %+v", e.Name, p)
		}
	case ManagerPyPI:
		if p.Unverified == "" {
			t.Errorf("%s: PyPI package %s not marked unverified (PyPI is not reachable here)", e.Name, p.Name)
		}
		if p.Name == "" || p.Bin == "" {
			t.Errorf("%s: PyPI package %+v", e.Name, p)
		}
	case ManagerRemote:
		if e.Remote == nil || !strings.HasPrefix(e.Remote.URL, "https://") {
			t.Errorf("%s: remote %+v", e.Name, e.Remote)
		}
		for name, prop := range e.Properties {
			if prop.Header == "" {
				t.Errorf("%s.%s: a remote entry's property goes nowhere", e.Name, name)
			}
		}
	case ManagerUnavailable:
		if u := e.Unavailable; u == nil || u.Reason == "" || !strings.Contains(u.HowTo, "runCmd") {
			t.Errorf("%s: unavailable %+v does not say why and how to run it anyway", e.Name, u)
		}
	default:
		t.Errorf("%s: start kind %q for an E2B key", e.Name, p.Manager)
	}
}

// TestCatalogStartKindCounts pins how many E2B keys start which way, so that a regenerated
// catalog that loses a start kind is noticed in review.
func TestCatalogStartKindCounts(t *testing.T) {
	schema := readE2BSchema(t)
	c := embeddedCatalog(t)
	counts := map[Manager]int{}
	for key := range schema.Properties {
		e, _ := c.Lookup(key)
		counts[e.Package.Manager]++
	}
	want := map[Manager]int{ManagerNPM: 77, ManagerPyPI: 90, ManagerRemote: 24, ManagerUnavailable: 74}
	if !maps.Equal(counts, want) {
		t.Errorf("start kinds %v, want %v", counts, want)
	}
}
