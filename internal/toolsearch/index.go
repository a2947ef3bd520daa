package toolsearch

import (
	"math"
	"slices"
	"strings"
)

// Doc is one tool as the index reads it: its own text, and its server's,
// which tells tools of the same name apart ("create_issue" of GitHub and
// of Linear) and carries product names the tool's text leaves out.
type Doc struct {
	Name        string // the exported name (split on _, - and camelCase)
	Title       string
	Description string
	Params      []Param // the input schema's properties
	Server      string  // the server's key
	// ServerText is what the server says of itself: its title,
	// description and instructions.
	ServerText string
}

// Param is one property of a tool's input schema.
type Param struct{ Name, Description string }

// The fields of a Doc that the ranker weighs apart.
const (
	fieldName = iota
	fieldTitle
	fieldDescription
	fieldParams
	fieldServer
	fieldServerText
	fieldLead // the description's first sentence, again
	numFields
)

// Options tune the ranker. The zero value is the gateway's ranker with
// its measured defaults (see docs/tool-search.md); Baseline turns
// everything off for the plain BM25 it is compared against.
type Options struct {
	// Baseline is plain BM25 (k1 1.2, b 0.75) over all of a Doc's text as
	// one field, split on non-alphanumerics only: no camelCase split, no
	// stemming, no stopwords, no field weights, no synonyms.
	Baseline bool
	// Weights multiply each field's term frequency (BM25F): a word of
	// the tool's name says more than one of its server's instructions.
	// Zero means the defaults.
	Weights [numFields]float64
	// SynonymWeight is how much a synonym of a query word counts
	// against the word itself. Zero means the default; negative, none.
	SynonymWeight float64
	// ServerBoost multiplies by 1+ServerBoost the scores of a server's
	// tools when the query names the server ("... in mongo", "on
	// GitHub"): a product named is the strongest hint a query has.
	// Zero means the default; negative, none.
	ServerBoost float64
	// ServerContext is how much the server's own match counts (see
	// serverIndex): a tool's score is multiplied by 1+ServerContext*s,
	// s the server's score relative to the best server's. Zero means the
	// default; negative, none.
	ServerContext float64
	// Coverage is how much the share of the query's words a tool matches
	// counts: its score is multiplied by 1-Coverage+Coverage*share, so
	// that a tool matching three of four words beats one matching one
	// word often. Zero means the default; negative, none.
	Coverage float64
	// SizePrior discounts the tools of servers with many tools: a tool's
	// score is multiplied by (m/n)^SizePrior, n its server's number of
	// tools and m the median over the servers (never above 1). A server
	// of 400 tools is not 400 times as likely to be the one a query is
	// about, but its many short names match a query's generic words
	// ("show", "list", "update") more often. Zero means the default;
	// negative, none.
	SizePrior float64
	// NameCover is how much the share of a tool's name words that the
	// query matches counts (a synonym counts SynonymWeight of a word):
	// its score is multiplied by 1-NameCover+NameCover*share, so that a
	// tool whose name the query says all of (list_domains for "list my
	// domains") beats one whose name shares a word with it and goes on
	// about something else (list_dns_snapshots). Words with digits
	// (V1) are left out: versions say nothing of what a tool does. Zero
	// means the default; negative, none.
	NameCover float64
	// HintWeight is the weight of the words that instances in a query
	// stand for ("notes.txt": file; see hints). Zero means the default;
	// negative, none.
	HintWeight float64
}

func (o Options) withDefaults() Options {
	if o.Weights == ([numFields]float64{}) {
		o.Weights = [numFields]float64{fieldName: 3, fieldTitle: 2, fieldDescription: 0.7, fieldParams: 0.3, fieldServer: 1.2, fieldServerText: 0.1, fieldLead: 0.5}
	}
	if o.SynonymWeight == 0 {
		o.SynonymWeight = 0.5
	}
	if o.ServerBoost == 0 {
		o.ServerBoost = 0.5
	}
	if o.ServerContext == 0 {
		o.ServerContext = 0.5
	}
	if o.Coverage == 0 {
		o.Coverage = 0.7
	}
	if o.NameCover == 0 {
		o.NameCover = 0.3
	}
	if o.HintWeight == 0 {
		o.HintWeight = 1
	}
	if o.SizePrior == 0 {
		o.SizePrior = 0.2
	}
	return o
}

// BM25 constants: k1 bounds what repeating a word adds; b how much a long
// field is discounted. A tool's name is short and says what it does
// whatever its length, so it is barely discounted.
const (
	k1 = 1.2
	b  = 0.75
)

