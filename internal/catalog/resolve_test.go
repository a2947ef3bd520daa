package catalog

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// secret is put into every value a test config carries that could be a secret; no error or
// warning may ever contain it.
const secret = "s3cr3t-VALUE"

// lookIn is a LookPath that finds exactly the given executables.
func lookIn(found ...string) func(string) (string, error) {
	return func(name string) (string, error) {
		if slices.Contains(found, name) {
			return "/usr/local/bin/" + name, nil
		}
		return "", exec.ErrNotFound
	}
}

// allFound is a LookPath that finds every executable.
func allFound(name string) (string, error) { return "/usr/local/bin/" + name, nil }

func resolveOK(t *testing.T, cat *Catalog, opts ResolveOptions, config string) *Resolved {
	t.Helper()
	r, err := Resolve([]byte(config), cat, opts)
	if err != nil {
		t.Fatalf("Resolve(%s): %v", config, err)
	}
	return r
}

func TestResolveRejects(t *testing.T) {
	cat := embeddedCatalog(t)
	many := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(`"s%02d": {"runCmd": "x"}`, i)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	tests := []struct {
		name   string
		config string
		want   []string // substrings: the server and the field, at least
	}{
		{"null", `null`, []string{"must be a JSON object", "got null"}},
		{"array", `[{"time": {}}]`, []string{"must be a JSON object", "got array"}},
		{"string", `"time"`, []string{"must be a JSON object", "got string"}},
		{"empty input", ``, []string{"must be a JSON object", "got nothing"}},
		{"invalid JSON", `{"time": {}`, []string{"invalid JSON"}},
		{"trailing garbage", `{"time": {}} x`, []string{"unexpected data after the object"}},
		{"trailing object", `{"time": {}} {}`, []string{"unexpected data after the object"}},
		{"duplicate server", `{"time": {}, "time": {"x": 1}}`, []string{`duplicate key "time"`}},
		{"too many servers", many(65), []string{"65 servers", "at most 64"}},
		{"empty name", `{"": {}}`, []string{"empty name"}},
		{"control character in name", `{"a\u0001b": {"runCmd": "x"}}`, []string{"control characters"}},
		{"entry not object", `{"time": []}`, []string{`server "time"`, "must be a JSON object, got array"}},
		{"entry null", `{"time": null}`, []string{`server "time"`, "got null"}},
		{"entry duplicate field", `{"x": {"runCmd": "a", "runCmd": "b"}}`, []string{`server "x"`, `duplicate key "runCmd"`}},

		{"github two parts", `{"github/acme": {"runCmd": "x"}}`, []string{`server "github/acme"`, "github/<owner>/<repo>"}},
		{"github four parts", `{"github/acme/x/y": {"runCmd": "x"}}`, []string{`server "github/acme/x/y"`, "github/<owner>/<repo>"}},
		{"github empty repo", `{"github/acme/": {"runCmd": "x"}}`, []string{`server "github/acme/"`, "repo"}},
		{"github owner dash", `{"github/-acme/x": {"runCmd": "x"}}`, []string{`server "github/-acme/x"`, `owner "-acme"`}},
		{"github owner too long", `{"github/` + strings.Repeat("a", 40) + `/x": {"runCmd": "x"}}`, []string{"owner"}},
		{"github owner dot", `{"github/../x": {"runCmd": "x"}}`, []string{`owner ".."`}},
		{"github repo dotdot", `{"github/acme/..": {"runCmd": "x"}}`, []string{`server "github/acme/.."`, `repo ".."`}},
		{"github repo dot", `{"github/acme/.": {"runCmd": "x"}}`, []string{`repo "."`}},
		{"github repo hidden", `{"github/acme/.git": {"runCmd": "x"}}`, []string{`repo ".git"`}},
		{"github repo space", `{"github/acme/a b": {"runCmd": "x"}}`, []string{`repo "a b"`}},
		{"github repo backslash", `{"github/acme/a\\b": {"runCmd": "x"}}`, []string{"repo"}},
		{"github no runCmd", `{"github/acme/x": {"installCmd": "npm ci"}}`, []string{`server "github/acme/x": runCmd: is required`}},
		{"github blank runCmd", `{"github/acme/x": {"runCmd": "  "}}`, []string{`server "github/acme/x": runCmd: is empty`}},

		{"runCmd number", `{"x": {"runCmd": 3}}`, []string{`server "x": runCmd: must be a string, got number`}},
		{"runCmd null", `{"x": {"runCmd": null}}`, []string{`server "x": runCmd: must be a string, got null`}},
		{"run_cmd array", `{"x": {"run_cmd": ["` + secret + `"]}}`, []string{`server "x": run_cmd: must be a string, got array`}},
		{"runCmd and run_cmd differ", `{"x": {"runCmd": "a ` + secret + `", "run_cmd": "b ` + secret + `"}}`, []string{`server "x": runCmd:`, "run_cmd", "different values"}},
		{"runCmd NUL", `{"x": {"runCmd": "a\u0000` + secret + `"}}`, []string{`server "x": runCmd:`, "NUL"}},
		{"installCmd boolean", `{"x": {"runCmd": "a", "installCmd": true}}`, []string{`server "x": installCmd: must be a string, got boolean`}},
		{"install_cmd number", `{"github/a/b": {"runCmd": "a", "install_cmd": 1}}`, []string{`server "github/a/b": install_cmd: must be a string, got number`}},
		{"installCmd and install_cmd differ", `{"x": {"runCmd": "a", "installCmd": "` + secret + `1", "install_cmd": "` + secret + `2"}}`, []string{`server "x": installCmd:`, "install_cmd", "different values"}},
		{"cwd relative", `{"x": {"runCmd": "a", "cwd": "srv/` + secret + `"}}`, []string{`server "x": cwd: must be an absolute path`}},
		{"cwd number", `{"x": {"runCmd": "a", "cwd": 7}}`, []string{`server "x": cwd: must be a string, got number`}},

		{"envs array", `{"x": {"runCmd": "a", "envs": ["` + secret + `"]}}`, []string{`server "x": envs: must be an object`, "got array"}},
		{"envs bad name", `{"x": {"runCmd": "a", "envs": {"1KEY": "` + secret + `"}}}`, []string{`server "x": envs:`, `"1KEY"`, "invalid name"}},
		{"envs name with dash", `{"github/a/b": {"runCmd": "a", "envs": {"API-KEY": "` + secret + `"}}}`, []string{`server "github/a/b": envs:`, `"API-KEY"`}},
		{"envs empty name", `{"x": {"runCmd": "a", "envs": {"": "` + secret + `"}}}`, []string{`server "x": envs:`, "invalid name"}},
		{"envs number value", `{"x": {"runCmd": "a", "envs": {"API_KEY": 12345}}}`, []string{`server "x": envs:`, `"API_KEY"`, "must be a string, got number"}},
		{"envs object value", `{"x": {"runCmd": "a", "envs": {"API_KEY": {"v": "` + secret + `"}}}}`, []string{`"API_KEY"`, "got object"}},
		{"envs null value", `{"x": {"runCmd": "a", "envs": {"API_KEY": null}}}`, []string{`"API_KEY"`, "got null"}},
		{"envs NUL value", `{"x": {"runCmd": "a", "envs": {"API_KEY": "a\u0000` + secret + `"}}}`, []string{`"API_KEY"`, "NUL"}},
		{"envs token", `{"x": {"runCmd": "a", "envs": {"GATEWAY_ACCESS_TOKEN": "` + secret + `"}}}`, []string{`server "x": envs:`, "GATEWAY_ACCESS_TOKEN", "reserved"}},
		{"envs duplicate", `{"x": {"runCmd": "a", "envs": {"K": "` + secret + `", "K": "` + secret + `"}}}`, []string{`server "x": envs:`, `duplicate key "K"`}},
		{"envs on catalog server", `{"time": {"envs": {"TZ": 5}}}`, []string{`server "time": envs:`, `"TZ"`}},

		{"filesystem without paths", `{"filesystem": {}}`, []string{`server "filesystem": paths: is required (a list of strings)`}},
		{"filesystem null paths", `{"filesystem": {"paths": null}}`, []string{`server "filesystem": paths: is required`}},
		{"filesystem paths string", `{"filesystem": {"paths": "/` + secret + `"}}`, []string{`server "filesystem": paths: must be a list of strings, got string`}},
		{"filesystem paths number element", `{"filesystem": {"paths": ["/a", 1]}}`, []string{`server "filesystem": paths: element 1: must be a string, got number`}},
		{"filesystem empty paths", `{"filesystem": {"paths": []}}`, []string{`server "filesystem": paths: must not be empty`}},
		{"arxiv storagePath number", `{"arxiv": {"storagePath": 1}}`, []string{`server "arxiv": storagePath: must be a string, got number`}},

		{"unknown server", `{"foo": {}}`, []string{`unknown server "foo": not in the catalog and no runCmd given (`, "servers in the catalog: `mcp-gateway catalog <word>` searches them)"}},
		{"unknown server typo", `{"sequential-thinking": {}}`, []string{`unknown server "sequential-thinking"`, `did you mean "sequentialthinking"?`}},
		{"unknown server with installCmd only", `{"foo": {"installCmd": "` + secret + `"}}`, []string{`unknown server "foo"`}},
		{"first error in sorted order", `{"zeta": {}, "alpha": {}}`, []string{`unknown server "alpha"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Resolve([]byte(tt.config), cat, ResolveOptions{LookPath: allFound})
			if err == nil {
				t.Fatalf("Resolve succeeded with %+v, want an error", r)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("errors.Is(%v, ErrInvalidConfig) = false", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error leaks a config value: %q", err)
			}
		})
	}
}

func TestConfigErrorShape(t *testing.T) {
	_, err := Resolve([]byte(`{"github/acme/x": {}}`), nil, ResolveOptions{})
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %T %v, want *ConfigError", err, err)
	}
	if ce.Server != "github/acme/x" || ce.Field != "runCmd" {
		t.Errorf("ConfigError{Server: %q, Field: %q}", ce.Server, ce.Field)
	}
	if got, want := err.Error(), `server "github/acme/x": runCmd: is required for a GitHub server`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if errors.Unwrap(err) == nil {
		t.Error("Unwrap() = nil")
	}

	_, err = Resolve([]byte(`{"nope": {}}`), nil, ResolveOptions{})
	var ue *UnknownServerError
	if !errors.As(err, &ue) || ue.Server != "nope" || !strings.Contains(err.Error(), "the catalog is empty") {
		t.Errorf("nil catalog: err = %v", err)
	}
}

func TestResolveCatalogCommands(t *testing.T) {
	cat := embeddedCatalog(t)
	tests := []struct {
		name     string
		config   string
		lookPath func(string) (string, error)
		want     []string
	}{
		{"npm bin installed", `{"filesystem": {"paths": ["/data", "/tmp"]}}`, lookIn("mcp-server-filesystem", "npx"),
			[]string{"mcp-server-filesystem", "/data", "/tmp"}},
		{"npm through npx", `{"filesystem": {"paths": ["/data"]}}`, lookIn("npx"),
			[]string{"npx", "-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "/data"}},
		{"npm fixed args", `{"everything": {}}`, lookIn("mcp-server-everything"),
			[]string{"mcp-server-everything", "stdio"}},
		{"npm fixed args through npx", `{"everything": {}}`, lookIn("npx"),
			[]string{"npx", "-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"}},
		{"pypi bin installed", `{"time": {}}`, lookIn("mcp-server-time", "uvx"),
			[]string{"mcp-server-time"}},
		{"pypi through uvx", `{"time": {}}`, lookIn("uvx"),
			[]string{"uvx", "mcp-server-time@2026.10.19"}},
		{"pypi flag", `{"arxiv": {"storagePath": "/papers"}}`, lookIn("arxiv-mcp-server"),
			[]string{"arxiv-mcp-server", "--storage-path", "/papers"}},
		{"pypi flag through uvx", `{"arxiv": {"storagePath": "/papers"}}`, lookIn("uvx"),
			[]string{"uvx", "arxiv-mcp-server@0.8.2", "--storage-path", "/papers"}},
		{"optional property null", `{"arxiv": {"storagePath": null}}`, lookIn("arxiv-mcp-server"),
			[]string{"arxiv-mcp-server"}},
		{"builtin", `{"sandbox": {}}`, lookIn(),
			[]string{"/opt/mcp-gateway", "builtin", "sandbox"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := resolveOK(t, cat, ResolveOptions{Self: "/opt/mcp-gateway", LookPath: tt.lookPath}, tt.config)
			if len(r.Servers) != 1 {
				t.Fatalf("servers = %+v", r.Servers)
			}
			s := r.Servers[0]
			if s.Kind != KindCatalog || s.Shell != "" || !slices.Equal(s.Command, tt.want) {
				t.Errorf("spec = %+v, want Command %q", s, tt.want)
			}
		})
	}
}

func TestResolvePyPIBinDiffersFromName(t *testing.T) {
	cat := mustParse(t, `{"servers": {"w": {"package": {"manager": "pypi", "name": "weather-pkg", "bin": "weather-mcp"}}}}`)
	r := resolveOK(t, cat, ResolveOptions{LookPath: lookIn("uvx")}, `{"w": {}}`)
	if want := []string{"uvx", "--from", "weather-pkg", "weather-mcp"}; !slices.Equal(r.Servers[0].Command, want) {
		t.Errorf("Command = %q, want %q", r.Servers[0].Command, want)
	}
}

func TestResolveNotInstalled(t *testing.T) {
	cat := embeddedCatalog(t)
	for config, runner := range map[string]string{`{"time": {}}`: "uvx", `{"memory": {}}`: "npx"} {
		_, err := Resolve([]byte(config), cat, ResolveOptions{LookPath: lookIn()})
		if !errors.Is(err, ErrNotInstalled) || errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: err = %v, want ErrNotInstalled only", config, err)
			continue
		}
		name := strings.Split(config, `"`)[1]
		for _, w := range []string{fmt.Sprintf("server %q", name), runner, "mcp-gateway pull " + name} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not contain %q", err, w)
			}
		}
	}
}

