package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpgateway "github.com/mcp-gateway/mcp-gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// smokeSample are npm catalog entries that start with made-up credentials and list their tools
// without reaching their service. circleci's required "url" is its API address (a property, not
// a remote MCP server), so it also covers that rule end to end. test/ts/package.json pins each at the catalog's version, so
// `npm ci` there installs exactly what the catalog runs.
var smokeSample = []string{"airtable", "brave", "circleci", "notion", "sequentialthinking"}

// TestCatalogNPMSample starts a sample of E2B catalog entries through the real gateway, from
// the bins test/ts installs (as `mcp-gateway pull` would in a template), with dummy values for
// their required properties, and lists their tools through the gateway.
func TestCatalogNPMSample(t *testing.T) {
	ts := tsHarness(t)
	cat := embeddedCatalogForTest(t)
	bin := filepath.Join(ts, "node_modules", ".bin")
	lock := readLockVersions(t, filepath.Join(ts, "package-lock.json"))
	for _, key := range smokeSample {
		t.Run(key, func(t *testing.T) {
			e, ok := cat.Lookup(key)
			if !ok || e.Package.Manager != catalog.ManagerNPM {
				t.Fatalf("%s: not an npm catalog entry: %+v", key, e.Package)
			}
			// The installed version is the catalog's pin, and its bin is where the gateway looks,
			// so the gateway starts it without npx downloading anything.
			if got := lock[e.Package.Name]; got != e.Package.Version {
				t.Fatalf("test/ts installs %s %q, the catalog pins %q", e.Package.Name, got, e.Package.Version)
			}
			if _, err := os.Stat(filepath.Join(bin, e.Package.Bin)); err != nil {
				t.Fatalf("bin %s not installed: %v", e.Package.Bin, err)
			}
			r := smokeStart(t, e, []string{"PATH=" + bin + ":" + os.Getenv("PATH")}, 50*time.Second)
			if !r.started {
				t.Fatalf("%s did not start: %s", key, r.reason)
			}
			if r.tools == 0 {
				t.Fatalf("%s started with no tools", key)
			}
			if len(r.leaked) > 0 {
				t.Errorf("%s: property values reached the gateway log: %q", key, r.leaked)
			}
			t.Logf("%s %s: %d tools", key, e.Package.Version, r.tools)
		})
	}
}

func embeddedCatalogForTest(t *testing.T) *catalog.Catalog {
	t.Helper()
	cat, err := catalog.Parse(mcpgateway.CatalogJSON)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// readLockVersions maps each package a package-lock.json installs at the top of node_modules
// to its version.
func readLockVersions(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(data, &lock); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string)
	for p, v := range lock.Packages {
		if name, ok := strings.CutPrefix(p, "node_modules/"); ok && !strings.Contains(name, "/node_modules/") {
			out[name] = v.Version
		}
	}
	return out
}

// smokeResult is what starting one catalog entry through the gateway gave.
type smokeResult struct {
	started bool
	tools   int
	reason  string   // why it did not start: the launch's message, first line
	leaked  []string // dummy property values found in the gateway's log
}

// smokeStart launches a gateway with catalog entry e alone, its required properties filled with
// dummies, and counts the tools the gateway serves.
func smokeStart(t *testing.T, e catalog.Entry, env []string, startup time.Duration) smokeResult {
	t.Helper()
	sb := newTestbox(t)
	sb.env = append(sb.env, env...)
	props := dummyProperties(t, e)
	cfg := mcpConfig(t, map[string]any{e.Name: props})
	res := sb.launch(cfg, "--startup-timeout", startup.String())
	if res.code != 0 {
		var msg string
		for _, line := range strings.Split(strings.TrimSpace(res.stderr), "\n") {
			if !strings.HasPrefix(line, "mcp-gateway: warning:") {
				msg = line
				break
			}
		}
		return smokeResult{reason: msg}
	}
	defer sb.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := sb.connect(ctx, nil)
	r := smokeResult{started: true, tools: len(toolNames(t, ctx, cs))}
	log := sb.log()
	for _, v := range props {
		if s, ok := v.(string); ok && strings.HasPrefix(s, "dummy-") && strings.Contains(log, s) {
			r.leaked = append(r.leaked, s)
		}
	}
	return r
}

// dummyProperties gives every required property of e a made-up value of its type: a directory
// for paths, a closed local port for addresses (so a server that does reach out fails fast),
// and a placeholder string for keys and the rest.
func dummyProperties(t *testing.T, e catalog.Entry) map[string]any {
	t.Helper()
	out := map[string]any{}
	for name, p := range e.Properties {
		if !p.Required {
			continue
		}
		lower := strings.ToLower(name)
		switch p.Type {
		case catalog.TypeArray:
			out[name] = []string{t.TempDir()}
		case catalog.TypeBoolean:
			out[name] = false
		case catalog.TypeInteger, catalog.TypeNumber:
			out[name] = 1
		case catalog.TypeObject:
			out[name] = map[string]any{}
		default:
			switch {
			case strings.Contains(lower, "url") || strings.Contains(lower, "endpoint"):
				out[name] = "http://127.0.0.1:9"
			case strings.Contains(lower, "host"):
				out[name] = "127.0.0.1"
			case strings.Contains(lower, "path") || strings.Contains(lower, "dir"):
				out[name] = t.TempDir()
			case strings.Contains(lower, "email"):
				out[name] = "smoke@example.com"
			default:
				out[name] = "dummy-" + name + "-0123456789"
			}
		}
	}
	return out
}

