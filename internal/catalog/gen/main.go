// Command gen writes the repository's catalog.json from reviewable inputs in data/: the E2B
// server schema (the key, property names, types and required flags every E2B SDK sends), the
// hand-gathered facts about starting each of those servers without Docker, and npm-pins.json
// (the npm version and bins checked with `npm view`). Corrections that the facts cannot carry
// live in overrides.go, each with its reason.
//
//	go run ./internal/catalog/gen              # rewrite catalog.json
//	go run ./internal/catalog/gen -npm-view    # re-check npm packages, rewrite data/npm-pins.json
//
// Run from the repository root (go generate does, through embed.go).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"
)

func main() {
	root := flag.String("root", ".", "repository root")
	npmView := flag.Bool("npm-view", false, "look up every npm package of the facts with `npm view` and rewrite data/npm-pins.json")
	flag.Parse()
	if err := run(*root, *npmView); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(root string, npmView bool) error {
	in, err := readInputs(root)
	if err != nil {
		return err
	}
	if npmView {
		pins, err := viewNPM(in.facts)
		if err != nil {
			return err
		}
		out, err := marshal(pins)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(root, "data", "npm-pins.json"), out, 0o644); err != nil {
			return err
		}
		in.pins = pins
	}
	out, err := generate(in)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, "catalog.json"), out, 0o644)
}

// inputs are the parsed files of data/.
type inputs struct {
	schema schema
	facts  map[string]fact
	pins   map[string]npmPin
}

func readInputs(root string) (inputs, error) {
	var in inputs
	var factsDoc struct {
		Servers map[string]fact `json:"servers"`
	}
	for name, v := range map[string]any{
		"e2b-mcp-server.schema.json": &in.schema,
		"e2b-catalog-facts.json":     &factsDoc,
		"npm-pins.json":              &in.pins,
	} {
		data, err := os.ReadFile(filepath.Join(root, "data", name))
		if err != nil {
			return inputs{}, err
		}
		if err := json.Unmarshal(data, v); err != nil {
			return inputs{}, fmt.Errorf("data/%s: %w", name, err)
		}
	}
	in.facts = factsDoc.Servers
	return in, nil
}

// npmPin is what `npm view <package> version bin` said.
type npmPin struct {
	Version string   `json:"version"`
	Bins    []string `json:"bins"`
}

// viewNPM asks the npm registry about every npm package of the facts, one at a time. A package
// the registry does not have is left out, which marks its entry unverified.
func viewNPM(facts map[string]fact) (map[string]npmPin, error) {
	var pkgs []string
	for _, f := range facts {
		if f.Start.NPM != nil && !slices.Contains(pkgs, f.Start.NPM.Package) {
			pkgs = append(pkgs, f.Start.NPM.Package)
		}
	}
	slices.Sort(pkgs)
	pins := make(map[string]npmPin)
	for _, p := range pkgs {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, "npm", "view", p, "version", "bin", "--json").Output()
		cancel()
		if err != nil {
			fmt.Fprintf(os.Stderr, "npm view %s: not found (%v)\n", p, err)
			continue
		}
		var v struct {
			Version string          `json:"version"`
			Bin     json.RawMessage `json:"bin"`
		}
		if err := json.Unmarshal(out, &v); err != nil {
			return nil, fmt.Errorf("npm view %s: %w", p, err)
		}
		pin := npmPin{Version: v.Version}
		var one string
		var many map[string]string
		switch {
		case json.Unmarshal(v.Bin, &one) == nil && one != "":
			pin.Bins = []string{unscoped(p)}
		case json.Unmarshal(v.Bin, &many) == nil:
			for b := range many {
				pin.Bins = append(pin.Bins, b)
			}
			slices.Sort(pin.Bins)
		}
		pins[p] = pin
	}
	return pins, nil
}

// unscoped is the bin name npm gives a package whose "bin" is a single path.
func unscoped(pkg string) string {
	if i := bytes.LastIndexByte([]byte(pkg), '/'); i >= 0 {
		return pkg[i+1:]
	}
	return pkg
}

// marshal is the JSON layout of the generated files: indented, keys sorted, no HTML escaping.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