func TestResolveBuiltinDefaultsToOwnExecutable(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	r := resolveOK(t, embeddedCatalog(t), ResolveOptions{}, `{"sandbox": {}}`)
	if want := []string{self, "builtin", "sandbox"}; !slices.Equal(r.Servers[0].Command, want) {
		t.Errorf("Command = %q, want %q", r.Servers[0].Command, want)
	}
}

// TestResolvePropertyMapping covers every type and every way a value reaches a server.
func TestResolvePropertyMapping(t *testing.T) {
	cat := mustParse(t, `{"servers": {"tool": {
		"command": ["/bin/tool", "sub"], "args": ["--fixed"],
		"properties": {
			"dirs":    {"type": "array", "items": "string", "positional": true},
			"ratio":   {"type": "number", "positional": true},
			"on":      {"type": "boolean", "positional": true},
			"verbose": {"type": "boolean", "flag": "--verbose"},
			"quiet":   {"type": "boolean", "flag": "--quiet"},
			"tag":     {"type": "array", "items": "string", "flag": "--tag"},
			"level":   {"type": "integer", "flag": "--level"},
			"mode":    {"type": "string", "flag": "--mode"},
			"conf":    {"type": "object", "flag": "--conf"},
			"apiKey":  {"type": "string", "env": "TOOL_API_KEY"},
			"opts":    {"type": "object", "env": "TOOL_OPTS"},
			"ports":   {"type": "array", "items": "integer", "env": "TOOL_PORTS"},
			"debug":   {"type": "boolean", "env": "TOOL_DEBUG"},
			"scale":   {"type": "number", "env": "TOOL_SCALE"}
		}}}}`)
	config := `{"tool": {
		"dirs": ["/a", "/b c"], "ratio": 0.5, "on": false,
		"verbose": true, "quiet": false, "tag": ["x", "y"], "level": -3, "mode": null,
		"conf": {"k": [1, 2]},
		"apiKey": "` + secret + `", "opts": {"a": 1, "b": "two"}, "ports": [80, 443], "debug": true, "scale": 1e3,
		"envs": {"EXTRA": "e"}
	}}`
	r := resolveOK(t, cat, ResolveOptions{}, config)
	s := r.Servers[0]
	wantCmd := []string{"/bin/tool", "sub", "--fixed",
		"--conf", `{"k":[1,2]}`, "--level", "-3", "--tag", "x", "--tag", "y", "--verbose", // flags by property name
		"/a", "/b c", "false", "0.5", // positionals by property name: dirs, on, ratio
	}
	if !slices.Equal(s.Command, wantCmd) {
		t.Errorf("Command =\n %q\nwant\n %q", s.Command, wantCmd)
	}
	wantEnv := map[string]string{
		"TOOL_API_KEY": secret, "TOOL_OPTS": `{"a":1,"b":"two"}`, "TOOL_PORTS": "[80,443]",
		"TOOL_DEBUG": "true", "TOOL_SCALE": "1e3", "EXTRA": "e",
	}
	if !reflect.DeepEqual(s.Env, wantEnv) {
		t.Errorf("Env = %v, want %v", s.Env, wantEnv)
	}
	if len(r.Warnings) != 0 {
		t.Errorf("warnings = %q", r.Warnings)
	}

	if want := []string{"/a", "/b c", "false", "0.5", "-3", "x", "y", `{"k":[1,2]}`}; !sameSet(s.ArgSecrets, want) {
		t.Errorf("ArgSecrets = %q, want %q", s.ArgSecrets, want)
	}

	rejects := []struct{ config, want string }{
		{`{"tool": {"level": 1.5}}`, `server "tool": level: must be an integer, got a number that is not a 64-bit integer`},
		{`{"tool": {"level": "3"}}`, `server "tool": level: must be an integer, got string`},
		{`{"tool": {"ratio": "0.5"}}`, `server "tool": ratio: must be a number, got string`},
		{`{"tool": {"verbose": "yes"}}`, `server "tool": verbose: must be true or false, got string`},
		{`{"tool": {"conf": ["` + secret + `"]}}`, `server "tool": conf: must be a JSON object, got array`},
		{`{"tool": {"conf": {"a": 1, "a": 2}}}`, `server "tool": conf: must be a JSON object, got an invalid object (duplicate key "a")`},
		{`{"tool": {"ports": [80, "` + secret + `"]}}`, `server "tool": ports: element 1: must be an integer, got string`},
		{`{"tool": {"mode": "a\u0000` + secret + `"}}`, `server "tool": mode: must be a string, got a string containing a NUL byte`},
		{`{"tool": {"apiKey": "` + secret + `", "envs": {"TOOL_API_KEY": "` + secret + `"}}}`, `server "tool": envs: variable "TOOL_API_KEY" is also set by a property`},
	}
	for _, rj := range rejects {
		_, err := Resolve([]byte(rj.config), cat, ResolveOptions{})
		if err == nil || err.Error() != rj.want || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Resolve(%s)\n err = %v\nwant %s", rj.config, err, rj.want)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("error leaks a value: %v", err)
		}
	}
}

