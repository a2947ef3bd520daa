package toolsearch

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestWords(t *testing.T) {
	for in, want := range map[string]string{
		"get_pull-request":    "get pull request",
		"listCommitsByRepo":   "list commits by repo",
		"HTTPServerStatus":    "http server status",
		"browser_take_s3Key":  "browser take s3 key",
		"k8sPodsV1":           "k8s pods v1",
		"  Brave: web search": "brave web search",
		"list open PRs":       "list open pr",
		"getAPIsByIDs":        "get api by id",
		"PRsOpen":             "pr open",
		// An s that a lowercase word goes on from is no plural: the
		// capital before it starts a word, as in HTTPServer.
		"XMLsitemap": "xm lsitemap",
	} {
		if got := strings.Join(words(in, true), " "); got != want {
			t.Errorf("words(%q) = %q, want %q", in, got, want)
		}
	}
	if got := strings.Join(words("listCommits", false), " "); got != "listcommits" {
		t.Errorf("words without camel split = %q", got)
	}
}

func TestTermsJoinCamelParts(t *testing.T) {
	ts, joins, parts := termsJoined("installWordPressV1 on GitHub")
	if got := strings.Join(ts, " "); got != "install word press v1 git hub" {
		t.Errorf("terms = %q", got)
	}
	// Joins only where a case change parted two words, none with a digit.
	if got := strings.Join(joins, " "); got != "installword wordpress github" {
		t.Errorf("joins = %q", got)
	}
	if !slices.Equal(parts, [][2]int{{0, 1}, {1, 2}, {4, 5}}) {
		t.Errorf("parts = %v", parts)
	}
	ix := Build([]Doc{
		{Name: "hosting_installWordPressV1", Description: "Install WordPress on a website.", Server: "hostinger"},
		{Name: "hosting_importWordpressWebsite", Description: "Import a website.", Server: "hostinger"},
		{Name: "word_count", Description: "Count the words of a text.", Server: "text"},
	}, Options{})
	// Both ways of writing it meet: "wordpress" finds WordPress, and
	// "WordPress" Wordpress.
	for _, q := range []string{"wordpress", "WordPress"} {
		got := topNames(ix, q, 2, nil)
		if len(got) != 2 || !strings.HasPrefix(got[0], "hostinger/") || !strings.HasPrefix(got[1], "hostinger/") {
			t.Errorf("%s: %v, want both hostinger tools first", q, got)
		}
	}
	if got := topNames(ix, "install wordpress", 1, nil); len(got) != 1 || got[0] != "hostinger/hosting_installWordPressV1" {
		t.Errorf("install wordpress: %v", got)
	}
}

func TestHints(t *testing.T) {
	for q, want := range map[string]string{
		"save this text to notes.txt":         "file",
		"what is in ~/src/main.go":            "file",
		"summarize https://example.com/post":  "url",
		"tell #general the deploy is done":    "channel",
		"what did @ana say":                   "user",
		"point www at 10.0.0.12":              "ip",
		"what street is at 40.7128, -74.0060": "coordinates",
		"list my domains":                     "",
		"version 1.2 of the api":              "",
	} {
		if got := strings.Join(hints(q), " "); got != want {
			t.Errorf("hints(%q) = %q, want %q", q, got, want)
		}
	}
	ix := Build([]Doc{
		{Name: "write_file", Description: "Create a new file or overwrite an existing file with new content.", Server: "filesystem"},
		{Name: "save_as_pdf", Description: "Save the current page as a PDF.", Server: "playwright"},
	}, Options{})
	if got := topNames(ix, "save this text to notes.txt", 1, nil); len(got) != 1 || got[0] != "filesystem/write_file" {
		t.Errorf("save this text to notes.txt: %v", got)
	}
}

// TestSynonymsMatchAsOne: a tool that says a query word's synonyms many
// times gets no more than one that says the word itself.
func TestSynonymsMatchAsOne(t *testing.T) {
	ix := Build([]Doc{
		{Name: "show_status", Description: "Show the status.", Server: "a"},
		{Name: "fetch_status", Description: "Get, retrieve, read, view and load the status.", Server: "b"},
	}, Options{ServerContext: -1, SizePrior: -1, NameCover: -1, Coverage: -1, ServerBoost: -1})
	if got := topNames(ix, "show status", 1, nil); len(got) != 1 || got[0] != "a/show_status" {
		t.Errorf("show status: %v", got)
	}
}

