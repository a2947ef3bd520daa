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