func TestResolveGitHubAndLocal(t *testing.T) {
	cat := embeddedCatalog(t)
	r := resolveOK(t, cat, ResolveOptions{LookPath: allFound}, `{
		"github/acme/weather-mcp": {"installCmd": "npm ci", "runCmd": "node dist/index.js", "envs": {"WEATHER_API_KEY": "`+secret+`"}},
		"github/a-b/x.y_z": {"run_cmd": "python -m x", "install_cmd": "pip install ."},
		"github/c/d": {"runCmd": "same", "run_cmd": "same"},
		"local": {"runCmd": "my-server --stdio", "cwd": "/srv/../srv/app/", "envs": {"_A1": ""}},
		"time": {"runCmd": "my-time"}
	}`)
	want := []ServerSpec{
		{Name: "github/a-b/x.y_z", Kind: KindGitHub, Shell: "python -m x", Install: "pip install .", Owner: "a-b", Repo: "x.y_z"},
		{Name: "github/acme/weather-mcp", Kind: KindGitHub, Shell: "node dist/index.js", Install: "npm ci", Owner: "acme", Repo: "weather-mcp",
			Env: map[string]string{"WEATHER_API_KEY": secret}},
		{Name: "github/c/d", Kind: KindGitHub, Shell: "same", Owner: "c", Repo: "d"},
		{Name: "local", Kind: KindLocal, Shell: "my-server --stdio", Dir: "/srv/app", Env: map[string]string{"_A1": ""}},
		{Name: "time", Kind: KindLocal, Shell: "my-time"},
	}
	if !reflect.DeepEqual(r.Servers, want) {
		t.Errorf("Servers =\n%+v\nwant\n%+v", r.Servers, want)
	}
	if !slices.ContainsFunc(r.Warnings, func(w string) bool {
		return strings.Contains(w, `server "time"`) && strings.Contains(w, "catalog entry")
	}) {
		t.Errorf("no warning that runCmd shadows the catalog entry: %q", r.Warnings)
	}
}