func TestStemJoinsForms(t *testing.T) {
	groups := [][]string{
		{"create", "creates", "created", "creating"},
		{"file", "files"},
		{"query", "queries"},
		{"run", "running", "runs"},
		{"delete", "deleted", "deleting"},
		{"search", "searches", "searching"},
		{"add", "added", "adding"},
		// Stems of three letters once a suffix is gone keep their e
		// and y, as the words of three letters they come from do.
		{"use", "uses"},
		{"key", "keys"},
		// z is a letter like any other.
		{"zone", "zones"},
	}
	for _, g := range groups {
		for _, w := range g[1:] {
			if stem(w) != stem(g[0]) {
				t.Errorf("stem(%q) = %q, stem(%q) = %q: want equal", w, stem(w), g[0], stem(g[0]))
			}
		}
	}
	if stem("pass") == stem("pa") || stem("status") != "status" || stem("news") == stem("new") {
		t.Errorf("stem over-strips: pass %q, status %q, news %q", stem("pass"), stem("status"), stem("news"))
	}
	// Words of three letters or fewer, and words that are not plain
	// ASCII letters (digits, accents), are left as they are: "dns" is
	// not a plural, "mp3s" and "niños" are not English.
	for _, w := range []string{"dns", "aws", "mp3s", "niños"} {
		if got := stem(w); got != w {
			t.Errorf("stem(%q) = %q, want it unchanged", w, got)
		}
	}
}

// A lone letter is dropped ("what's" leaves an s), a lone digit is not
// ("page 2").
func TestTermsKeepLoneDigits(t *testing.T) {
	if got := strings.Join(terms("x 0 9 z"), " "); got != "0 9" {
		t.Errorf("terms(\"x 0 9 z\") = %q, want \"0 9\"", got)
	}
}

// docsFixture is a few tools of real servers' kinds, two with the same
// verb, for ranking checks that do not depend on tuning.
func docsFixture() []Doc {
	return []Doc{
		{Name: "create_issue", Description: "Create a new issue in a GitHub repository.", Server: "github",
			Params: []Param{{"owner", "Repository owner"}, {"repo", "Repository name"}, {"title", "Issue title"}}},
		{Name: "list_commits", Description: "Get list of commits of a branch in a GitHub repository.", Server: "github"},
		{Name: "create_issue", Description: "Create an issue in Linear.", Server: "linear"},
		{Name: "read_file", Description: "Read the complete contents of a file from the file system.", Server: "filesystem",
			Params: []Param{{"path", ""}}},
		{Name: "browserTakeScreenshot", Description: "Take a screenshot of the current page.", Server: "playwright"},
		{Name: "delete_entities", Description: "Delete multiple entities and their associated relations from the knowledge graph.", Server: "memory"},
		{Name: "brave_web_search", Description: "Performs a web search using the Brave Search API.", Server: "brave"},
	}
}

func topNames(ix *Index, q string, n int, keep func(int) bool) []string {
	var out []string
	for _, h := range ix.Search(q, n, keep) {
		d := ix.Doc(h.Doc)
		out = append(out, d.Server+"/"+d.Name)
	}
	return out
}

func TestRanking(t *testing.T) {
	ix := Build(docsFixture(), Options{})
	cases := []struct{ query, want string }{
		{"open a github issue", "github/create_issue"},
		{"file a bug in linear", "linear/create_issue"},
		{"capture an image of the page", "playwright/browserTakeScreenshot"},
		{"screenshot", "playwright/browserTakeScreenshot"},
		{"remove entity from memory", "memory/delete_entities"},
		{"show me what's in config.yaml", "filesystem/read_file"},
		{"recent commits on main", "github/list_commits"},
		{"look something up on the internet", "brave/brave_web_search"},
	}
	for _, c := range cases {
		got := topNames(ix, c.query, 1, nil)
		if len(got) == 0 || got[0] != c.want {
			t.Errorf("search %q: top %v, want %s", c.query, got, c.want)
		}
	}
}

