package catalog

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// WriteTable writes the catalog for people (`mcp-gateway catalog`): one row per entry with NAME,
// START (npm, pypi, remote, unavailable, builtin, command), PROPERTIES (required ones marked
// with '*', those not passed through the environment with where they go instead) and
// DESCRIPTION, the row cut to TableWidth columns so it fits a terminal; a cut cell ends in "…"
// and the footer says where the whole entry is (WriteEntry, WriteJSON). How an entry runs is
// left to those two: a package spec or URL alone is wider than the rest of the row.
func (c *Catalog) WriteTable(w io.Writer) error {
	entries := c.Entries()
	rows := [][]string{{"NAME", "START", "PROPERTIES", "DESCRIPTION"}}
	for _, e := range entries {
		rows = append(rows, []string{e.Name, string(e.Package.Manager), shorten(propertyList(e), maxProperties), e.Description})
	}
	// Names are never cut (they are what the user types next); the description takes what the
	// other columns leave.
	var fixed int
	for col := range 3 {
		width := 0
		for _, r := range rows {
			width = max(width, utf8.RuneCountInString(r[col]))
		}
		fixed += width + columnGap
	}
	descWidth := max(TableWidth-fixed, minDescription)
	tw := tabwriter.NewWriter(w, 0, 0, columnGap, ' ', 0)
	for i, r := range rows {
		if i > 0 {
			r[3] = shorten(r[3], descWidth)
		}
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write catalog table: %w", err)
	}
	if _, err := fmt.Fprint(w, tableFooter); err != nil {
		return fmt.Errorf("write catalog table: %w", err)
	}
	return nil
}

const (
	// TableWidth is the widest line WriteTable writes for the embedded catalog: a terminal's
	// usual 100 columns. An override entry with a very long name can widen it.
	TableWidth = 100
	columnGap  = 2
	// maxProperties caps the PROPERTIES column: one entry has over twenty.
	maxProperties = 24
	// minDescription keeps a few words of description even beside very long names.
	minDescription = 16
)

const tableFooter = `* required property; (argument): read from the command line, which other processes can see;
(header): sent to the remote server; (unused): accepted for E2B compatibility, not passed on.
A cell cut short ends in "…": 'mcp-gateway catalog <name>' shows one entry whole, --json all.
`

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
