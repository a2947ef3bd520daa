package toolsearch

import (
	"math"
	"slices"
	"testing"
)

// The ranker's scores, checked number for number against the formulas
// docs/tool-search.md gives, computed here the plain way: per doc and per
// query word, counting words in each field, with no postings, bit masks
// or caches. The quality benchmark only sees ranks and has slack under
// its floors; a wrong constant, idf or factor applied to the wrong doc
// moves scores without always moving a rank, and only the numbers show it.

func countTerm(ts []string, t string) float64 {
	n := 0.0
	for _, x := range ts {
		if x == t {
			n++
		}
	}
	return n
}

// saturate is BM25's saturation of a weighted frequency (k1 1.2).
func saturate(tf float64) float64 { return tf * (1.2 + 1) / (tf + 1.2) }

func idfOf(n, df float64) float64 { return math.Log(1 + (n-df+0.5)/(df+0.5)) }

// refWord is one query word as the docs describe it: the word, then its
// synonyms at SynonymWeight, matched as one term; own are the positions
// of the query's own words it stands for (a join stands for both parts).
type refWord struct {
	terms []string
	w     []float64
	own   []int
}

// refScores is every doc's score for query under o (no zero fields: the
// oracle applies no defaults; a negative option is off), 0 for a doc that
// matches nothing.
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
	// tf is a doc's weighted, length-normalised frequency of a term
	// (BM25F): name and title barely discounted for length (b 0.3), the
	// rest b 0.75.
	tf := func(i int, t string) float64 {
		sum := 0.0
		for f := range numFields {
			bf := 0.75
			if f == fieldName || f == fieldTitle {
				bf = 0.3
			}
			if c := countTerm(fs[i][f], t); c > 0 && o.Weights[f] > 0 {
				sum += o.Weights[f] * c / (1 - bf + bf*float64(len(fs[i][f]))/avg[f])
			}
		}
		return sum
	}
	indexed := func(t string) bool {
		for i := range docs {
			if tf(i, t) > 0 {
				return true
			}
		}
		return false
	}

	// The query: its own words once each; the words its instances stand
	// for (hints) that some doc has, as more own words; the joins of its
	// camelCase parts that some doc has; then, for each of those, the
	// synonyms that some doc has and the query does not say itself.
	ts, joins, parts := termsJoined(query)
	var ws []refWord
	taken := map[string]int{} // a term of the query's own, hints and joins: its word
	nq := 0
	for _, t := range ts {
		if _, ok := taken[t]; !ok {
			taken[t] = len(ws)
			ws = append(ws, refWord{terms: []string{t}, w: []float64{1}, own: []int{nq}})
			nq++
		}
	}
	if o.HintWeight > 0 {
		for _, h := range hints(query) {
			if t := stem(h); indexed(t) {
				if _, ok := taken[t]; !ok {
					taken[t] = len(ws)
					ws = append(ws, refWord{terms: []string{t}, w: []float64{o.HintWeight}, own: []int{nq}})
					nq++
				}
			}
		}
	}
	for k, j := range joins {
		if _, ok := taken[j]; !ok && indexed(j) {
			a, b := ws[taken[ts[parts[k][0]]]].own[0], ws[taken[ts[parts[k][1]]]].own[0]
			taken[j] = len(ws)
			ws = append(ws, refWord{terms: []string{j}, w: []float64{1}, own: []int{a, b}})
		}
	}
	if o.SynonymWeight > 0 {
		syn := synonyms()
		for i := range ws {
			for _, s := range syn[ws[i].terms[0]] {
				if _, ok := taken[s]; !ok && indexed(s) {
					ws[i].terms = append(ws[i].terms, s)
					ws[i].w = append(ws[i].w, o.SynonymWeight)
				}
			}
		}
	}
	// Each term at the highest weight it has in the query: what the
	// server scores and the server names read.
	weight := map[string]float64{}
	for _, q := range ws {
		for k, t := range q.terms {
			weight[t] = max(weight[t], q.w[k])
		}
	}
	// wtf is a doc's frequency of a word: its terms' frequencies, each
	// times its weight, added up before the saturation.
	wtf := func(i int, q refWord) float64 {
		sum := 0.0
		for k, t := range q.terms {
			sum += q.w[k] * tf(i, t)
		}
		return sum
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
	slices.Sort(sizes)
	median := sizes[len(sizes)/2]
	srvScore := map[string]float64{}
	best := 0.0
	for _, s := range servers {
		for t, qw := range weight {
			sdf := 0.0
			for _, o := range servers {
				if countTerm(srvTerms[o], t) > 0 {
					sdf++
				}
			}
			if c := countTerm(srvTerms[s], t); c > 0 {
				norm := 1 - 0.75 + 0.75*float64(len(srvTerms[s]))/max(srvAvg, 1)
				srvScore[s] += qw * idfOf(float64(len(servers)), sdf) * saturate(c/norm)
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
		said := map[int]bool{}
		for _, q := range ws {
			v := wtf(i, q)
			if v == 0 {
				continue
			}
			df := 0.0
			for j := range docs {
				if wtf(j, q) > 0 {
					df++
				}
			}
			score += idfOf(n, df) * saturate(v)
			for _, k := range q.own {
				said[k] = true
			}
		}
		if score == 0 {
			continue
		}
		if o.Coverage > 0 && nq > 1 {
			score *= 1 - o.Coverage + o.Coverage*float64(len(said))/float64(nq)
		}
		// Name coverage: the name's distinct words without digits, and
		// the weights of the query's terms that are words (or joins) of
		// the name.
		if o.NameCover > 0 {
			var name []string
			for _, t := range terms(d.Name) {
				if !hasDigit(t) && !slices.Contains(name, t) {
					name = append(name, t)
				}
			}
			if len(name) > 0 {
				hit := 0.0
				for _, q := range ws {
					for k, t := range q.terms {
						if tf(i, t) > 0 && (slices.Contains(name, t) || slices.Contains(fs[i][fieldName], t)) {
							hit += q.w[k]
						}
					}
				}
				score *= 1 - o.NameCover + o.NameCover*min(1, hit/float64(len(name)))
			}
		}
		if o.SizePrior > 0 {
			score *= min(1, math.Pow(median/size[d.Server], o.SizePrior))
		}
		if o.ServerContext > 0 && best > 0 {
			score *= 1 + o.ServerContext*srvScore[d.Server]/best
		}
		if o.ServerBoost > 0 && named[d.Server] {
			score *= 1 + o.ServerBoost
		}
		out[i] = score
	}
	return out
}

// scoreDocs are refDocs and tools whose words the query hints stand for
// (channel, user, url, ip, coordinates), on servers of 2 and 4 tools: six
// servers of sizes 1, 2, 2, 3, 4, 5, whose median is the upper middle one
// (3, not 2). list_sites says "Wordpress" as one word: a query's
// "WordPress" matches it by the join alone, which stands for both parts.
func scoreDocs() []Doc {
	return append(refDocs(),
		Doc{Name: "post_message", Description: "Post a message to a channel.", Params: []Param{{"channel", "The channel ID"}}, Server: "slack"},
		Doc{Name: "get_user", Description: "Get a user's profile.", Server: "slack"},
		Doc{Name: "fetch_url", Description: "Fetch a URL and return its text.", Server: "web"},
		Doc{Name: "geolocate_ip", Description: "Where an IP address is: its coordinates.", Server: "web"},
		Doc{Name: "getWordPressPost", Description: "Read a post of a WordPress site.", Server: "web"},
		Doc{Name: "list_sites", Description: "List the sites of a Wordpress account.", Server: "web"},
	)
}

func TestScoresFollowTheFormulas(t *testing.T) {
	custom := documentedDefaults()
	custom.Weights[fieldTitle], custom.Weights[fieldParams], custom.Weights[fieldLead] = 5, 1, 2
	custom.SynonymWeight, custom.Coverage, custom.NameCover, custom.HintWeight = 0.7, 0.8, 0.6, 1.7
	custom.SizePrior, custom.ServerContext, custom.ServerBoost = 0.9, 2, 3
	off := documentedDefaults()
	off.SynonymWeight, off.Coverage, off.NameCover, off.HintWeight = -1, -1, -1, -1
	off.SizePrior, off.ServerContext, off.ServerBoost = -1, -1, -1
	queries := []string{
		"create an issue in github",
		"read the file at a path",
		"fetch a file",
		"remove nothing here",
		"open a ticket for a bug in linear",
		"merge pull request",
		"mergePullRequest now",
		"search",
		"weather forecast",
		"list the directory on the filesystem",
		"issue issue issue tracking",
		"show notes.txt",
		"read ~/src/main.go",
		"get https://example.com",
		"say hi in #general to @ana",
		"where is 10.0.0.1",
		"what is at 40.7, -74.0",
		"read a WordPress post",
		"wordpress post of wordPress",
		"WordPress sites",
	}
	// refDocs has none of the hint words but "file": a hint no tool
	// says is no word of the query.
	for _, c := range []struct {
		name      string
		docs      []Doc
		build, as Options
	}{
		{"defaults", scoreDocs(), Options{}, documentedDefaults()},
		{"custom", scoreDocs(), custom, custom},
		{"off", scoreDocs(), off, off},
		{"defaults, refDocs", refDocs(), Options{}, documentedDefaults()},
	} {
		docs := c.docs
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
