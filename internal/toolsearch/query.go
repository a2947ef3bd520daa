package toolsearch

// qword is one word of a query as the ranker matches it: its term and its
// synonyms' (at lower weights), matched together as one (a tool that says
// "get" and "fetch" matches "retrieve" once, not twice).
type qword struct {
	terms []string
	w     []float64
	mask  uint64 // the query's own words it stands for, as bits
}

// queryWords reads a query: each word once however often it is written (a
// query is a sentence, not a document), with its synonyms at
// SynonymWeight unless the query has them itself, and the joins of its
// camelCase parts ("WordPress": "wordpress", standing for both words).
// nq is the number of the query's own words (the bits of the masks).
func (ix *Index) queryWords(query string) (qs []qword, nq int) {
	var ts, joins []string
	var parts [][2]int
	if ix.opts.Baseline {
		ts = plainTerms(query)
	} else {
		ts, joins, parts = termsJoined(query)
	}
	bit := make(map[string]uint64) // the query's own terms' bits
	pos := make([]uint64, len(ts))
	for i, t := range ts {
		if _, ok := bit[t]; !ok {
			bit[t] = 1 << (nq % 64)
			nq++
			qs = append(qs, qword{terms: []string{t}, w: []float64{1}, mask: bit[t]})
		}
		pos[i] = bit[t]
	}
	if !ix.opts.Baseline && ix.opts.HintWeight > 0 {
		for _, h := range hints(query) {
			if t := stem(h); bit[t] == 0 && ix.postings[t] != nil {
				bit[t] = 1 << (nq % 64)
				nq++
				qs = append(qs, qword{terms: []string{t}, w: []float64{ix.opts.HintWeight}, mask: bit[t]})
			}
		}
	}
	for k, j := range joins {
		if _, ok := bit[j]; !ok && ix.postings[j] != nil {
			bit[j] = pos[parts[k][0]] | pos[parts[k][1]]
			qs = append(qs, qword{terms: []string{j}, w: []float64{1}, mask: bit[j]})
		}
	}
	if ix.opts.Baseline || ix.opts.SynonymWeight <= 0 {
		return qs, nq
	}
	for i := range qs {
		q := &qs[i]
		sw := ix.opts.SynonymWeight
		for _, s := range ix.syn[q.terms[0]] {
			if _, own := bit[s]; !own && ix.postings[s] != nil {
				q.terms = append(q.terms, s)
				q.w = append(q.w, sw)
			}
		}
	}
	return qs, nq
}

// termWeights is every term of qs with its highest weight.
func termWeights(qs []qword) map[string]float64 {
	out := make(map[string]float64)
	for _, q := range qs {
		for k, t := range q.terms {
			out[t] = max(out[t], q.w[k])
		}
	}
	return out
}
