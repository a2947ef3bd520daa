package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// TestReadmeLinks: every relative link of the README (the contents line, the
// sections that point to docs/) names a file that exists and, with #anchor, a
// heading of that file, so that a renamed heading or a moved page fails here
// rather than in a reader's browser.
func TestReadmeLinks(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	links := regexp.MustCompile(`\]\(([^)\s]+)\)`).FindAllStringSubmatch(string(readme), -1)
	if len(links) < 10 {
		t.Fatalf("found %d links in README.md; the pattern is wrong", len(links))
	}
	for _, m := range links {
		target := m[1]
		if strings.Contains(target, "://") {
			continue
		}
		file, anchor, _ := strings.Cut(target, "#")
		path := filepath.Join(root, "README.md")
		if file != "" {
			path = filepath.Join(root, file)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("README.md links to %s: %v", target, err)
			continue
		}
		if anchor != "" && !slices.Contains(headingAnchors(string(b)), anchor) {
			t.Errorf("README.md links to %s: no such heading in %s", target, filepath.Base(path))
		}
	}
}

// headingAnchors returns the anchors GitHub gives the Markdown headings of
// doc: lower case, spaces to dashes, punctuation other than dashes and
// underscores dropped (fenced code is skipped: a "# comment" is no heading).
func headingAnchors(doc string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		var b strings.Builder
		for _, r := range h {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}
