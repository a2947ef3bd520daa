package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestCatalogIsGenerated fails when catalog.json is not what the generator writes from data/:
// an edit by hand would be lost at the next `go generate`, and an edit of data/ not yet applied
// would ship a stale catalog.
func TestCatalogIsGenerated(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	in, err := readInputs(root)
	if err != nil {
		t.Fatal(err)
	}
	want, err := generate(in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("catalog.json differs from the generator's output: run `go generate` at the repository root")
	}
}

// TestGenerateRefusesUnknownKeys: facts for a key E2B does not have, or an E2B key without
// facts, stop the generator instead of silently dropping or inventing an entry.
func TestGenerateRefusesUnknownKeys(t *testing.T) {
	in, err := readInputs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	brave := in.facts["brave"]
	delete(in.facts, "brave")
	if _, err := generate(in); err == nil {
		t.Error("generate succeeded with an E2B key without facts")
	}
	in.facts["brave"], in.facts["notInE2B"] = brave, brave
	if _, err := generate(in); err == nil {
		t.Error("generate succeeded with facts for a key E2B does not have")
	}
}

// TestGenerateChecksNPMBins: a pinned npm package whose registry bins do not include the
// facts' bin is an error, not a catalog entry that cannot start.
func TestGenerateChecksNPMBins(t *testing.T) {
	in, err := readInputs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	in.pins["@brave/brave-search-mcp-server"] = npmPin{Version: "9.9.9", Bins: []string{"other"}}
	if _, err := generate(in); err == nil {
		t.Error("generate accepted an npm bin the registry does not list")
	}
}

// TestPublicRule pins which property names and types redaction may show: filesystem places and
// non-strings, never a key, token or password, and never a header.
func TestPublicRule(t *testing.T) {
	for _, c := range []struct {
		name, typ string
		header    string
		want      bool
	}{
		{"paths", "array", "", true},
		{"storagePath", "string", "", true},
		{"outputDir", "string", "", true},
		{"allowedDirectories", "array", "", true},
		{"sslKeyfile", "string", "", true},
		{"kubeconfig", "string", "", true},
		{"port", "integer", "", true},
		{"readOnly", "boolean", "", true},
		{"awsProfile", "string", "", false},
		{"apiKey", "string", "", false},
		{"authToken", "string", "", false},
		{"password", "string", "", false},
		{"url", "string", "", false},
		{"tokenPath", "string", "X-Token", false},
	} {
		if got := public(c.name, &property{Type: c.typ, Header: c.header}); got != c.want {
			t.Errorf("public(%s %s) = %v, want %v", c.name, c.typ, got, c.want)
		}
	}
}
