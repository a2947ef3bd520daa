package toolsearch

import (
	"strings"
	"testing"
)

// documentedDefaults are the ranker's defaults as docs/tool-search.md
// states them (Options' zero value).
func documentedDefaults() Options {
	return Options{
		Weights: [numFields]float64{fieldName: 3, fieldTitle: 2, fieldDescription: 0.7, fieldLead: 0.5,
			fieldParams: 0.3, fieldServer: 1.2, fieldServerText: 0.1},
		SynonymWeight: 0.5, Coverage: 0.7, NameCover: 0.3, SizePrior: 0.2, ServerContext: 0.5, ServerBoost: 0.5,
		HintWeight: 1,
	}
}

// refDocs are tools of four servers of 1, 2, 3 and 5 tools (an even
// number of servers of distinct sizes: the median is the upper middle
// one), with titles, parameters, server instructions, names with a
// version and one with no name word at all.
func refDocs() []Doc {
	gh := "GitHub's API: repositories, issues and pull requests."
	return []Doc{
		{Name: "create_issue", Title: "Create issue", Description: "Create a new issue in a repository. Needs write access.",
			Params: []Param{{"repo", "The repository"}, {"title", "Issue title"}}, Server: "github", ServerText: gh},
		{Name: "list_commits", Description: "List the commits of a branch.", Server: "github", ServerText: gh},
		{Name: "get_file_contents", Title: "Read a file", Description: "Read a file of a repository at a ref.",
			Params: []Param{{"path", "Where the file is"}}, Server: "github", ServerText: gh},
		{Name: "search_issues", Description: "Search issues and pull requests.", Server: "github", ServerText: gh},
		{Name: "mergePullRequestV2", Description: "Merge a pull request.", Server: "github", ServerText: gh},
		{Name: "read_file", Title: "Read file", Description: "Read the complete contents of a file from disk.",
			Params: []Param{{"path", "The file's path"}}, Server: "filesystem"},
		{Name: "list_directory", Description: "List a directory's entries.", Server: "filesystem"},
		{Name: "write_file", Description: "Write a file, replacing it.", Server: "filesystem"},
		{Name: "create_ticket", Description: "Open a ticket for a bug.", Server: "linear", ServerText: "Linear issue tracking."},
		{Name: "search_tickets", Description: "Find tickets by text.", Server: "linear", ServerText: "Linear issue tracking."},
		{Name: "v2", Description: "Fetch the weather forecast for a city.", Server: "weather"},
	}
}

// Search's edges: no limit is no answer, a field weighted zero matches
// nothing, and docs of equal score come in Build's order.
func TestSearchEdges(t *testing.T) {
	docs := refDocs()
	if got := Build(docs, Options{}).Search("file", 0, nil); got != nil {
		t.Errorf("limit 0: %v, want nil", got)
	}
	noDesc := documentedDefaults()
	noDesc.Weights[fieldDescription], noDesc.Weights[fieldLead] = 0, 0
	// "complete" is only in read_file's description.
	if got := Build(docs, noDesc).Search("complete", 5, nil); len(got) != 0 {
		t.Errorf("a word of a zero-weight field only matched %v", got)
	}
	// Two docs matching one word each, of equal score, the later doc's
	// word first in the query: the order the search meets them in must
	// not decide the answer's.
	pair := Build([]Doc{{Name: "alpha", Server: "s"}, {Name: "beta", Server: "s"}}, Options{})
	for range 20 {
		hits := pair.Search("beta alpha", 5, nil)
		if len(hits) != 2 || hits[0].Score != hits[1].Score || hits[0].Doc != 0 {
			t.Fatalf("equal scores: %v, want doc 0 then 1", hits)
		}
	}
}

// A dropped word (a stopword, a lone letter) between two camelCase parts
// joins neither with the next: "listTheFiles" and "getAUser" are not
// "thefil" or "auser" (stems: files is "fil").
func TestJoinsSkipDroppedWords(t *testing.T) {
	for in, want := range map[string]string{
		"listTheFiles": "list fil",
		"getAUser":     "get user",
		"TheFiles":     "fil",
	} {
		if got := strings.Join(indexTerms(in), " "); got != want {
			t.Errorf("indexTerms(%q) = %q, want %q", in, got, want)
		}
	}
}
