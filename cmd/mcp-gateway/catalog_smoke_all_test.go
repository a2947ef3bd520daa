//go:build catalogsmoke

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
)

// TestCatalogSmokeAll tries every npm entry of the catalog the way a sandbox without a
// pre-installed package would: through the gateway, npx downloading the pinned version, with
// dummy values for required properties. It prints a table (key, started, tools) and never fails
// on a server that does not start: many need a real service or credentials. `make
// catalog-smoke` runs it; it downloads a lot and takes minutes. CATALOG_SMOKE_ONLY=a,b narrows
// it to those keys.
func TestCatalogSmokeAll(t *testing.T) {
	cat := embeddedCatalogForTest(t)
	var entries []catalog.Entry
	only := strings.Split(os.Getenv("CATALOG_SMOKE_ONLY"), ",")
	for _, e := range cat.Entries() {
		if e.Package.Manager == catalog.ManagerNPM && (only[0] == "" || contains(only, e.Name)) {
			entries = append(entries, e)
		}
	}
	results := make([]smokeResult, len(entries))
	sem := make(chan struct{}, 3)
	var wg sync.WaitGroup
	for i, e := range entries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			t.Run(e.Name, func(t *testing.T) {
				// Each entry gets an npm cache of its own: npx runs sharing one race on it
				// (servers killed half-installed), and a package cached anywhere on this
				// machine must be downloaded, as in a fresh sandbox.
				env := []string{"npm_config_cache=" + t.TempDir(), "NPM_CONFIG_UPDATE_NOTIFIER=false"}
				// npx downloads into that cache first, so the gateway's npx start below
				// finds the package installed: a download on this shared machine can take
				// longer than the 30 s a server has for its MCP handshake, and the table is
				// about starting, not downloading.
				if reason := npxInstall(e, env); reason != "" {
					results[i] = smokeResult{reason: reason}
					return
				}
				results[i] = smokeStart(t, e, env, 3*time.Minute)
			})
		}()
	}
	wg.Wait()
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tPACKAGE\tSTARTED\tTOOLS\tWHY NOT")
	started := 0
	for i, e := range entries {
		r := results[i]
		mark, tools := "no", "-"
		if r.started {
			mark, tools = "yes", fmt.Sprint(r.tools)
			started++
		}
		ver := e.Package.Version
		if ver == "" {
			ver = "(unpinned)"
		}
		fmt.Fprintf(tw, "%s\t%s@%s\t%s\t%s\t%s\n", e.Name, e.Package.Name, ver, mark, tools, shortReason(r.reason))
	}
	tw.Flush()
	fmt.Printf("%d of %d npm entries started here with dummy credentials\n", started, len(entries))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func shortReason(s string) string {
	if len(s) > 100 {
		return s[:99] + "…"
	}
	return s
}

// npxInstall has npx download and install e's package (`npx -y -p <pkg>@<version> -- true`, the
// same npx cache entry `npx -y <pkg>@<version>` uses) and returns why that failed, or "".
func npxInstall(e catalog.Entry, env []string) string {
	spec := e.Package.Name
	if e.Package.Version != "" {
		spec += "@" + e.Package.Version
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npx", "-y", "-p", spec, "--", "true")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err == nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "npm error") && !strings.HasPrefix(l, "npm error code") && !strings.Contains(l, "A complete log") {
			return "npx install: " + strings.TrimSpace(strings.TrimPrefix(l, "npm error"))
		}
	}
	return fmt.Sprintf("npx install: %v: %s", err, lines[len(lines)-1])
}
