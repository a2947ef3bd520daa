package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
)

// runCatalog lists the servers the gateway knows by name.
func runCatalog(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp-gateway catalog", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON for machines")
	override := fs.String("catalog", defaultCatalogFile, "catalog override file (adds or replaces entries)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &usageError{err.Error()}
	}
	set := &settings{CatalogFile: *override}
	cat, err := set.loadCatalog()
	if err != nil {
		return fmt.Errorf("load catalog: %w", err)
	}
	if *asJSON {
		return cat.WriteJSON(stdout)
	}
	return cat.WriteTable(stdout)
}

// runPull pre-installs catalog servers, typically in a template image, so
// that the first start does not download them against the startup timeout.
func runPull(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp-gateway pull", flag.ContinueOnError)
	fs.SetOutput(stderr)
	override := fs.String("catalog", defaultCatalogFile, "catalog override file (adds or replaces entries)")
	timeout := fs.Duration("timeout", catalog.DefaultPullTimeout, "how long one server's install may take before it is killed and fails")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &usageError{err.Error()}
	}
	if *timeout <= 0 {
		return &usageError{fmt.Sprintf("--timeout must be positive, got %s", *timeout)}
	}
	if fs.NArg() == 0 {
		return &usageError{"pull needs at least one server name (see 'mcp-gateway catalog')"}
	}
	set := &settings{CatalogFile: *override}
	cat, err := set.loadCatalog()
	if err != nil {
		return fmt.Errorf("load catalog: %w", err)
	}
	steps, err := cat.PullPlan(fs.Args())
	if err != nil {
		return err
	}
	for i := range steps {
		steps[i].Timeout = *timeout
	}
	return catalog.Pull(ctx, steps, stdout, stderr)
}