func fieldB(f int) float64 {
	if f == fieldName || f == fieldTitle {
		return 0.3
	}
	return b
}

// posting is one document holding a term, with the term's weighted,
// length-normalised frequency over the fields (BM25F), before saturation.
type posting struct {
	doc    int32
	tf     float32
	inName bool // the term is one of the doc's name words
}

// Index ranks a fixed set of Docs for a query. Build one per version of
// the tool list; it is read-only afterwards and safe for concurrent use.
type Index struct {
	docs     []Doc
	opts     Options
	postings map[string][]posting
	syn      map[string][]string
	// servers maps a word of a server's key to the docs' server keys
	// that have it; docServer is each doc's server key.
	servers map[string][]string
	srv     *serverIndex // nil: no server context
	prior   []float64    // per doc, the SizePrior factor; nil: none
	// nameLen is, per doc, the number of its distinct name words
	// (without digits); nil when NameCover is off.
	nameLen []float64
}

// Build indexes docs; Search answers with their positions in docs.
func Build(docs []Doc, opts Options) *Index {
	if !opts.Baseline {
		opts = opts.withDefaults()
	}
	ix := &Index{docs: docs, opts: opts, postings: make(map[string][]posting)}
	if !opts.Baseline {
		ix.syn = synonyms()
		ix.servers = make(map[string][]string)
		seen := make(map[string]bool)
		for _, d := range docs {
			if seen[d.Server] {
				continue
			}
			seen[d.Server] = true
			for _, t := range terms(d.Server) {
				ix.servers[t] = append(ix.servers[t], d.Server)
			}
		}
	}
	fieldTerms := make([][numFields][]string, len(docs))
	var totalLen [numFields]float64
	for i, d := range docs {
		if opts.Baseline {
			fieldTerms[i][0] = plainTerms(d.plainText())
		} else {
			fieldTerms[i] = d.fields()
		}
		for f := range numFields {
			totalLen[f] += float64(len(fieldTerms[i][f]))
		}
	}
	if !opts.Baseline && opts.ServerContext > 0 {
		ix.srv = buildServerIndex(docs, fieldTerms)
	}
	if !opts.Baseline && opts.SizePrior > 0 {
		ix.prior = sizePrior(docs, opts.SizePrior)
	}
	var avgLen [numFields]float64
	for f := range numFields {
		avgLen[f] = max(totalLen[f]/float64(max(len(docs), 1)), 1)
	}
	if !opts.Baseline && opts.NameCover > 0 {
		ix.nameLen = make([]float64, len(docs))
	}
	for i := range docs {
		tf := make(map[string]float64)
		for f := range numFields {
			ts := fieldTerms[i][f]
			if len(ts) == 0 {
				continue
			}
			w, bf := 1.0, b
			if !opts.Baseline {
				w, bf = opts.Weights[f], fieldB(f)
			}
			if w <= 0 {
				continue
			}
			norm := 1 - bf + bf*float64(len(ts))/avgLen[f]
			for _, t := range ts {
				tf[t] += w / norm
			}
		}
		var inName map[string]bool
		if ix.nameLen != nil {
			inName = make(map[string]bool)
			// The name's words count, their joins match as they do
			// but are not more words the query should say.
			for _, t := range terms(docs[i].Name) {
				if !hasDigit(t) && !inName[t] {
					inName[t] = true
					ix.nameLen[i]++
				}
			}
			for _, t := range fieldTerms[i][fieldName] {
				inName[t] = true
			}
		}
		for t, v := range tf {
			ix.postings[t] = append(ix.postings[t], posting{doc: int32(i), tf: float32(v), inName: inName[t]})
		}
	}
	return ix
}

// fields is d's text per field, as terms.
func (d Doc) fields() [numFields][]string {
	var fs [numFields][]string
	fs[fieldName] = indexTerms(d.Name)
	fs[fieldTitle] = indexTerms(d.Title)
	fs[fieldDescription] = indexTerms(d.Description)
	for _, p := range d.Params {
		fs[fieldParams] = append(fs[fieldParams], indexTerms(p.Name)...)
		fs[fieldParams] = append(fs[fieldParams], indexTerms(p.Description)...)
	}
	fs[fieldServer] = indexTerms(d.Server)
	// Every tool of a server shares its text: a word of its instructions
	// matches all of them alike, and says little about any one.
	fs[fieldServerText] = indexTerms(d.ServerText)
	fs[fieldLead] = indexTerms(leadSentence(d.Description))
	return fs
}

