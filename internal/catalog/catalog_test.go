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
	// The names the gateway's contract documents keep their start and properties.
	pkgs := map[string]Package{
		"arxiv":              {Manager: ManagerPyPI, Name: "arxiv-mcp-server", Bin: "arxiv-mcp-server"},
		"duckduckgo":         {Manager: ManagerPyPI, Name: "duckduckgo-mcp-server", Bin: "duckduckgo-mcp-server"},
		"everything":         {Manager: ManagerNPM, Name: "@modelcontextprotocol/server-everything", Bin: "mcp-server-everything"},
		"fetch":              {Manager: ManagerPyPI, Name: "mcp-server-fetch", Bin: "mcp-server-fetch"},
		"filesystem":         {Manager: ManagerNPM, Name: "@modelcontextprotocol/server-filesystem", Bin: "mcp-server-filesystem"},
		"memory":             {Manager: ManagerNPM, Name: "@modelcontextprotocol/server-memory", Bin: "mcp-server-memory"},
		"sandbox":            {Manager: ManagerBuiltin, Name: "sandbox"},
		"sequentialthinking": {Manager: ManagerNPM, Name: "@modelcontextprotocol/server-sequential-thinking", Bin: "mcp-server-sequential-thinking"},
		"time":               {Manager: ManagerPyPI, Name: "mcp-server-time", Bin: "mcp-server-time"},
	}
	for name, want := range pkgs {
		e, ok := c.Lookup(name)
		if !ok {
			t.Errorf("%s: not in the catalog", name)
			continue
		}
		got := e.Package
		got.Version, got.Unverified = "", ""
		if got != want {
			t.Errorf("%s: package = %+v, want %+v", name, got, want)
		}
		if e.Package.Manager == ManagerNPM && e.Package.Version == "" {
			t.Errorf("%s: npm package not pinned", name)
		}
	}
	for _, e := range c.Entries() {
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
		{"no package or command", entry(`{"description": "d"}`), []string{`entry "x"`, `needs one of "package", "command", "remote", "unavailable"`}},
		{"package and remote", entry(`{"package": {"manager": "npm", "name": "p"}, "remote": {"url": "https://h/mcp"}}`), []string{`entry "x"`, "more than one of"}},
		{"command and remote", entry(`{"command": ["a"], "remote": {"url": "https://h/mcp"}}`), []string{`entry "x"`, "more than one of"}},
		{"remote and unavailable", entry(`{"remote": {"url": "https://h/mcp"}, "unavailable": {"reason": "r", "howTo": "h"}}`), []string{`entry "x"`, "more than one of"}},
		{"arg with NUL", prop(`{"type": "string", "arg": "--q={q}\u0000"}`), []string{`"q"`, "arg: must not contain NUL bytes"}},
		{"package name with a space", entry(`{"package": {"manager": "npm", "name": "a b", "bin": "p"}}`), []string{`entry "x"`, "name:"}},
		{"bin with a space", entry(`{"package": {"manager": "npm", "name": "p", "bin": "a b"}}`), []string{`entry "x"`, "bin:"}},
		{"remote bad url", entry(`{"remote": {"url": "ftp://h"}}`), []string{`entry "x"`, "remote: url:"}},
		{"unavailable without howTo", entry(`{"unavailable": {"reason": "r"}}`), []string{`entry "x"`, "needs reason and howTo"}},
		{"version range", entry(`{"package": {"manager": "npm", "name": "p", "version": "^1.2"}}`), []string{`entry "x"`, "version: must be an exact version"}},
		{"remote property not header", entry(`{"remote": {"url": "https://h/mcp"}, "properties": {"k": {"type": "string", "env": "K"}}}`), []string{`"k"`, "remote entry passes properties as headers"}},
		{"header on npm", prop(`{"type": "string", "header": "X-Key"}`), []string{`"q"`, "header: only for remote entries"}},
		{"transport header", entry(`{"remote": {"url": "https://h/mcp"}, "properties": {"k": {"type": "string", "header": "Mcp-Session-Id"}}}`), []string{`"k"`, "not a header a server may be sent"}},
		{"format without own name", prop(`{"type": "string", "env": "Q", "format": "Bearer {other}"}`), []string{`"q"`, "format: must contain {q}"}},
		{"arg without own name", prop(`{"type": "string", "arg": "--q=1"}`), []string{`"q"`, "arg: must contain {q}"}},
		{"env template names no property", entry(`{"package": {"manager": "npm", "name": "p"}, "env": {"H": "{nope}"}}`), []string{`entry "x"`, "{nope} is not a property"}},
		{"env also set by property", entry(`{"package": {"manager": "npm", "name": "p"}, "env": {"Q": "1"}, "properties": {"q": {"type": "string", "env": "Q"}}}`), []string{`entry "x"`, "Q is also set by a property"}},
		{"bad manager", entry(`{"package": {"manager": "apt", "name": "p"}}`), []string{`entry "x"`, "manager", `"apt"`}},
		{"package unknown field", entry(`{"package": {"manager": "npm", "name": "p", "release": "1"}}`), []string{`entry "x"`, `unknown field "release"`}},
		{"package name missing", entry(`{"package": {"manager": "pypi"}}`), []string{`entry "x"`, "name: is required"}},
		{"scoped npm without bin", entry(`{"package": {"manager": "npm", "name": "@s/p"}}`), []string{`entry "x"`, "bin: is required"}},
		{"bin with slash", entry(`{"package": {"manager": "npm", "name": "p", "bin": "a/b"}}`), []string{`entry "x"`, "bin:"}},
		{"builtin with bin", entry(`{"package": {"manager": "builtin", "name": "sandbox", "bin": "x"}}`), []string{`entry "x"`, "bin and version: not allowed"}},
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
		{"two ways", prop(`{"type": "string", "flag": "--q", "env": "Q"}`), []string{`"q"`, "exactly one of positional, flag, arg, env, header, unused"}},
		{"no way", prop(`{"type": "string"}`), []string{`"q"`, "exactly one of positional, flag, arg, env, header, unused"}},
		{"bad flag", prop(`{"type": "string", "flag": "q value"}`), []string{`"q"`, "flag:"}},
		{"bad env", prop(`{"type": "string", "env": "1Q"}`), []string{`"q"`, `env: "1Q"`}},
		{"token env", prop(`{"type": "string", "env": "GATEWAY_ACCESS_TOKEN"}`), []string{`"q"`, "GATEWAY_ACCESS_TOKEN"}},
		{"required not bool", prop(`{"type": "string", "flag": "--q", "required": "yes"}`), []string{`"q"`, "required: must be true or false, got string"}},
		{"property name with a space", entry(`{"command": ["a"], "properties": {"api key": {"type": "string", "flag": "--k"}}}`), []string{`entry "x"`, `"api key"`, "invalid property name"}},
		{"property name with a tab", entry(`{"command": ["a"], "properties": {"api\tkey": {"type": "string", "flag": "--k"}}}`), []string{`entry "x"`, "invalid property name"}},
		{"empty property name", entry(`{"command": ["a"], "properties": {"": {"type": "string", "flag": "--k"}}}`), []string{`entry "x"`, "invalid property name"}},
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
		if n, want := len(c.Names()), len(mustParse(t, string(embedded)).Names())+1; n != want {
			t.Errorf("%d entries, want %d (the embedded ones + 1 added)", n, want)
		}
	})

	t.Run("missing file is fine", func(t *testing.T) {
		c, err := Load(embedded, filepath.Join(dir, "does-not-exist.json"))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(c.Names(), mustParse(t, string(embedded)).Names()) {
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
