package catalog

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
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
		{"NAME", "START", "PROPERTIES", "DESCRIPTION"},
		{"docker", "unavailable", "k* (unused)", "Needs Docker"},
		{"hosted", "remote", "key* (header)", "Hosted"},
		{"long-named-server", "pypi", "-", "PyPI…"},
		{"tool", "command", "a* (argument), b (argum…", "A tool"},
		{"x", "builtin", "-", "Built in"},
	}
	if len(lines) != len(want)+3 || !strings.HasPrefix(lines[len(lines)-3], "* required property; (argument):") ||
		!strings.Contains(lines[len(lines)-1], "'mcp-gateway catalog <name>' shows one entry whole, --json all") {
		t.Fatalf("table:\n%s", buf.String())
	}
	// Every column starts at the same column (in runes: "…" is one) on every line.
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
			at = append(at, utf8.RuneCountInString(line[:pos+j]))
			pos += j + len(cell)
		}
		if offsets == nil {
			offsets = at
		} else if !slices.Equal(at, offsets) {
			t.Errorf("line %q has columns at %v, header at %v", line, at, offsets)
		}
	}
}

// TestShorten: a cell of exactly n runes is kept whole; one rune more is cut to n with "…"; a
// cell of several lines keeps its first, marked as cut.
func TestShorten(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"abcde", 5, "abcde"},
		{"ééééé", 5, "ééééé"},
		{"abcdef", 5, "abcd…"},
		{"ab cdef", 4, "ab…"},
		{"first\nsecond", 20, "first…"},
		{"  padded  ", 6, "padded"},
	} {
		if got := shorten(c.s, c.n); got != c.want {
			t.Errorf("shorten(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

// TestWriteTableEmbedded: the embedded catalog's table fits TableWidth columns on every line,
// with every entry's name whole.
func TestWriteTableEmbedded(t *testing.T) {
	c := embeddedCatalog(t)
	var buf bytes.Buffer
	if err := c.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if n := utf8.RuneCountInString(line); n > TableWidth {
			t.Errorf("line %d is %d columns wide: %q", i+1, n, line)
		}
	}
	for _, name := range c.Names() {
		if !strings.Contains(out, "\n"+name+" ") {
			t.Errorf("table lacks entry %q", name)
		}
	}
	for _, w := range []string{"paths* (argument)", "storagePath (argument)", "apiKey* (header)", "Local filesystem access with"} {
		if !strings.Contains(out, w) {
			t.Errorf("table lacks %q:\n%s", w, out)
		}
	}
}

// TestWriteEntry: `catalog <name>` shows what the table cuts: how it runs, every property with
// its destination and description, the notes, within TableWidth columns but for unbreakable words.
func TestWriteEntry(t *testing.T) {
	c := embeddedCatalog(t)
	var buf bytes.Buffer
	if err := c.WriteEntry(&buf, "sentry"); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"name:        sentry\n", "runs:        uvx mcp-server-sentry==", "authToken*: a string, argument --auth-token"} {
		if !strings.Contains(buf.String(), w) {
			t.Errorf("entry lacks %q:\n%s", w, buf.String())
		}
	}
	for _, name := range c.Names() {
		buf.Reset()
		if err := c.WriteEntry(&buf, name); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
			if utf8.RuneCountInString(line) > TableWidth && strings.Contains(strings.TrimSpace(line), " ") {
				t.Errorf("%s: line wider than %d columns: %q", name, TableWidth, line)
			}
		}
	}
	if err := c.WriteEntry(&buf, "no-such-entry"); err == nil {
		t.Error("WriteEntry of an unknown name: no error")
	}
}

// TestWriteEntryFields: each part of an entry has its place in `catalog <name>`: "none" for an
// entry without properties and the "(* required)" header for one with them, a property's
// description and note only when it has them, "notes:" before the first note alone.
func TestWriteEntryFields(t *testing.T) {
	c := mustParse(t, `{"servers": {
		"bare": {"description": "Nothing to set", "command": ["/bin/bare"]},
		"full": {"description": "Has it all", "command": ["/bin/full", "serve"], "notes": ["first note", "second note"],
			"properties": {
				"key": {"type": "string", "env": "KEY", "required": true, "description": "The  API\nkey", "note": "E2B calls it apiKey"},
				"plain": {"type": "boolean", "flag": "--plain"}}}
	}}`)
	for name, want := range map[string]string{
		"bare": "name:        bare\n" +
			"description: Nothing to set\n" +
			"start:       command\n" +
			"runs:        /bin/bare\n" +
			"properties:  none\n",
		"full": "name:        full\n" +
			"description: Has it all\n" +
			"start:       command\n" +
			"runs:        /bin/full serve\n" +
			"properties:  (* required)\n" +
			"  key*: a string, env KEY. The API key (E2B calls it apiKey)\n" +
			"  plain: true or false, argument --plain\n" +
			"notes:       first note\n" +
			"             second note\n",
	} {
		var buf bytes.Buffer
		if err := c.WriteEntry(&buf, name); err != nil {
			t.Fatal(err)
		}
		if buf.String() != want {
			t.Errorf("entry %s:\n%s\nwant:\n%s", name, buf.String(), want)
		}
	}
}

// TestWrap: a line may be exactly width runes (not bytes) long; one rune more moves the last
// word to the next line, after the indent; a word longer than a line gets a line of its own.
func TestWrap(t *testing.T) {
	for _, c := range []struct {
		prefix, text string
		width        int
		want         string
	}{
		{"p: ", "aaa bbb", 10, "p: aaa bbb\n"},
		{"p: ", "aaa bbb", 9, "p: aaa\n  bbb\n"},
		{"p: ", "ééé ñññ", 10, "p: ééé ñññ\n"},
		{"p: ", "x https://a.very.long/url y", 5, "p: x\n  https://a.very.long/url\n  y\n"},
	} {
		if got := wrap(c.prefix, c.text, c.width, "  "); got != c.want {
			t.Errorf("wrap(%q, %q, %d) = %q, want %q", c.prefix, c.text, c.width, got, c.want)
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
