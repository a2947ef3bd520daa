package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
)

// runCatalog lists the servers the gateway knows by name, or those matching a search word.
func runCatalog(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp-gateway catalog", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: mcp-gateway catalog [--json] [--catalog FILE] [name|word]   (all servers, one whole, or those matching word)\n\nFlags:\n")
		fs.PrintDefaults()
	}
	asJSON := fs.Bool("json", false, "print JSON for machines: every field, with properties and where they go")
	override := fs.String("catalog", defaultCatalogFile, "catalog override file (adds or replaces entries)")
	// The word may come before or after the flags: `catalog notion --json` reads naturally.
	var words []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			return &usageError{err.Error()}
		}
		if fs.NArg() == 0 {
			break
		}
		words = append(words, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(words) > 1 {
		return &usageError{"catalog takes at most one search word"}
	}
	set := &settings{CatalogFile: *override}
	cat, err := set.loadCatalog()
	if err != nil {
		return fmt.Errorf("load catalog: %w", err)
	}
	if len(words) == 1 && !*asJSON {
		if _, ok := cat.Lookup(words[0]); ok {
			if err := cat.WriteEntry(stdout, words[0]); err != nil {
				return err
			}
			others := slices.DeleteFunc(cat.Search(words[0]).Names(), func(n string) bool { return n == words[0] })
			if len(others) == 0 {
				return nil
			}
			_, err := fmt.Fprintf(stdout, "\nalso matching %q: %s\n", words[0], strings.Join(others, ", "))
			return err
		}
	}
	if len(words) == 1 {
		cat = cat.Search(words[0])
		if len(cat.Names()) == 0 && !*asJSON {
			_, err := fmt.Fprintf(stdout, "no catalog server matches %q\n", words[0])
			return err
		}
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
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: mcp-gateway pull [--catalog FILE] [--timeout D] <name>...   (pre-install catalog servers)\n\nFlags:\n")
		fs.PrintDefaults()
	}
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