// plainText is all of d's text, for the baseline.
func (d Doc) plainText() string {
	var s strings.Builder
	for _, part := range []string{d.Name, d.Title, d.Description, d.Server, d.ServerText} {
		s.WriteString(part)
		s.WriteByte(' ')
	}
	for _, p := range d.Params {
		s.WriteString(p.Name)
		s.WriteByte(' ')
		s.WriteString(p.Description)
		s.WriteByte(' ')
	}
	return s.String()
}

// Len is the number of indexed docs.
func (ix *Index) Len() int { return len(ix.docs) }

// Doc returns the doc at position i of Build's docs.
func (ix *Index) Doc(i int) Doc { return ix.docs[i] }

// Hit is a doc that matched, by its position in Build's docs.
type Hit struct {
	Doc   int
	Score float64
}

// Search returns at most limit docs that match query, best first (ties in
// Build's order), among those keep accepts (nil: all).
func (ix *Index) Search(query string, limit int, keep func(doc int) bool) []Hit {
	if limit <= 0 || len(ix.docs) == 0 {
		return nil
	}
	qs, nq := ix.queryWords(query)
	scores, touched := ix.rank(qs, nq)
	hits := make([]Hit, 0, len(touched))
	for _, d := range touched {
		if keep == nil || keep(int(d)) {
			hits = append(hits, Hit{Doc: int(d), Score: scores[d]})
		}
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return a.Doc - b.Doc
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits
}

// rank scores the docs for the query's words qs (nq of the query's own):
// scores per doc, and the docs that matched any word.
func (ix *Index) rank(qs []qword, nq int) (scores []float64, touched []int32) {
	scores = make([]float64, len(ix.docs))
	// matched holds, per doc, which of the query's own words (up to 64)
	// it matched, as bits.
	var matched []uint64
	if !ix.opts.Baseline && ix.opts.Coverage > 0 && nq > 1 {
		matched = make([]uint64, len(ix.docs))
	}
	var nameHits []float64
	if ix.nameLen != nil {
		nameHits = make([]float64, len(ix.docs))
	}
	// Each query word with its synonyms is one term (a synonym operator):
	// their weighted frequencies add up before BM25's saturation, and its
	// idf is that of the docs holding any of them, so that a rare synonym
	// ("show") weighs no more than the common word it stands for ("get").
	seen := make([]bool, len(ix.docs))
	tfw := make([]float64, len(ix.docs))
	var word []int32
	n := float64(len(ix.docs))
	for _, q := range qs {
		word = word[:0]
		for k, t := range q.terms {
			for _, p := range ix.postings[t] {
				if tfw[p.doc] == 0 {
					word = append(word, p.doc)
				}
				tfw[p.doc] += q.w[k] * float64(p.tf)
				if nameHits != nil && p.inName {
					nameHits[p.doc] += q.w[k]
				}
			}
		}
		df := float64(len(word))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, d := range word {
			tf := tfw[d]
			tfw[d] = 0
			scores[d] += idf * tf * (k1 + 1) / (tf + k1)
			if !seen[d] {
				seen[d] = true
				touched = append(touched, d)
			}
			if matched != nil {
				matched[d] |= q.mask
			}
		}
	}
	if matched != nil {
		ix.cover(scores, touched, matched, nq)
	}
	if nameHits != nil {
		for _, d := range touched {
			if n := ix.nameLen[d]; n > 0 {
				scores[d] *= 1 - ix.opts.NameCover + ix.opts.NameCover*min(1, nameHits[d]/n)
			}
		}
	}
	if ix.prior != nil {
		for _, d := range touched {
			scores[d] *= ix.prior[d]
		}
	}
	weights := termWeights(qs)
	if ix.srv != nil {
		ss := ix.srv.scores(weights)
		for _, d := range touched {
			scores[d] *= 1 + ix.opts.ServerContext*ss[ix.srv.docServer[d]]
		}
	}
	if boost := ix.namedServers(weights); len(boost) > 0 {
		for _, d := range touched {
			if boost[ix.docs[d].Server] {
				scores[d] *= 1 + ix.opts.ServerBoost
			}
		}
	}
	return scores, touched
}

// namedServers are the servers whose key the query names, by one of its
// words or their synonyms (weights' terms).
func (ix *Index) namedServers(weights map[string]float64) map[string]bool {
	if ix.opts.Baseline || ix.opts.ServerBoost <= 0 {
		return nil
	}
	var out map[string]bool
	for t := range weights {
		for _, s := range ix.servers[t] {
			if out == nil {
				out = make(map[string]bool)
			}
			out[s] = true
		}
	}
	return out
}
