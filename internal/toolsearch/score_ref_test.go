package toolsearch

import (
	"math"
	"slices"
	"sort"
	"testing"
)

// The ranker's scores, checked number for number against the formulas
// docs/tool-search.md gives, computed here the plain way: per doc and per
// query term, counting words, with no postings. The quality benchmark
// only sees ranks, and has slack under its floors; a wrong constant or a
// factor applied to the wrong doc moves scores without always moving a
// rank, and only the numbers show it.

// documentedDefaults are the ranker's defaults as docs/tool-search.md
// states them (Options' zero value).
func documentedDefaults() Options {
	return Options{
		Weights: [numFields]float64{fieldName: 3, fieldTitle: 2, fieldDescription: 0.7, fieldLead: 0.5,
			fieldParams: 0.3, fieldServer: 1.2, fieldServerText: 0.1},
		SynonymWeight: 0.4, Coverage: 0.5, NameCover: 0.3, SizePrior: 0.1, ServerContext: 0.5, ServerBoost: 0.5,
	}
}

func count(ts []string, t string) float64 {
	n := 0.0
	for _, x := range ts {
		if x == t {
			n++
		}
	}
	return n
}

// bm25 is one term's BM25 contribution: saturated frequency times idf.
func bm25(qw, idf, tf float64) float64 { return qw * idf * tf * (1.2 + 1) / (tf + 1.2) }

func idfOf(n, df float64) float64 { return math.Log(1 + (n-df+0.5)/(df+0.5)) }

