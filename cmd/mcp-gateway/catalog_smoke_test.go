package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpgateway "github.com/mcp-gateway/mcp-gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
)

// smokeSample are npm catalog entries that start with made-up credentials and list their tools
// without reaching their service. test/ts/package.json pins each at the catalog's version, so
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
	reason  string // why it did not start: the launch's message, first line
}

// smokeStart launches a gateway with catalog entry e alone, its required properties filled with
// dummies, and counts the tools the gateway serves.
func smokeStart(t *testing.T, e catalog.Entry, env []string, startup time.Duration) smokeResult {
	t.Helper()
	sb := newTestbox(t)
	sb.env = append(sb.env, env...)
	cfg := mcpConfig(t, map[string]any{e.Name: dummyProperties(t, e)})
	res := sb.launch(cfg, "--startup-timeout", startup.String())
	if res.code != 0 {
		msg := strings.TrimSpace(res.stderr)
		msg, _, _ = strings.Cut(msg, "\n")
		return smokeResult{reason: msg}
	}
	defer sb.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := sb.connect(ctx, nil)
	return smokeResult{started: true, tools: len(toolNames(t, ctx, cs))}
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
