package catalog

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// embeddedJSON reads the repository's catalog.json, the bytes the root package embeds. Reading
// the file keeps this package's tests free of an import of the root package.
func embeddedJSON(t testing.TB) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func embeddedCatalog(t testing.TB) *Catalog {
	t.Helper()
	c, err := Parse(embeddedJSON(t))
	if err != nil {
		t.Fatalf("parse embedded catalog: %v", err)
	}
	return c
}

func mustParse(t testing.TB, doc string) *Catalog {
	t.Helper()
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

func TestEmbeddedCatalog(t *testing.T) {
	c := embeddedCatalog(t)
	want := []string{"arxiv", "duckduckgo", "everything", "fetch", "filesystem", "memory", "sandbox", "sequentialthinking", "time"}
	if got := c.Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	pkgs := map[string]Package{
		"arxiv":              {ManagerPyPI, "arxiv-mcp-server", "arxiv-mcp-server"},
		"duckduckgo":         {ManagerPyPI, "duckduckgo-mcp-server", "duckduckgo-mcp-server"},
		"everything":         {ManagerNPM, "@modelcontextprotocol/server-everything", "mcp-server-everything"},
		"fetch":              {ManagerPyPI, "mcp-server-fetch", "mcp-server-fetch"},
		"filesystem":         {ManagerNPM, "@modelcontextprotocol/server-filesystem", "mcp-server-filesystem"},
		"memory":             {ManagerNPM, "@modelcontextprotocol/server-memory", "mcp-server-memory"},
		"sandbox":            {ManagerBuiltin, "sandbox", ""},
		"sequentialthinking": {ManagerNPM, "@modelcontextprotocol/server-sequential-thinking", "mcp-server-sequential-thinking"},
		"time":               {ManagerPyPI, "mcp-server-time", "mcp-server-time"},
	}
	for _, e := range c.Entries() {
		if e.Package != pkgs[e.Name] {
			t.Errorf("%s: package = %+v, want %+v", e.Name, e.Package, pkgs[e.Name])
		}
		if e.Description == "" {
			t.Errorf("%s: no description", e.Name)
		}
	}
	fs, _ := c.Lookup("filesystem")
	if p := fs.Properties["paths"]; !p.Required || !p.Positional || p.Type != TypeArray || p.Items != TypeString {
		t.Errorf("filesystem paths = %+v", p)
	}
	ax, _ := c.Lookup("arxiv")
	if p := ax.Properties["storagePath"]; p.Required || p.Flag != "--storage-path" || p.Type != TypeString {
		t.Errorf("arxiv storagePath = %+v", p)
	}
	ev, _ := c.Lookup("everything")
	if !slices.Equal(ev.Args, []string{"stdio"}) {
		t.Errorf("everything args = %v", ev.Args)
	}
}

func TestParseCommandEntries(t *testing.T) {
	c := mustParse(t, `{"servers": {
		"a": {"command": ["/bin/echo", "hi"]},
		"b": {"package": {"manager": "command"}, "command": ["/bin/true"]},
		"c": {"package": {"manager": "pypi", "name": "c-server"}},
		"d": {"package": {"manager": "npm", "name": "d-server"}}
	}}`)
	a, _ := c.Lookup("a")
	b, _ := c.Lookup("b")
	if a.Package.Manager != ManagerCommand || !slices.Equal(a.Command, []string{"/bin/echo", "hi"}) {
		t.Errorf("a = %+v", a)
	}
	if b.Package.Manager != ManagerCommand || !slices.Equal(b.Command, []string{"/bin/true"}) {
		t.Errorf("b = %+v", b)
	}
	if e, _ := c.Lookup("c"); e.Package.Bin != "c-server" {
		t.Errorf("pypi bin default = %q, want the package name", e.Package.Bin)
	}
	if e, _ := c.Lookup("d"); e.Package.Bin != "d-server" {
		t.Errorf("unscoped npm bin default = %q, want the package name", e.Package.Bin)
	}
	if e, _ := c.Lookup("a"); e.Properties == nil {
		t.Error("Properties is nil, want an empty map")
	}
}

func TestParseErrors(t *testing.T) {
	entry := func(body string) string { return `{"servers": {"x": ` + body + `}}` }
	prop := func(body string) string {
		return entry(`{"package": {"manager": "npm", "name": "p", "bin": "p"}, "properties": {"q": ` + body + `}}`)
	}
	tests := []struct {
		name string
		doc  string
		want []string // substrings of the error
	}{
		{"not json", `{"servers": `, []string{"invalid JSON"}},
		{"array", `[]`, []string{"must be a JSON object, got array"}},
		{"trailing", `{"servers": {}} {}`, []string{"unexpected data"}},
		{"top unknown field", `{"servers": {}, "extra": 1}`, []string{`unknown field "extra"`}},
		{"no servers", `{}`, []string{`"servers" is required`}},
		{"duplicate entry", `{"servers": {"x": {"command": ["a"]}, "x": {"command": ["b"]}}}`, []string{`duplicate key "x"`}},
		{"entry unknown field", entry(`{"command": ["a"], "colour": "red"}`), []string{`entry "x"`, `unknown field "colour"`}},
		{"entry not object", entry(`"npm"`), []string{`entry "x"`, "got string"}},
		{"bad entry name", `{"servers": {"github/a": {"command": ["a"]}}}`, []string{`entry "github/a"`, "invalid name"}},
		{"no package or command", entry(`{"description": "d"}`), []string{`entry "x"`, `"package" or "command"`}},
		{"bad manager", entry(`{"package": {"manager": "apt", "name": "p"}}`), []string{`entry "x"`, "manager", `"apt"`}},
		{"package unknown field", entry(`{"package": {"manager": "npm", "name": "p", "version": "1"}}`), []string{`entry "x"`, `unknown field "version"`}},
		{"package name missing", entry(`{"package": {"manager": "pypi"}}`), []string{`entry "x"`, "name: is required"}},
		{"scoped npm without bin", entry(`{"package": {"manager": "npm", "name": "@s/p"}}`), []string{`entry "x"`, "bin: is required"}},
		{"bin with slash", entry(`{"package": {"manager": "npm", "name": "p", "bin": "a/b"}}`), []string{`entry "x"`, "bin:"}},
		{"builtin with bin", entry(`{"package": {"manager": "builtin", "name": "sandbox", "bin": "x"}}`), []string{`entry "x"`, "bin: not allowed"}},
		{"command manager without command", entry(`{"package": {"manager": "command"}}`), []string{`entry "x"`, "command: must name an executable"}},
		{"command with npm", entry(`{"package": {"manager": "npm", "name": "p"}, "command": ["a"]}`), []string{`entry "x"`, "command: only for manager"}},
		{"empty command", entry(`{"command": []}`), []string{`entry "x"`, "command: must name an executable"}},
		{"command not strings", entry(`{"command": ["a", 1]}`), []string{`entry "x"`, "command: element 1: must be a string, got number"}},
		{"args not list", entry(`{"command": ["a"], "args": "b"}`), []string{`entry "x"`, "args: must be a list of strings, got string"}},
		{"description not string", entry(`{"command": ["a"], "description": 3}`), []string{`entry "x"`, "description: must be a string, got number"}},
		{"property unknown field", prop(`{"type": "string", "flag": "--q", "default": "x"}`), []string{`entry "x"`, `"q"`, `unknown field "default"`}},
		{"property bad type", prop(`{"type": "date", "flag": "--q"}`), []string{`"q"`, `type: "date"`}},
		{"property no type", prop(`{"flag": "--q"}`), []string{`"q"`, "type:"}},
		{"array without items", prop(`{"type": "array", "positional": true}`), []string{`"q"`, "items:"}},
		{"array of arrays", prop(`{"type": "array", "items": "array", "positional": true}`), []string{`"q"`, "items:"}},
		{"items on string", prop(`{"type": "string", "items": "string", "flag": "--q"}`), []string{`"q"`, "items: only for type array"}},
		{"two ways", prop(`{"type": "string", "flag": "--q", "env": "Q"}`), []string{`"q"`, "exactly one of positional, flag, env"}},
		{"no way", prop(`{"type": "string"}`), []string{`"q"`, "exactly one of positional, flag, env"}},
		{"bad flag", prop(`{"type": "string", "flag": "q value"}`), []string{`"q"`, "flag:"}},
		{"bad env", prop(`{"type": "string", "env": "1Q"}`), []string{`"q"`, `env: "1Q"`}},
		{"token env", prop(`{"type": "string", "env": "GATEWAY_ACCESS_TOKEN"}`), []string{`"q"`, "GATEWAY_ACCESS_TOKEN"}},
		{"required not bool", prop(`{"type": "string", "flag": "--q", "required": "yes"}`), []string{`"q"`, "required: must be true or false, got string"}},
		{"reserved property", entry(`{"command": ["a"], "properties": {"runCmd": {"type": "string", "flag": "--r"}}}`), []string{`entry "x"`, `"runCmd"`, "reserved"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if err == nil {
				t.Fatal("Parse succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestLoad(t *testing.T) {
	embedded := embeddedJSON(t)
	dir := t.TempDir()
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	t.Run("add and replace", func(t *testing.T) {
		p := write("override.json", `{"servers": {
			"time": {"description": "replaced", "command": ["/opt/time-server"]},
			"weather": {"description": "added", "package": {"manager": "pypi", "name": "weather-mcp"}}
		}}`)
		c, err := Load(embedded, p)
		if err != nil {
			t.Fatal(err)
		}
		tm, _ := c.Lookup("time")
		if tm.Description != "replaced" || tm.Package.Manager != ManagerCommand || !slices.Equal(tm.Command, []string{"/opt/time-server"}) {
			t.Errorf("time was not replaced as a whole: %+v", tm)
		}
		if w, ok := c.Lookup("weather"); !ok || w.Package.Name != "weather-mcp" {
			t.Errorf("weather not added: %+v, %v", w, ok)
		}
		if _, ok := c.Lookup("fetch"); !ok {
			t.Error("embedded entry fetch lost by the override")
		}
		if n := len(c.Names()); n != 10 {
			t.Errorf("%d entries, want 9 embedded + 1 added", n)
		}
	})

	t.Run("missing file is fine", func(t *testing.T) {
		c, err := Load(embedded, filepath.Join(dir, "does-not-exist.json"))
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Names()) != 9 {
			t.Errorf("names = %v", c.Names())
		}
	})

	t.Run("no override path", func(t *testing.T) {
		if _, err := Load(embedded, ""); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("malformed override names the path", func(t *testing.T) {
		p := write("bad.json", `{"servers": {"time": {"pakage": {}}}}`)
		_, err := Load(embedded, p)
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), `unknown field "pakage"`) {
			t.Fatalf("err = %v, want it to name %s and the field", err, p)
		}
	})

	t.Run("unreadable override names the path", func(t *testing.T) {
		_, err := Load(embedded, dir) // a directory cannot be read as a file
		if err == nil || !strings.Contains(err.Error(), dir) {
			t.Fatalf("err = %v, want it to name %s", err, dir)
		}
	})

	t.Run("bad embedded catalog", func(t *testing.T) {
		_, err := Load([]byte(`{"servers": []}`), "")
		if err == nil || !strings.Contains(err.Error(), "embedded catalog") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestEntriesAreCopies(t *testing.T) {
	c := embeddedCatalog(t)
	e, _ := c.Lookup("everything")
	e.Args[0] = "changed"
	e.Properties["new"] = Property{}
	for _, e := range c.Entries() {
		if e.Name == "filesystem" {
			delete(e.Properties, "paths")
		}
	}
	if again, _ := c.Lookup("everything"); again.Args[0] != "stdio" || len(again.Properties) != 0 {
		t.Errorf("catalog changed through a returned entry: %+v", again)
	}
	if fs, _ := c.Lookup("filesystem"); len(fs.Properties) != 1 {
		t.Errorf("catalog changed through Entries: %+v", fs)
	}
}