// refScores is every doc's score for query under o (no zero fields:
// the oracle applies no defaults), 0 for a doc that matches nothing.
func refScores(docs []Doc, o Options, query string) []float64 {
	n := float64(len(docs))
	fs := make([][numFields][]string, len(docs))
	var avg [numFields]float64
	for i, d := range docs {
		fs[i] = d.fields()
		for f := range numFields {
			avg[f] += float64(len(fs[i][f])) / n
		}
	}
	for f := range avg {
		avg[f] = max(avg[f], 1)
	}
	// tf is a doc's weighted, length-normalised frequency of a term:
	// name and title barely discounted for length (b 0.3), the rest
	// b 0.75.
	tf := func(i int, t string) float64 {
		sum := 0.0
		for f := range numFields {
			bf := 0.75
			if f == fieldName || f == fieldTitle {
				bf = 0.3
			}
			if c := count(fs[i][f], t); c > 0 && o.Weights[f] > 0 {
				sum += o.Weights[f] * c / (1 - bf + bf*float64(len(fs[i][f]))/avg[f])
			}
		}
		return sum
	}
	df := func(t string) float64 {
		c := 0.0
		for i := range docs {
			if tf(i, t) > 0 {
				c++
			}
		}
		return c
	}

	// The query: its own words once each, then their synonyms that some
	// doc has, at SynonymWeight, each counting for the word it came from.
	var qterms []string
	weight, word := map[string]float64{}, map[string]int{}
	own := 0
	for _, t := range terms(query) {
		if _, ok := weight[t]; !ok {
			weight[t], word[t] = 1, own
			qterms = append(qterms, t)
			own++
		}
	}
	syn := synonyms()
	for _, t := range qterms[:own] {
		for _, s := range syn[t] {
			if _, ok := weight[s]; !ok && df(s) > 0 {
				weight[s], word[s] = o.SynonymWeight, word[t]
				qterms = append(qterms, s)
			}
		}
	}

	// Servers: their sizes, and each as one document of its tools' text
	// (the first sentence not again, the server's own text once).
	size := map[string]float64{}
	srvTerms := map[string][]string{}
	var servers []string
	for i, d := range docs {
		if size[d.Server] == 0 {
			servers = append(servers, d.Server)
			srvTerms[d.Server] = append(srvTerms[d.Server], fs[i][fieldServerText]...)
		}
		size[d.Server]++
		for f := range numFields {
			if f != fieldLead && f != fieldServerText {
				srvTerms[d.Server] = append(srvTerms[d.Server], fs[i][f]...)
			}
		}
	}
	sizes := make([]float64, 0, len(servers))
	srvAvg := 0.0
	for _, s := range servers {
		sizes = append(sizes, size[s])
		srvAvg += float64(len(srvTerms[s])) / float64(len(servers))
	}
	sort.Float64s(sizes)
	median := sizes[len(sizes)/2]
	srvScore := map[string]float64{}
	best := 0.0
	for _, s := range servers {
		for _, t := range qterms {
			sdf := 0.0
			for _, o := range servers {
				if count(srvTerms[o], t) > 0 {
					sdf++
				}
			}
			if c := count(srvTerms[s], t); c > 0 {
				norm := 1 - 0.75 + 0.75*float64(len(srvTerms[s]))/max(srvAvg, 1)
				srvScore[s] += bm25(weight[t], idfOf(float64(len(servers)), sdf), c/norm)
			}
		}
		best = max(best, srvScore[s])
	}
	named := map[string]bool{}
	for _, s := range servers {
		for _, t := range terms(s) {
			if _, ok := weight[t]; ok {
				named[s] = true
			}
		}
	}

	out := make([]float64, len(docs))
	for i, d := range docs {
		score := 0.0
		words := map[int]bool{}
		for _, t := range qterms {
			if v := tf(i, t); v > 0 {
				score += bm25(weight[t], idfOf(n, df(t)), v)
				words[word[t]] = true
			}
		}
		if score == 0 {
			continue
		}
		if own > 1 {
			score *= 1 - o.Coverage + o.Coverage*float64(len(words))/float64(own)
		}
		var name []string
		for _, t := range fs[i][fieldName] {
			if !hasDigit(t) && !slices.Contains(name, t) {
				name = append(name, t)
			}
		}
		if len(name) > 0 {
			said := 0.0
			for _, t := range name {
				said += weight[t]
			}
			score *= 1 - o.NameCover + o.NameCover*min(1, said/float64(len(name)))
		}
		score *= min(1, math.Pow(median/size[d.Server], o.SizePrior))
		if best > 0 {
			score *= 1 + o.ServerContext*srvScore[d.Server]/best
		}
		if named[d.Server] {
			score *= 1 + o.ServerBoost
		}
		out[i] = score
	}
	return out
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

func TestScoresFollowTheFormulas(t *testing.T) {
	docs := refDocs()
	custom := documentedDefaults()
	custom.Weights[fieldTitle], custom.Weights[fieldParams] = 5, 1
	custom.SynonymWeight, custom.Coverage, custom.NameCover = 0.7, 0.8, 0.6
	custom.SizePrior, custom.ServerContext, custom.ServerBoost = 0.9, 2, 3
	queries := []string{
		"create an issue in github",
		"read the file at a path",
		"fetch a file",
		"remove nothing here",
		"open a ticket for a bug in linear",
		"merge pull request",
		"search",
		"weather forecast",
		"list the directory on the filesystem",
		"issue issue issue tracking",
	}
	for _, c := range []struct {
		name      string
		build, as Options
	}{
		{"defaults", Options{}, documentedDefaults()},
		{"custom", custom, custom},
	} {
		ix := Build(docs, c.build)
		for _, q := range queries {
			want := refScores(docs, c.as, q)
			got := map[int]float64{}
			for _, h := range ix.Search(q, len(docs), nil) {
				got[h.Doc] = h.Score
			}
			for i, w := range want {
				g, ok := got[i]
				if w == 0 {
					if ok {
						t.Errorf("%s, %q: %s/%s scored %v, want no match", c.name, q, docs[i].Server, docs[i].Name, g)
					}
					continue
				}
				// Postings hold float32 frequencies: 1e-6 relative.
				if !ok || !(math.Abs(g-w) <= 1e-6*w) { // NaN too
					t.Errorf("%s, %q: %s/%s scored %v (found %v), want %v", c.name, q, docs[i].Server, docs[i].Name, g, ok, w)
				}
			}
		}
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
	// Two docs matching one word each, of equal score: which one the
	// search meets first depends on the order it walks the query's
	// words, a map's; the answer must not.
	pair := Build([]Doc{{Name: "alpha", Server: "s"}, {Name: "beta", Server: "s"}}, Options{})
	for range 20 {
		hits := pair.Search("alpha beta", 5, nil)
		if len(hits) != 2 || hits[0].Score != hits[1].Score || hits[0].Doc != 0 {
			t.Fatalf("equal scores: %v, want doc 0 then 1", hits)
		}
	}
}
