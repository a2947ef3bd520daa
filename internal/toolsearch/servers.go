package toolsearch

import "math"

// serverIndex ranks the servers themselves, each as one document made of
// all its tools' text: a query's domain words ("cluster", "channel",
// "repo") say which server it is about even when the tool it wants does
// not use them ("which cluster am I pointed at" is kubectl_context's).
type serverIndex struct {
	docServer []int // each doc's server, by position in the servers
	n         int   // servers
	postings  map[string][]posting
	idf       map[string]float64
}

// buildServerIndex indexes the servers of docs, whose terms per field
// Build computed (fieldTerms, parallel to docs).
func buildServerIndex(docs []Doc, fieldTerms [][numFields][]string) *serverIndex {
	s := &serverIndex{docServer: make([]int, len(docs)), postings: make(map[string][]posting)}
	of := make(map[string]int)
	var tfs []map[string]float64
	var lens []float64
	for i, d := range docs {
		k, ok := of[d.Server]
		if !ok {
			k = len(tfs)
			of[d.Server] = k
			tfs = append(tfs, make(map[string]float64))
			lens = append(lens, 0)
		}
		s.docServer[i] = k
		for f := range numFields {
			if f == fieldLead || f == fieldServerText && ok {
				continue // the same for every tool of the server: counted once
			}
			for _, t := range fieldTerms[i][f] {
				tfs[k][t]++
				lens[k]++
			}
		}
	}
	s.n = len(tfs)
	total := 0.0
	for _, l := range lens {
		total += l
	}
	avg := max(total/float64(max(s.n, 1)), 1)
	for k, tf := range tfs {
		norm := 1 - b + b*lens[k]/avg
		for t, v := range tf {
			s.postings[t] = append(s.postings[t], posting{doc: int32(k), tf: float32(v / norm)})
		}
	}
	s.idf = make(map[string]float64, len(s.postings))
	for t, ps := range s.postings {
		df := float64(len(ps))
		s.idf[t] = math.Log(1 + (float64(s.n)-df+0.5)/(df+0.5))
	}
	return s
}

// scores are the servers' BM25 scores for the weighted query terms,
// divided by the best one (all zero when none matches).
func (s *serverIndex) scores(weights map[string]float64) []float64 {
	out := make([]float64, s.n)
	for t, qw := range weights {
		idf := s.idf[t]
		for _, p := range s.postings[t] {
			tf := float64(p.tf)
			out[p.doc] += qw * idf * tf * (k1 + 1) / (tf + k1)
		}
	}
	best := 0.0
	for _, v := range out {
		best = max(best, v)
	}
	if best > 0 {
		for i := range out {
			out[i] /= best
		}
	}
	return out
}
