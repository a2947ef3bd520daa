package catalog

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestWriteTable(t *testing.T) {
	c := mustParse(t, `{"servers": {
		"tool": {"description": "A tool", "command": ["/bin/tool", "serve"], "args": ["--stdio"],
			"properties": {"b": {"type": "string", "flag": "--b"}, "a": {"type": "string", "flag": "--a", "required": true}, "c": {"type": "string", "env": "C"}}},
		"x": {"description": "Built in", "package": {"manager": "builtin", "name": "sandbox"}},
		"long-named-server": {"description": "PyPI\nsecond line", "package": {"manager": "pypi", "name": "pkg", "bin": "pkg-bin", "version": "1.0"}},
		"hosted": {"description": "Hosted", "remote": {"url": "https://mcp.example.com/mcp"}, "properties": {"key": {"type": "string", "required": true, "header": "X-Key"}}},
		"docker": {"description": "Needs Docker", "unavailable": {"reason": "r", "howTo": "h"}, "properties": {"k": {"type": "string", "required": true, "unused": "mount"}}}
	}}`)
	var buf bytes.Buffer
	if err := c.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	want := [][]string{
		{"NAME", "START", "RUNS", "PROPERTIES", "DESCRIPTION"},
		{"docker", "unavailable", "-", "k* (unused)", "Needs Docker"},
		{"hosted", "remote", "https://mcp.example.com/mcp", "key* (header)", "Hosted"},
		{"long-named-server", "pypi", "uvx --from pkg==1.0 pkg-bin", "-", "PyPI"},
		{"tool", "command", "/bin/tool serve --stdio", "a* (argument), b (argument), c", "A tool"},
		{"x", "builtin", "built in", "-", "Built in"},
	}
	if len(lines) != len(want)+2 || !strings.HasPrefix(lines[len(lines)-2], "* required property; (argument):") {
		t.Fatalf("table:\n%s", buf.String())
	}
	// Every column starts at the same offset on every line.
	var offsets []int
	for i, cells := range want {
		line := lines[i]
		var at []int
		pos := 0
		for _, cell := range cells {
			j := strings.Index(line[pos:], cell)
			if j < 0 {
				t.Fatalf("line %q lacks %q", line, cell)
			}
			at = append(at, pos+j)
			pos += j + len(cell)
		}
		if offsets == nil {
			offsets = at
		} else if !slices.Equal(at, offsets) {
			t.Errorf("line %q has columns at %v, header at %v", line, at, offsets)
		}
	}
}

func TestWriteTableEmbedded(t *testing.T) {
	var buf bytes.Buffer
	if err := embeddedCatalog(t).WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, w := range []string{"uvx mcp-server-time==", "npx @modelcontextprotocol/server-filesystem@2026.8.31", "paths* (argument)", "storagePath (argument)", "built in",
		"npx @modelcontextprotocol/server-everything@2026.8.31 stdio", "https://mcp.close.com/mcp", "apiKey* (header)", "githubOfficial"} {
		if !strings.Contains(out, w) {
			t.Errorf("table lacks %q:\n%s", w, out)
		}
	}
}

func TestWriteJSON(t *testing.T) {
	c := embeddedCatalog(t)
	var buf, again bytes.Buffer
	if err := c.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteJSON(&again); err != nil {
		t.Fatal(err)
	}
	if buf.String() != again.String() {
		t.Error("WriteJSON output differs between calls")
	}
	var got []map[string]json.RawMessage
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("not a JSON array of objects: %v\n%s", err, buf.String())
	}
	var names []string
	for _, o := range got {
		for _, k := range []string{"name", "description", "package", "properties"} {
			if _, ok := o[k]; !ok {
				t.Errorf("object %s lacks %q", o["name"], k)
			}
		}
		var n string
		json.Unmarshal(o["name"], &n)
		names = append(names, n)
		if n == "filesystem" {
			var props map[string]Property
			if err := json.Unmarshal(o["properties"], &props); err != nil {
				t.Fatal(err)
			}
			if p := props["paths"]; !p.Required || !p.Positional || p.Items != TypeString {
				t.Errorf("filesystem paths = %+v", p)
			}
			var pkg map[string]string
			json.Unmarshal(o["package"], &pkg)
			want := map[string]string{"manager": "npm", "name": "@modelcontextprotocol/server-filesystem", "version": "2026.8.31", "bin": "mcp-server-filesystem"}
			if !maps.Equal(pkg, want) {
				t.Errorf("filesystem package = %v, want %v", pkg, want)
			}
		}
		if n == "time" && string(o["properties"]) != "{}" {
			t.Errorf("time properties = %s, want {}", o["properties"])
		}
	}
	if !slices.Equal(names, c.Names()) {
		t.Errorf("names = %v, want %v (sorted)", names, c.Names())
	}
}

func TestSearch(t *testing.T) {
	c := embeddedCatalog(t)
	got := c.Search("NOTION").Names()
	if !slices.Contains(got, "notion") || len(got) >= len(c.Names()) {
		t.Errorf("Search(NOTION) = %v", got)
	}
	for _, name := range got {
		e, _ := c.Lookup(name)
		if !strings.Contains(strings.ToLower(name+e.Title+e.Description+e.Package.Name), "notion") {
			t.Errorf("%s matches without containing the word", name)
		}
	}
	if got := c.Search("@brave/").Names(); !slices.Equal(got, []string{"brave"}) {
		t.Errorf("search by package = %v", got)
	}
	if n := len(c.Search("").Names()); n != len(c.Names()) {
		t.Errorf("empty search matched %d of %d", n, len(c.Names()))
	}
	if n := len(c.Search("no-such-word-anywhere").Names()); n != 0 {
		t.Errorf("nonsense matched %d", n)
	}
}
