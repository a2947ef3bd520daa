package mcpgateway_test

// Guards over the whole repository's layout: the order of its packages, the length of its
// files and the absence of package-level mutable state. They sit in the module root's tests
// so that they see every package while adding nothing to any binary: a _test.go file is
// never compiled into one.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// packageLayers is the order of the module's packages, layer 1 (the programs) first, as
// paths relative to the module ("" is the module root, which holds the embedded catalog);
// docs/layout.md describes each package under the same numbers. A package may import only
// packages of a layer below its own (a higher number): never one of its own layer, never
// one above. That keeps the code readable top-down and rules out import cycles.
//
// A new package is one entry here: put it in a layer below every package importing it and
// above every package it imports (the test names the layers that fit). Listed packages
// that do not exist (yet, or any more) are skipped, and named in the test's log.
func packageLayers() [][]string {
	return [][]string{
		// 1. Programs: the commands, and the ones built only by tests and benchmarks.
		{"cmd/mcp-gateway", "cmd/mcp-gateway-plugin-host", "bench", "bench/noopplugin",
			"examples/interceptor-plugin", "internal/intercept/testplugin",
			"test/conformance/everything-server", "test/mutate"},
		// 2. One gateway's life: start the servers, serve, shut down.
		{"internal/gateway"},
		// 3. The two faces an agent talks to: streamable HTTP, and one session over stdio.
		{"internal/endpoint", "internal/stdioserve"},
		// 4. The merged server: lists, routing, relaying, interceptor hooks.
		{"internal/aggregate"},
		// 5. What aggregate uses: upstream servers, interceptors, task tables, and the plugin
		// host's work.
		{"internal/supervisor", "internal/intercept", "internal/tasktable", "internal/pluginhost"},
		// 6. The catalog, and the public package plugins import.
		{"internal/catalog", "interceptor"},
		// 7. Leaves: one small concern each, importing none of the module's packages.
		{"interceptor/contract", "internal/pluginwire", "internal/auth", "internal/redact",
			"internal/jsonlimit", "internal/rawjson", "internal/naming", "internal/logfile",
			"internal/sandbox", "internal/reaper", "internal/fixture", "internal/catalog/gen",
			"internal/toolsearch", "internal/telemetry", ""},
	}
}

// listedPackage is the part of `go list -json` these guards read.
type listedPackage struct {
	ImportPath string
	Dir        string
	Imports    []string
	Module     *struct {
		Path string
		Main bool
	}
	Error *struct{ Err string }
}

// goList runs `go list -e -json` with args and decodes its stream of packages.
func goList(t *testing.T, args ...string) []listedPackage {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-e", "-json"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
}

// modulePackages returns the main module's packages among all of ./... and their
// dependencies, keyed by their path relative to the module, with their imports of the
// module's own packages (relative too).
func modulePackages(t *testing.T) map[string][]string {
	t.Helper()
	pkgs := goList(t, "-deps", "./...")
	mod := ""
	for _, p := range pkgs {
		if p.Module != nil && p.Module.Main {
			mod = p.Module.Path
			break
		}
	}
	if mod == "" {
		t.Fatal("go list -deps ./... named no package of the main module")
	}
	rel := func(path string) (string, bool) {
		if path == mod {
			return "", true
		}
		r, ok := strings.CutPrefix(path, mod+"/")
		return r, ok
	}
	graph := map[string][]string{}
	for _, p := range pkgs {
		name, ok := rel(p.ImportPath)
		if !ok {
			continue
		}
		if p.Error != nil {
			// An import cycle lands here: go list reports it as the package's error.
			t.Errorf("package %s: %s", p.ImportPath, p.Error.Err)
		}
		var imports []string
		for _, imp := range p.Imports {
			if r, ok := rel(imp); ok {
				imports = append(imports, r)
			}
		}
		graph[name] = imports
	}
	return graph
}

func displayName(pkg string) string {
	if pkg == "" {
		return "(module root)"
	}
	return pkg
}