func TestBaselineIsPlain(t *testing.T) {
	base := Build(docsFixture(), Options{Baseline: true})
	// The baseline does not split camelCase: "browser" is only in the
	// camelCase name.
	if got := topNames(base, "browser", 3, nil); len(got) != 0 {
		t.Errorf("baseline found %v for a word of a camelCase name only", got)
	}
	ranker := Build(docsFixture(), Options{})
	if got := topNames(ranker, "browser", 1, nil); len(got) != 1 || got[0] != "playwright/browserTakeScreenshot" {
		t.Errorf("ranker did not split the camelCase name: %v", got)
	}
}

func TestSearchKeepAndLimit(t *testing.T) {
	ix := Build(docsFixture(), Options{})
	got := topNames(ix, "create issue", 5, func(i int) bool { return ix.Doc(i).Server == "linear" })
	if !slices.Equal(got, []string{"linear/create_issue"}) {
		t.Errorf("keep linear only: %v", got)
	}
	if got := ix.Search("issue repository file entity", 2, nil); len(got) != 2 {
		t.Errorf("limit 2: %d hits", len(got))
	}
	if got := ix.Search("zzzunknownword", 5, nil); len(got) != 0 {
		t.Errorf("unknown word matched %d docs", len(got))
	}
	if got := Build(nil, Options{}).Search("x", 5, nil); got != nil {
		t.Errorf("empty index: %v", got)
	}
}