func TestResolveWarnings(t *testing.T) {
	cat := embeddedCatalog(t)
	r := resolveOK(t, cat, ResolveOptions{LookPath: allFound}, `{
		"time": {"timezone": "`+secret+`", "installCmd": "x"},
		"github/a/b": {"runCmd": "x", "cwd": "/srv", "colour": "`+secret+`"},
		"loc": {"runCmd": "x", "args": ["`+secret+`"]}
	}`)
	want := []string{
		`server "github/a/b": unknown field "colour" ignored`,
		`server "github/a/b": unknown field "cwd" ignored`,
		`server "loc": unknown field "args" ignored`,
		`server "time": unknown property "installCmd" ignored`,
		`server "time": unknown property "timezone" ignored`,
	}
	if !slices.Equal(r.Warnings, want) {
		t.Errorf("Warnings =\n%q\nwant\n%q", r.Warnings, want)
	}
	if len(r.Servers) != 3 {
		t.Errorf("servers = %+v", r.Servers)
	}

	empty := resolveOK(t, cat, ResolveOptions{}, ` { } `)
	if len(empty.Servers) != 0 || len(empty.Warnings) != 1 || !strings.Contains(empty.Warnings[0], "no servers") {
		t.Errorf("{} resolved to %+v", empty)
	}
}