func TestPackageOrder(t *testing.T) {
	layers := packageLayers()
	layerOf := map[string]int{}
	for i, layer := range layers {
		for _, pkg := range layer {
			if prev, dup := layerOf[pkg]; dup {
				t.Fatalf("packageLayers lists %s twice (layers %d and %d)", displayName(pkg), prev, i+1)
			}
			layerOf[pkg] = i + 1
		}
	}
	graph := modulePackages(t)

	var missing []string
	for pkg := range layerOf {
		if _, ok := graph[pkg]; !ok {
			missing = append(missing, displayName(pkg))
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Logf("listed in packageLayers but not in the module (skipped): %s", strings.Join(missing, ", "))
	}

	importers := map[string][]string{}
	for pkg, imports := range graph {
		for _, imp := range imports {
			importers[imp] = append(importers[imp], pkg)
		}
	}
	names := make([]string, 0, len(graph))
	for pkg := range graph {
		names = append(names, pkg)
	}
	sort.Strings(names)
	for _, pkg := range names {
		level, ok := layerOf[pkg]
		if !ok {
			t.Errorf("package %s is in no layer of packageLayers (layout_test.go): add it to a "+
				"layer below all of its importers (%s) and above all of its imports (%s)%s",
				displayName(pkg), describe(importers[pkg], layerOf), describe(graph[pkg], layerOf),
				suggestLayer(graph[pkg], importers[pkg], layerOf, len(layers)))
			continue
		}
		for _, imp := range graph[pkg] {
			il, listed := layerOf[imp]
			switch {
			case !listed:
				// Reported as unlisted on its own.
			case il < level:
				t.Errorf("%s (layer %d) imports %s, which is above it (layer %d): move the code it needs "+
					"down, or invert the dependency (an interface or a func the upper package passes in)",
					displayName(pkg), level, displayName(imp), il)
			case il == level:
				t.Errorf("%s imports %s, of its own layer %d: a package imports only layers below its "+
					"own; move one of them in packageLayers if the order allows it", displayName(pkg),
					displayName(imp), level)
			}
		}
	}
}

// describe names pkgs with their layers, for a message.
func describe(pkgs []string, layerOf map[string]int) string {
	if len(pkgs) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(pkgs))
	for _, p := range slices.Sorted(slices.Values(pkgs)) {
		if l, ok := layerOf[p]; ok {
			parts = append(parts, fmt.Sprintf("%s: layer %d", displayName(p), l))
		} else {
			parts = append(parts, displayName(p)+": unlisted")
		}
	}
	return strings.Join(parts, ", ")
}

// suggestLayer names the layers a package fits in, between its lowest importer and its
// highest import, or says that none does.
func suggestLayer(imports, importers []string, layerOf map[string]int, n int) string {
	lo, hi := 1, n // the package's layer must be > every importer's and < every import's.
	for _, p := range importers {
		if l, ok := layerOf[p]; ok && l+1 > lo {
			lo = l + 1
		}
	}
	for _, p := range imports {
		if l, ok := layerOf[p]; ok && l-1 < hi {
			hi = l - 1
		}
	}
	switch {
	case lo > hi:
		return "; no layer fits between them: add a new layer there"
	case lo == hi:
		return fmt.Sprintf("; that is layer %d", lo)
	default:
		return fmt.Sprintf("; layers %d to %d fit", lo, hi)
	}
}

// maxFileLines is the most lines a non-test Go file may have: past it a file is holding
// more than one responsibility, and reads worse for it.
const maxFileLines = 600

// skipDir says which directories the repository-wide scans leave out: vendored code under
// third_party/ (a patched copy of another project, kept close to upstream so its patch stays
// reviewable), npm's node_modules, testdata (inputs, not the module's code) and hidden ones.
func skipDir(rel string, d fs.DirEntry) bool {
	name := d.Name()
	return rel == "third_party" || name == "node_modules" || name == "testdata" ||
		(strings.HasPrefix(name, ".") && rel != ".")
}

