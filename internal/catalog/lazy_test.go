package catalog

import (
	"reflect"
	"strings"
	"testing"
)

// BenchmarkParseEmbedded measures parsing the whole embedded catalog strictly, what Load did at
// every process start before it split the catalog lazily.
func BenchmarkParseEmbedded(b *testing.B) {
	data := embeddedJSON(b)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadEmbedded measures what a gateway process does with the catalog for a config of
// three servers: Load, and Lookup each.
func BenchmarkLoadEmbedded(b *testing.B) {
	data := embeddedJSON(b)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		c, err := Load(data, "")
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range []string{"brave", "notion", "filesystem"} {
			if _, ok := c.Lookup(n); !ok {
				b.Fatal(n)
			}
		}
	}
}

// TestLoadLazyMatchesParse: the lazily split embedded catalog gives exactly the entries the
// strict parser gives.
func TestLoadLazyMatchesParse(t *testing.T) {
	data := embeddedJSON(t)
	lazy, err := Load(data, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(lazy.lazy) == 0 {
		t.Fatal("Load did not split the embedded catalog")
	}
	if got, want := lazy.Entries(), embeddedCatalog(t).Entries(); !reflect.DeepEqual(got, want) {
		t.Error("lazily loaded entries differ from the strictly parsed ones")
	}
}

// TestSplitServers: documents the splitter does not recognize go to the strict parser, whose
// error Load returns. A document cut off inside an entry is refused, not read past its end.
func TestSplitServers(t *testing.T) {
	good := `{"servers": {"a": {"command": ["x"], "description": "} \" ] {"}, "b": {"command": ["y"]}}}`
	m, ok := splitServers([]byte(good))
	if !ok || len(m) != 2 || string(m["b"]) != `{"command": ["y"]}` || !strings.HasSuffix(string(m["a"]), `"} \" ] {"}`) {
		t.Fatalf("split = %q, %v", m, ok)
	}
	if m, ok := splitServers([]byte(` {"servers": {}} `)); !ok || len(m) != 0 {
		t.Errorf("empty servers: %q, %v", m, ok)
	}
	for _, bad := range []string{
		``, `[]`, `{"servers": {"a": {}, "a": {}}}`, `{"servers": {"a": 1}}`, `{"servers": {"a": {}}} x`,
		`{"servers": {"a": {"b": "}}}`, `{"other": {}}`, `{"servers": {"a\"b": {}}}`, `{"servers": {"a": {}},}`,
		`{"servers": {"a": {}}, "extra": 1}`, `{"servers": {"a": {]}}}`,
		`{"servers": {"a": {"b": [1`, `{"servers": {"a": {`, // cut off outside a string
	} {
		if _, ok := splitServers([]byte(bad)); ok {
			t.Errorf("splitServers(%s) accepted it", bad)
		}
		if _, err := Load([]byte(bad), ""); err == nil {
			t.Errorf("Load(%s) succeeded", bad)
		}
	}
}

// FuzzSplitServers: whenever the strict parser accepts a catalog, Load's split gives the same
// entries; whenever the split accepts bytes, each piece is exactly one JSON object.
func FuzzSplitServers(f *testing.F) {
	f.Add([]byte(`{"servers": {"a": {"command": ["x"], "description": "} \" ] {"}, "b": {"command": ["y"]}}}`))
	f.Add([]byte(`{"servers": {}}`))
	f.Add([]byte(`{"servers": {"a": {"package": {"manager": "npm", "name": "p", "version": "1.0.0"}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		split, ok := splitServers(data)
		if ok {
			for name, raw := range split {
				if len(raw) == 0 || raw[0] != '{' || raw[len(raw)-1] != '}' {
					t.Fatalf("%q: piece %q is not an object", name, raw)
				}
			}
		}
		strict, err := Parse(data)
		if err != nil || !ok {
			return
		}
		lazy := &Catalog{entries: map[string]Entry{}, lazy: split}
		if !reflect.DeepEqual(lazy.Entries(), strict.Entries()) {
			t.Fatalf("split entries differ from parsed ones for %q", data)
		}
	})
}