func TestResolveSortedAndLimit(t *testing.T) {
	cat := embeddedCatalog(t)
	r := resolveOK(t, cat, ResolveOptions{LookPath: allFound}, `{"time": {}, "b": {"runCmd": "x"}, "a": {"runCmd": "y"}, "fetch": {}}`)
	var names []string
	for _, s := range r.Servers {
		names = append(names, s.Name)
	}
	if want := []string{"a", "b", "fetch", "time"}; !slices.Equal(names, want) {
		t.Errorf("names = %v, want %v", names, want)
	}

	parts := make([]string, MaxServers)
	for i := range parts {
		parts[i] = fmt.Sprintf(`"s%02d": {"runCmd": "x"}`, i)
	}
	r = resolveOK(t, cat, ResolveOptions{}, "{"+strings.Join(parts, ",")+"}")
	if len(r.Servers) != MaxServers {
		t.Errorf("%d servers, want %d", len(r.Servers), MaxServers)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestResolveArgTemplateAndFormat covers the destinations E2B entries add: one argument made
// from a template, an env value and a header built from a format.
// TestResolveTemplateBraces: only a brace, a name and a closing brace is a placeholder; "{}" and
// a "{name" the template ends in are text, kept as they are, beside the placeholders filled.
func TestResolveTemplateBraces(t *testing.T) {
	cat := mustParse(t, `{"servers": {
		"t": {"command": ["/bin/t"], "env": {"EMPTY": "{} {key}", "OPEN": "{key} {tail", "BRACE": "{key}{"},
			"properties": {"key": {"type": "string", "flag": "--key"}, "lvl": {"type": "string", "arg": "--lvl={lvl}{x"}}}
	}}`)
	s := resolveOK(t, cat, ResolveOptions{}, `{"t": {"key": "k", "lvl": "v"}}`).Servers[0]
	if want := map[string]string{"EMPTY": "{} k", "OPEN": "k {tail", "BRACE": "k{"}; !reflect.DeepEqual(s.Env, want) {
		t.Errorf("Env = %v, want %v", s.Env, want)
	}
	if want := []string{"/bin/t", "--key", "k", "--lvl=v{x"}; !slices.Equal(s.Command, want) {
		t.Errorf("Command = %q, want %q", s.Command, want)
	}
}

func TestResolveArgTemplateAndFormat(t *testing.T) {
	cat := mustParse(t, `{"servers": {
		"t": {"command": ["/bin/t"], "env": {"MODE": "stdio", "CONF": "{\"key\": \"{key}\"}"},
			"properties": {
				"level": {"type": "string", "arg": "--level={level}"},
				"key":   {"type": "string", "env": "T_KEY", "format": "token {key}"},
				"dir":   {"type": "string", "unused": "Docker only"}
			}},
		"r": {"remote": {"url": "https://mcp.example.com/mcp"},
			"properties": {"key": {"type": "string", "required": true, "header": "x-api-key", "format": "Key {key}"}}}
	}}`)
	s := resolveOK(t, cat, ResolveOptions{}, `{"t": {"level": "admin", "key": "`+secret+`", "dir": "/x"}}`).Servers[0]
	if want := []string{"/bin/t", "--level=admin"}; !slices.Equal(s.Command, want) {
		t.Errorf("Command = %q, want %q", s.Command, want)
	}
	if want := map[string]string{"MODE": "stdio", "CONF": `{"key": "` + secret + `"}`, "T_KEY": "token " + secret}; !reflect.DeepEqual(s.Env, want) {
		t.Errorf("Env = %v, want %v", s.Env, want)
	}
	if !slices.Equal(s.PublicEnv, []string{"MODE"}) || !slices.Equal(s.ArgSecrets, []string{"admin"}) {
		t.Errorf("PublicEnv = %q, ArgSecrets = %q", s.PublicEnv, s.ArgSecrets)
	}
	// Without the property it embeds, a templated variable is left out.
	if s := resolveOK(t, cat, ResolveOptions{}, `{"t": {}}`).Servers[0]; !reflect.DeepEqual(s.Env, map[string]string{"MODE": "stdio"}) {
		t.Errorf("Env without key = %v", s.Env)
	}
	s = resolveOK(t, cat, ResolveOptions{}, `{"r": {"key": "`+secret+`"}}`).Servers[0]
	if s.Kind != KindRemote || s.Headers["X-Api-Key"] != "Key "+secret {
		t.Errorf("remote spec = %+v", s)
	}
	if _, err := Resolve([]byte(`{"r": {"key": "a\nb"}}`), cat, ResolveOptions{}); err == nil || !strings.Contains(err.Error(), `server "r": key: contains a line break`) {
		t.Errorf("header with a newline: %v", err)
	}
	// envs override a constant (and the value is then a secret like any envs value), not a
	// variable that carries a property.
	s = resolveOK(t, cat, ResolveOptions{}, `{"t": {"envs": {"MODE": "`+secret+`"}}}`).Servers[0]
	if s.Env["MODE"] != secret || len(s.PublicEnv) != 0 {
		t.Errorf("envs over a constant: Env = %v, PublicEnv = %q", s.Env, s.PublicEnv)
	}
	if _, err := Resolve([]byte(`{"t": {"key": "k1234", "envs": {"CONF": "x"}}}`), cat, ResolveOptions{}); err == nil || !strings.Contains(err.Error(), `variable "CONF" is set by the catalog entry from a property`) {
		t.Errorf("envs overriding a templated variable: %v", err)
	}
}