// sourceFiles returns the repository's non-test .go files, relative to its root.
func sourceFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skipDir(path, d) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			files = append(files, filepath.ToSlash(path))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk the repository: %v", err)
	}
	if len(files) == 0 {
		t.Fatal("found no .go files: the test must run in the module root")
	}
	return files
}

func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	n := 0
	for s.Scan() {
		n++
	}
	return n, s.Err()
}

func TestFileLength(t *testing.T) {
	for _, path := range sourceFiles(t) {
		n, err := countLines(path)
		if err != nil {
			t.Fatalf("count lines of %s: %v", path, err)
		}
		if n > maxFileLines {
			t.Errorf("%s has %d lines, over %d: split it by responsibility (move whole declarations "+
				"into files named for what they hold)", path, n, maxFileLines)
		}
	}
}

// allowedVars are the package-level variables that stay variables, as "file:name", each
// with the reason it cannot be a constant or a function.
func allowedVars() map[string]string {
	return map[string]string{
		"embed.go:CatalogJSON": "//go:embed fills only a variable",
		"cmd/mcp-gateway/version.go:version": "set at link time with -ldflags -X, which " +
			"writes only a string variable",
		"interceptor/plugin.go:Handshake": "part of the plugin SDK's API since its first " +
			"release: plugins built against it pass it to go-plugin",
	}
}

// immutableInit says whether e is a value that is never changed after it is made, so that
// a package-level variable holding it is not mutable state: an error sentinel (errors.New,
// fmt.Errorf) or a compiled pattern (regexp.MustCompile).
func immutableInit(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok {
		return false
	}
	switch pkg.Name + "." + sel.Sel.Name {
	case "errors.New", "fmt.Errorf", "regexp.MustCompile":
		return true
	}
	return false
}

// mutableVars returns the package-level variables of one file that are neither immutable
// by construction nor blank (var _ I = (*T)(nil) only checks at compile time), by name.
func mutableVars(fset *token.FileSet, path string) ([]string, error) {
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.VAR {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if name.Name == "_" {
					continue
				}
				if len(vs.Values) == len(vs.Names) && immutableInit(vs.Values[i]) {
					continue
				}
				names = append(names, name.Name)
			}
		}
	}
	return names, nil
}

func TestNoPackageLevelMutableState(t *testing.T) {
	allowed := allowedVars()
	used := map[string]bool{}
	fset := token.NewFileSet()
	for _, path := range sourceFiles(t) {
		names, err := mutableVars(fset, path)
		if err != nil {
			t.Fatalf("parse %s: %v", path, err)
		}
		for _, name := range names {
			key := path + ":" + name
			if _, ok := allowed[key]; ok {
				used[key] = true
				continue
			}
			t.Errorf("%s: package-level var %s is shared mutable state: make it a const, a func "+
				"returning a fresh value, or a field of the type that uses it (allowedVars in "+
				"layout_test.go lists the few that must stay variables, each with its reason)", path, name)
		}
	}
	for key := range allowed {
		if !used[key] {
			t.Errorf("allowedVars lists %s, which no longer exists: remove it from the list", key)
		}
	}
}

// TestProductionBinaryDeps keeps test-only code out of the gateway's binary: the testing
// package (which also registers its flags), httptest, and the module's fixtures. The plugin
// host (cmd/mcp-gateway-plugin-host) is left out: go-plugin, which it exists to run, imports
// testing for its own test helpers.
func TestProductionBinaryDeps(t *testing.T) {
	forbidden := map[string]bool{
		"testing":           true,
		"net/http/httptest": true,
		"github.com/mcp-gateway/mcp-gateway/internal/fixture":              true,
		"github.com/mcp-gateway/mcp-gateway/internal/intercept/testplugin": true,
	}
	for _, p := range goList(t, "-deps", "./cmd/mcp-gateway") {
		if p.Error != nil {
			t.Errorf("package %s: %s", p.ImportPath, p.Error.Err)
		}
		if forbidden[p.ImportPath] {
			t.Errorf("cmd/mcp-gateway depends on %s, which is for tests only: find the import with "+
				"go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./cmd/mcp-gateway", p.ImportPath)
		}
	}
}