// TestLaunchDockerOnlyKey: an E2B key that only runs as a Docker image fails the launch at
// validation, before any server starts, with a message naming the key, why, and how to run it
// anyway; nothing is left running.
func TestLaunchDockerOnlyKey(t *testing.T) {
	sb := newTestbox(t)
	res := sb.launch(mcpConfig(t, map[string]any{
		"memory":         map[string]any{},
		"githubOfficial": map[string]any{"githubPersonalAccessToken": "ghp-dummy-0123456789"},
	}))
	if res.code == 0 {
		t.Fatalf("launch with a Docker-only key succeeded: %s", res.stdout)
	}
	for _, want := range []string{`server "githubOfficial" cannot start here`, "Docker", `"github/github/github-mcp-server"`, "runCmd"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
		}
	}
	if strings.Contains(res.stderr+sb.log(), "ghp-dummy-0123456789") {
		t.Error("the property value reached the message or the log")
	}
	if pid := sb.pid(); pid != 0 && alive(pid) {
		t.Errorf("a gateway (pid %d) is running after a failed validation", pid)
	}
	if _, err := os.Stat(sb.tokenFile); err == nil {
		t.Error("token file written for a config that failed validation")
	}
}

// TestCatalogCommand: `mcp-gateway catalog <word>` lists matching entries with their start
// kind; --json gives properties and where each goes.
func TestCatalogCommand(t *testing.T) {
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(gatewayBin, append([]string{"catalog"}, args...)...).Output()
		if err != nil {
			t.Fatalf("catalog %v: %v", args, err)
		}
		return string(out)
	}
	table := run("kube")
	for _, want := range []string{"\nkubectl ", "\nkubernetes ", "unavailable", "START", "PROPERTIES"} {
		if !strings.Contains(table, want) {
			t.Errorf("catalog kube lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "\nbrave ") {
		t.Errorf("catalog kube lists brave:\n%s", table)
	}
	// A word that is also a name shows that entry, then names the other matches.
	if one := run("github"); !strings.Contains(one, "name:        github\n") || !strings.Contains(one, `also matching "github": `) ||
		!strings.Contains(one, "githubOfficial") {
		t.Errorf("catalog github:\n%s", one)
	}
	// An exact name shows that entry whole, where the table cuts it short.
	if one := run("filesystem"); !strings.Contains(one, "runs:        npx @modelcontextprotocol/server-filesystem@") ||
		!strings.Contains(one, "paths*: a list of strings, positional argument") {
		t.Errorf("catalog filesystem:\n%s", one)
	}
	var entries []catalog.Entry
	if err := json.Unmarshal([]byte(run("close", "--json")), &entries); err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Package.Manager != catalog.ManagerRemote || entries[0].Remote == nil ||
		entries[0].Properties["apiKey"].Header != "Authorization" || entries[0].Properties["apiKey"].Format != "Bearer {apiKey}" {
		t.Errorf("catalog close --json = %+v", entries)
	}
	if err := json.Unmarshal([]byte(run("--json")), &entries); err != nil || len(entries) < 265 {
		t.Errorf("catalog --json: %d entries, %v", len(entries), err)
	}
	if out := run("no-such-word-anywhere"); !strings.Contains(out, `no catalog server matches "no-such-word-anywhere"`) {
		t.Errorf("catalog with a word nothing matches: %q", out)
	}
}

// TestCatalogArgumentPropertyRedacted: a catalog property passed as an argument (for servers
// that read a key nowhere else) is masked in the log like an env value; a constant env value
// of the entry and a "public" property (a directory) are not. The entry comes from the
// template's catalog override, as a template author would add one.
func TestCatalogArgumentPropertyRedacted(t *testing.T) {
	sb := newTestbox(t)
	argv, env := fixture.Command(fixture.Options{Name: "argserver", Tools: []string{"echo"}})
	// The shell prints its first argument and the constant to stderr (which the gateway logs),
	// then becomes the fixture.
	script := `echo "token=$1 dir=$2 mode=$MODE_CONST" >&2; exec env ` + strings.Join(env, " ") + ` "$0" ` + strings.Join(argv[1:], " ")
	override := map[string]any{"servers": map[string]any{"argserver": map[string]any{
		"description": "prints its argument",
		"command":     []string{"/bin/sh", "-c", script, argv[0]},
		"env":         map[string]string{"MODE_CONST": "stdio-constant"},
		"properties": map[string]any{
			"authToken": map[string]any{"type": "string", "required": true, "positional": true},
			"dir":       map[string]any{"type": "string", "required": true, "positional": true, "public": true},
		},
	}}}
	if err := os.MkdirAll(filepath.Dir(sb.catalog), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(override)
	if err := os.WriteFile(sb.catalog, b, 0o644); err != nil {
		t.Fatal(err)
	}
	sb.mustLaunch(`{"argserver": {"authToken": "arg-secret-0123456789", "dir": "/nonexistent-dir"}}`)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(sb.log(), "token=") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	log := sb.log()
	if !strings.Contains(log, "token=[REDACTED]") || strings.Contains(log, "arg-secret-0123456789") {
		t.Errorf("argument property not masked in the log:\n%s", log)
	}
	if !strings.Contains(log, "mode=stdio-constant") {
		t.Errorf("constant env value masked or missing:\n%s", log)
	}
	// A public property (a directory to serve) is no secret: an error about it must name it.
	if !strings.Contains(log, "dir=/nonexistent-dir") {
		t.Errorf("public property masked or missing:\n%s", log)
	}
}
