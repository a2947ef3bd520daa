package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// fuzzOverride adds entries with every property type and delivery to the embedded catalog, so
// the fuzzer can reach the property mapping code.
const fuzzOverride = `{"servers": {
	"tool": {"command": ["/bin/tool"], "args": ["--x"], "properties": {
		"dirs": {"type": "array", "items": "string", "positional": true, "required": true},
		"n": {"type": "integer", "flag": "--n"},
		"f": {"type": "number", "positional": true},
		"b": {"type": "boolean", "flag": "--b"},
		"o": {"type": "object", "env": "TOOL_O"},
		"tags": {"type": "array", "items": "object", "flag": "--tag"},
		"key": {"type": "string", "env": "TOOL_KEY"}
	}},
	"w": {"package": {"manager": "pypi", "name": "weather-pkg", "bin": "weather"}}
}}`

func FuzzResolve(f *testing.F) {
	for _, seed := range []string{
		`{}`, `null`, `[]`, `{"time": {}, "fetch": {}}`,
		`{"filesystem": {"paths": ["/data"]}}`,
		`{"arxiv": {"storagePath": "/p"}, "sandbox": {}}`,
		`{"github/acme/weather-mcp": {"installCmd": "npm ci", "runCmd": "node dist/index.js", "envs": {"WEATHER_API_KEY": "k"}}}`,
		`{"github/a/b": {"run_cmd": "x", "install_cmd": "y"}}`,
		`{"loc": {"runCmd": "srv", "cwd": "/srv", "envs": {"A": "1"}}}`,
		`{"tool": {"dirs": ["/a"], "n": 3, "f": 1.5, "b": true, "o": {"k": 1}, "tags": [{}], "key": "s", "envs": {"E": "e"}}}`,
		`{"time": {}, "time": {}}`, `{"": {}}`, `{"x": {"runCmd": 1}}`,
		`{"r": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${HOME}", "X-Key": "k"}}}`,
		`{"r": {"url": "http://127.0.0.1:1/mcp?x=1", "headers": {"A": "${NOPE"}}}`,
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	override := filepath.Join(dir, "catalog.json")
	if err := os.WriteFile(override, []byte(fuzzOverride), 0o644); err != nil {
		f.Fatal(err)
	}
	cat, err := Load(embeddedJSON(f), override)
	if err != nil {
		f.Fatal(err)
	}
	opts := ResolveOptions{Self: "/opt/mcp-gateway", LookPath: allFound}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := Resolve(raw, cat, opts)
		r2, err2 := Resolve(raw, cat, opts)
		if !reflect.DeepEqual(r, r2) || (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
			t.Fatalf("Resolve is not deterministic: %v / %v", err, err2)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidConfig) && !errors.Is(err, ErrNotInstalled) {
				t.Fatalf("error %v matches neither ErrInvalidConfig nor ErrNotInstalled", err)
			}
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		checkResolved(t, r)
	})
}