func TestParseSearchArgs(t *testing.T) {
	for in, want := range map[string]SearchArgs{
		`{"query":"x"}`:                         {Query: "x", Limit: DefaultLimit},
		`{"query":"x","limit":3,"server":"gh"}`: {Query: "x", Limit: 3, Server: "gh"},
		`{"query":"x","limit":500}`:             {Query: "x", Limit: MaxLimit},
		`{"query":"x","limit":1}`:               {Query: "x", Limit: 1},
	} {
		got, err := ParseSearchArgs(json.RawMessage(in))
		if err != nil || got != want {
			t.Errorf("ParseSearchArgs(%s) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{`{}`, `null`, `{"query":"  "}`, `{"query":"x","limit":0}`, `{"query":"x","limit":2.5}`, `{"query":3}`, `[]`} {
		if _, err := ParseSearchArgs(json.RawMessage(in)); err == nil {
			t.Errorf("ParseSearchArgs(%s) took it", in)
		}
	}
}

func TestParseCallArgs(t *testing.T) {
	got, err := ParseCallArgs(json.RawMessage(`{"name":"echo","arguments":{"text":"hi"}}`))
	if err != nil || got.Name != "echo" || string(got.Arguments) != `{"text":"hi"}` {
		t.Errorf("ParseCallArgs = %+v, %v", got, err)
	}
	for _, in := range []string{`{"name":"echo","arguments":null}`, `{"name":"echo"}`} {
		got, err = ParseCallArgs(json.RawMessage(in))
		if err != nil || got.Arguments != nil {
			t.Errorf("ParseCallArgs(%s) = %+v, %v; want no arguments", in, got, err)
		}
	}
	for _, in := range []string{`{}`, `{"name":""}`, `{"name":"x","arguments":[1]}`, `"x"`} {
		if _, err := ParseCallArgs(json.RawMessage(in)); err == nil {
			t.Errorf("ParseCallArgs(%s) took it", in)
		}
	}
}

func TestListResultSmallAndValid(t *testing.T) {
	b := ListResult("search_tools", "call_tool")
	var r struct {
		Tools []struct {
			Name        string         `json:"name"`
			InputSchema map[string]any `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("list result: %v\n%s", err, b)
	}
	if len(r.Tools) != 2 || r.Tools[0].Name != "search_tools" || r.Tools[1].Name != "call_tool" {
		t.Fatalf("tools: %+v", r.Tools)
	}
	if len(b) >= 3<<10 {
		t.Errorf("search view list is %d bytes, want under 3 KB", len(b))
	}
}

func TestSearchResultShape(t *testing.T) {
	b, err := SearchResult("q", []Found{{Name: "echo", Server: "s", Description: "Echo.\nMore.", InputSchema: json.RawMessage(`{"type":"object"}`)}, {Name: "x", Server: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Content    []struct{ Type, Text string } `json:"content"`
		Structured struct {
			Tools []map[string]any `json:"tools"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Structured.Tools) != 2 || r.Structured.Tools[0]["name"] != "echo" || r.Structured.Tools[1]["inputSchema"] == nil {
		t.Errorf("structuredContent: %+v", r.Structured)
	}
	if !strings.Contains(r.Content[0].Text, "\n1. echo (server s): Echo.\n2. x (server t)\n") || strings.Contains(r.Content[0].Text, "More.") {
		t.Errorf("text: %q", r.Content[0].Text)
	}
	b, _ = SearchResult("q", nil)
	if !strings.Contains(string(b), `"tools":[]`) {
		t.Errorf("no hits: %s", b)
	}
}

// A description's first line is cut past 160 bytes, not at 160, and
// never inside a UTF-8 sequence.
func TestFirstLine(t *testing.T) {
	at := strings.Repeat("a", 160)
	if got := firstLine(at); got != at {
		t.Errorf("firstLine of 160 bytes = %d bytes, want it whole", len(got))
	}
	if got := firstLine(at + "b"); got != at[:157]+"..." {
		t.Errorf("firstLine of 161 bytes = %q", got)
	}
	if got := firstLine(strings.Repeat("a", 156) + "é" + at); got != strings.Repeat("a", 156)+"..." {
		t.Errorf("firstLine cut inside é: %q", got)
	}
	// Bytes that are not UTF-8 (a server's description is any string)
	// are cut, not walked past the start.
	if got := firstLine(strings.Repeat("\x80", 200)); got != "..." {
		t.Errorf("firstLine of continuation bytes = %q", got)
	}
}

func TestParamsOf(t *testing.T) {
	raw := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"Where"},"b":{"title":"Bee"}}}`)
	got := ParamsOf(raw)
	if len(got) != 2 || got[0] != (Param{"b", "Bee"}) || got[1] != (Param{"path", "Where"}) {
		t.Errorf("ParamsOf raw: %+v", got)
	}
	m := map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"description": "query"}}}
	if got := ParamsOf(m); len(got) != 1 || got[0].Name != "q" {
		t.Errorf("ParamsOf map: %+v", got)
	}
	if ParamsOf(json.RawMessage(`{"type":["object","null"]}`)) == nil && ParamsOf(nil) != nil {
		t.Error("unreadable schemas")
	}
}

// syntheticDocs are n tools of n/30 servers, with vocabulary like real
// tool lists', for the speed benchmarks.
func syntheticDocs(n int) []Doc {
	verbs := []string{"get", "list", "create", "update", "delete", "search", "run", "send", "read", "write"}
	nouns := []string{"issue", "file", "page", "user", "message", "record", "branch", "comment", "table", "event", "image", "project"}
	docs := make([]Doc, n)
	for i := range docs {
		v, o := verbs[i%len(verbs)], nouns[(i/len(verbs))%len(nouns)]
		docs[i] = Doc{
			Name:        fmt.Sprintf("%s_%s_%d", v, o, i),
			Description: fmt.Sprintf("%s a %s in the workspace number %d, with options for paging and filters.", v, o, i%97),
			Params:      []Param{{"id", "The " + o + " id"}, {"limit", "How many"}},
			Server:      fmt.Sprintf("server%02d", i/30),
			ServerText:  "A product's API for its " + o + "s.",
		}
	}
	return docs
}

func BenchmarkBuild3000(b *testing.B) {
	docs := syntheticDocs(3000)
	b.ReportAllocs()
	for b.Loop() {
		Build(docs, Options{})
	}
}

func BenchmarkSearch3000(b *testing.B) {
	ix := Build(syntheticDocs(3000), Options{})
	b.ReportAllocs()
	for b.Loop() {
		ix.Search("find the comments of an issue and reply", DefaultLimit, nil)
	}
}

// A gateway tool's error is a tool result the model reads: isError, the
// message as its text, quotes and all.
func TestErrorResult(t *testing.T) {
	var r struct {
		Content []struct{ Type, Text string } `json:"content"`
		IsError bool                          `json:"isError"`
	}
	msg := `invalid arguments: "limit" must be an integer`
	if err := json.Unmarshal(ErrorResult(fmt.Errorf("%s", msg)), &r); err != nil {
		t.Fatal(err)
	}
	if !r.IsError || len(r.Content) != 1 || r.Content[0].Type != "text" || r.Content[0].Text != msg {
		t.Errorf("ErrorResult = %+v", r)
	}
}
