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
// with NAME, RUNS, PROPERTIES (required ones marked with '*') and DESCRIPTION.
func (c *Catalog) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tRUNS\tPROPERTIES\tDESCRIPTION")
	for _, e := range c.Entries() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Name, runs(e), propertyList(e), e.Description)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write catalog table: %w", err)
	}
	if _, err := fmt.Fprintln(w, "* required property"); err != nil {
		return fmt.Errorf("write catalog table: %w", err)
	}
	return nil
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
		s = "npx " + p.Name
	case ManagerPyPI:
		s = "uvx " + p.Name
		if p.Bin != p.Name {
			s = "uvx --from " + p.Name + " " + p.Bin
		}
	case ManagerBuiltin:
		return "built in"
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
		if e.Properties[n].Required {
			names[i] = n + "*"
		}
	}
	return strings.Join(names, ", ")
}
