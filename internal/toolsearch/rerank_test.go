package toolsearch

import (
	"fmt"
	"math"
	"testing"
)

// A tool whose whole name the query says gains on one that shares a
// word of its name with the query and goes on about something else, and
// the V1 of a versioned name does not count against it.
func TestNameCoverage(t *testing.T) {
	docs := []Doc{
		{Name: "DNS_getDNSSnapshotListV1", Description: "Get a list of DNS snapshots.", Server: "host"},
		{Name: "domains_getDomainListV1", Description: "Get a list of domains.", Server: "host"},
		{Name: "create_issue", Description: "Create an issue.", Server: "gh"},
		{Name: "read_file", Description: "Read a file.", Server: "fs"},
	}
	ratio := func(o Options) float64 {
		s := map[int]float64{}
		for _, h := range Build(docs, o).Search("list my domains", 5, nil) {
			s[h.Doc] = h.Score
		}
		if s[0] == 0 || s[1] == 0 {
			t.Fatalf("both list tools should match: %v", s)
		}
		return s[1] / s[0]
	}
	off, on := ratio(Options{NameCover: -1, SynonymWeight: 0.4}), ratio(Options{SynonymWeight: 0.4})
	// domain list: 2 of 3 name words (domain, get, list); DNS snapshot
	// list: list and dns (a synonym of domain, 0.4) of 4.
	want := off * (0.7 + 0.3*2.0/3) / (0.7 + 0.3*1.4/4)
	if math.Abs(on-want) > 1e-9 {
		t.Errorf("domain list / DNS list scores: %v with name coverage, %v without; want %v", on, off, want)
	}
	if n := Build(docs, Options{}).nameLen[1]; n != 3 {
		t.Errorf("domains_getDomainListV1 has %v distinct name words without digits, want 3", n)
	}
}

// A server of many tools has each of its tools' scores discounted
// against the median server's size, so that its many near-alike names do
// not crowd out a small server's tool that matches as well.
func TestSizePrior(t *testing.T) {
	var docs []Doc
	for i := range 40 {
		docs = append(docs, Doc{Name: "show_status", Description: fmt.Sprintf("Show the status (%d).", i), Server: "big"})
	}
	for _, s := range []string{"small", "other", "third"} {
		docs = append(docs, Doc{Name: "show_status", Description: "Show the status.", Server: s},
			Doc{Name: "unrelated_" + s, Description: "Nothing alike.", Server: s})
	}
	prior := sizePrior(docs, 0.5)
	if want := math.Sqrt(2.0 / 40); math.Abs(prior[0]-want) > 1e-9 || prior[len(docs)-1] != 1 {
		t.Errorf("prior: big %v (want %v), small %v (want 1)", prior[0], want, prior[len(docs)-1])
	}
	got := topNames(Build(docs, Options{}), "show status", 1, nil)
	if len(got) != 1 || got[0] != "small/show_status" {
		t.Errorf("show status: top %v, want small/show_status", got)
	}
}

func TestLeadSentence(t *testing.T) {
	for in, want := range map[string]string{
		"Read a file. Use it for config.yaml and more.": "Read a file",
		"Scrape a page\nExamples: ...":                  "Scrape a page",
		"Read a file.\nThen more.":                      "Read a file",
		"Version 1.2 of the API":                        "Version 1.2 of the API",
		"  ":                                            "",
	} {
		if got := leadSentence(in); got != want {
			t.Errorf("leadSentence(%q) = %q, want %q", in, got, want)
		}
	}
}
