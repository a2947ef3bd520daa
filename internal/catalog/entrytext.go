package catalog

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// WriteEntry writes one entry whole for people (`mcp-gateway catalog <name>`): what the table
// cuts short (the description, every property with its type and destination, how the server
// runs, the notes), wrapped to TableWidth columns.
func (c *Catalog) WriteEntry(w io.Writer, name string) error {
	e, ok := c.Lookup(name)
	if !ok {
		return fmt.Errorf("write catalog entry: no entry %q", name)
	}
	var b strings.Builder
	field := func(label, text string) {
		if text != "" {
			b.WriteString(wrap(label, text, TableWidth, strings.Repeat(" ", len(label))))
		}
	}
	field("name:        ", e.Name)
	field("title:       ", e.Title)
	field("description: ", strings.Join(strings.Fields(e.Description), " "))
	field("start:       ", string(e.Package.Manager))
	field("runs:        ", runs(e))
	if u := e.Unavailable; u != nil {
		field("unavailable: ", u.Reason)
		field("how to:      ", u.HowTo)
	}
	field("source:      ", e.Source)
	if len(e.Properties) == 0 {
		field("properties:  ", "none")
	} else {
		b.WriteString("properties:  (* required)\n")
	}
	for _, n := range slices.Sorted(maps.Keys(e.Properties)) {
		p := e.Properties[n]
		if p.Required {
			n += "*"
		}
		text := n + ": " + describeType(p) + ", " + destinationText(p)
		if p.Description != "" {
			text += ". " + strings.Join(strings.Fields(p.Description), " ")
		}
		if p.Note != "" {
			text += " (" + p.Note + ")"
		}
		b.WriteString(wrap("  ", text, TableWidth, "      "))
	}
	for i, n := range e.Notes {
		label := "notes:       "
		if i > 0 {
			label = "             "
		}
		field(label, n)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write catalog entry: %w", err)
	}
	return nil
}

// destinationText says where a property's value goes, in the words of the table's footer.
func destinationText(p Property) string {
	switch {
	case p.Env != "":
		return "env " + p.Env
	case p.Header != "":
		return "header " + p.Header
	case p.Unused != "":
		return "unused: " + p.Unused
	case p.Flag != "":
		return "argument " + p.Flag
	case p.Arg != "":
		return "argument " + p.Arg
	default:
		return "positional argument"
	}
}

// wrap breaks prefix+text into lines of at most width runes at spaces, starting each line after
// the first with indent. A word longer than a line (a URL) gets a line of its own.
func wrap(prefix, text string, width int, indent string) string {
	var b strings.Builder
	line, empty := prefix, true
	for _, word := range strings.Fields(text) {
		if !empty && len([]rune(line))+1+len([]rune(word)) > width {
			b.WriteString(line + "\n")
			line, empty = indent, true
		}
		if !empty {
			line += " "
		}
		line, empty = line+word, false
	}
	b.WriteString(line + "\n")
	return b.String()
}