// checkResolved asserts the invariants every successful Resolve result has.
func checkResolved(t *testing.T, r *Resolved) {
	t.Helper()
	if len(r.Servers) > MaxServers {
		t.Fatalf("%d servers", len(r.Servers))
	}
	if !slices.IsSortedFunc(r.Servers, func(a, b ServerSpec) int { return strings.Compare(a.Name, b.Name) }) {
		t.Fatal("servers not sorted")
	}
	for i, s := range r.Servers {
		if s.Name == "" || (i > 0 && r.Servers[i-1].Name == s.Name) {
			t.Fatalf("empty or repeated name %q", s.Name)
		}
		if s.Kind == KindRemote {
			if len(s.Command) > 0 || s.Shell != "" || s.URL == "" || strings.HasPrefix(s.Name, "github/") {
				t.Fatalf("%s: bad remote spec %+v", s.Name, s)
			}
		} else if (len(s.Command) > 0) == (strings.TrimSpace(s.Shell) != "") {
			t.Fatalf("%s: want exactly one of Command and Shell: %+v", s.Name, s)
		}
		for k, v := range s.Headers {
			if s.Kind != KindRemote || !validToken(k) || !validHeaderValue(v) {
				t.Fatalf("%s: bad header %q", s.Name, k)
			}
		}
		for _, a := range append(slices.Clone(s.Command), s.Shell, s.Install, s.Dir) {
			if strings.ContainsRune(a, 0) {
				t.Fatalf("%s: NUL in argv, shell or dir", s.Name)
			}
		}
		for k, v := range s.Env {
			if !validEnvName(k) || k == tokenEnv || strings.ContainsRune(v, 0) {
				t.Fatalf("%s: bad env %q", s.Name, k)
			}
		}
		switch s.Kind {
		case KindCatalog:
			if len(s.Command) == 0 || s.Command[0] == "" {
				t.Fatalf("%s: catalog server without a command", s.Name)
			}
		case KindGitHub:
			if s.Name != "github/"+s.Owner+"/"+s.Repo || !validGitHubOwner(s.Owner) ||
				!validGitHubRepo(s.Repo) || strings.HasPrefix(s.Repo, ".") || s.Dir != "" {
				t.Fatalf("bad github spec %+v", s)
			}
		case KindLocal:
			if strings.HasPrefix(s.Name, "github/") || (s.Dir != "" && !filepath.IsAbs(s.Dir)) {
				t.Fatalf("bad local spec %+v", s)
			}
		case KindRemote:
		default:
			t.Fatalf("%s: kind %q", s.Name, s.Kind)
		}
	}
}

func FuzzParseCatalog(f *testing.F) {
	f.Add(embeddedJSON(f))
	f.Add([]byte(fuzzOverride))
	f.Add([]byte(`{"servers": {}}`))
	f.Add([]byte(`{"servers": {"x": {"package": {"manager": "builtin", "name": "sandbox"}}}}`))
	f.Add([]byte(`{"servers": {"x": {"command": ["a"], "properties": {"p": {"type": "array", "items": "string", "env": "P"}}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			if c != nil {
				t.Fatal("non-nil catalog with an error")
			}
			return
		}
		names := c.Names()
		if !slices.IsSorted(names) {
			t.Fatal("names not sorted")
		}
		for _, e := range c.Entries() {
			switch e.Package.Manager {
			case ManagerNPM, ManagerPyPI:
				if e.Package.Name == "" || e.Package.Bin == "" {
					t.Fatalf("%s: package %+v", e.Name, e.Package)
				}
			case ManagerBuiltin:
			case ManagerRemote:
				if e.Remote == nil {
					t.Fatalf("%s: remote without url", e.Name)
				}
			case ManagerUnavailable:
				if e.Unavailable == nil {
					t.Fatalf("%s: unavailable without reason", e.Name)
				}
			case ManagerCommand:
				if len(e.Command) == 0 || e.Command[0] == "" {
					t.Fatalf("%s: empty command", e.Name)
				}
			default:
				t.Fatalf("%s: manager %q", e.Name, e.Package.Manager)
			}
			for name, p := range e.Properties {
				ways := 0
				for _, set := range []bool{p.Positional, p.Flag != "", p.Arg != "", p.Env != "", p.Header != "", p.Unused != ""} {
					if set {
						ways++
					}
				}
				if ways != 1 || !validType(p.Type) || (p.Env != "" && (!validEnvName(p.Env) || p.Env == tokenEnv)) {
					t.Fatalf("%s.%s: %+v", e.Name, name, p)
				}
			}
			// Every parsed entry can be resolved without a panic, and the result holds up.
			cfg, _ := json.Marshal(map[string]any{e.Name: map[string]any{}})
			if r, err := Resolve(cfg, c, ResolveOptions{Self: "/gw", LookPath: allFound}); err == nil {
				checkResolved(t, r)
			} else if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("%s: %v", e.Name, err)
			}
		}
		var table, js bytes.Buffer
		if err := c.WriteTable(&table); err != nil {
			t.Fatal(err)
		}
		if err := c.WriteJSON(&js); err != nil {
			t.Fatal(err)
		}
		if !json.Valid(js.Bytes()) {
			t.Fatal("WriteJSON wrote invalid JSON")
		}
	})
}
