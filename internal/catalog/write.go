package catalog

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteTable writes the catalog for people (`mcp-gateway catalog`): one aligned row per entry
// with NAME, START (npm, pypi, remote, unavailable, builtin, command), RUNS, PROPERTIES
// (required ones marked with '*', those not passed through the environment with where they go
// instead) and DESCRIPTION, cut to one short line.
func (c *Catalog) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTART\tRUNS\tPROPERTIES\tDESCRIPTION")
	for _, e := range c.Entries() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.Name, e.Package.Manager, runs(e), propertyList(e), shorten(e.Description, maxDescription))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write catalog table: %w", err)
	}
	if _, err := fmt.Fprintln(w, "* required property; (argument): the server reads it only from its command line, which other processes in the sandbox can see;\n"+
		"(header): sent to the remote server; (unused): accepted for E2B compatibility, not passed on (only Docker used it); `--json` has the details"); err != nil {
		return fmt.Errorf("write catalog table: %w", err)
	}
	return nil
}

// maxDescription bounds the description column, so a row fits a terminal line or two.
const maxDescription = 72

// shorten cuts s to its first line and at most n runes, marking a cut with "…".
func shorten(s string, n int) string {
	s, _, cut := strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > n {
		return strings.TrimSpace(string(r[:n-1])) + "…"
	} else if cut {
		return s + "…"
	}
	return s
}

// Search returns the entries whose name, title, description or package name contains word,
// ignoring case; "" matches everything.
func (c *Catalog) Search(word string) *Catalog {
	word = strings.ToLower(word)
	out := &Catalog{entries: make(map[string]Entry)}
	for _, e := range c.Entries() {
		for _, s := range []string{e.Name, e.Title, e.Description, e.Package.Name} {
			if strings.Contains(strings.ToLower(s), word) {
				out.entries[e.Name] = e
				break
			}
		}
	}
	return out
}

// WriteJSON writes the catalog for programs (`mcp-gateway catalog --json`): a JSON array of
// entries sorted by name, each with name, description, package and properties (plus command and
// args when set). The shape is stable: fields may be added, never renamed.
func (c *Catalog) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(c.Entries()); err != nil {
		return fmt.Errorf("write catalog json: %w", err)
	}
	return nil
}

// runs says in one short phrase how an entry is started, as in the contract's catalog table.
func runs(e Entry) string {
	p := e.Package
	var s string
	switch p.Manager {
	case ManagerNPM:
		s = "npx " + p.npmSpec()
	case ManagerPyPI:
		s = "uvx " + p.pypiSpec()
		if p.Bin != p.Name {
			s = "uvx --from " + p.pypiSpec() + " " + p.Bin
		}
	case ManagerBuiltin:
		return "built in"
	case ManagerRemote:
		return e.Remote.URL
	case ManagerUnavailable:
		return "-"
	case ManagerCommand:
		s = strings.Join(e.Command, " ")
	}
	return strings.Join(append([]string{s}, e.Args...), " ")
}

func propertyList(e Entry) string {
	if len(e.Properties) == 0 {
		return "-"
	}
	names := slices.Sorted(maps.Keys(e.Properties))
	for i, n := range names {
		p := e.Properties[n]
		if p.Required {
			names[i] += "*"
		}
		switch {
		case p.Flag != "", p.Arg != "", p.Positional:
			names[i] += " (argument)"
		case p.Header != "":
			names[i] += " (header)"
		case p.Unused != "":
			names[i] += " (unused)"
		}
	}
	return strings.Join(names, ", ")
}
