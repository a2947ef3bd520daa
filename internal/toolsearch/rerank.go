package toolsearch

import (
	"math"
	"math/bits"
	"slices"
	"strings"
)

// cover multiplies each touched doc's score by 1-Coverage+Coverage*share,
// share the part of the query's own words (up to 64) the doc matched, so
// that a tool matching three of four words beats one matching one word
// often.
func (ix *Index) cover(scores []float64, touched []int32, matched []uint64, nq int) {
	share := 1 / float64(min(nq, 64))
	for _, d := range touched {
		n := float64(bits.OnesCount64(matched[d]))
		scores[d] *= 1 - ix.opts.Coverage + ix.opts.Coverage*n*share
	}
}

// sizePrior is, per doc, (m/n)^alpha capped at 1: n the number of tools of
// the doc's server, m the median number over the servers; nil for no
// docs.
func sizePrior(docs []Doc, alpha float64) []float64 {
	if len(docs) == 0 {
		return nil // an empty gateway: nothing to weigh
	}
	size := make(map[string]int)
	for _, d := range docs {
		size[d.Server]++
	}
	sizes := make([]int, 0, len(size))
	for _, n := range size {
		sizes = append(sizes, n)
	}
	slices.Sort(sizes)
	m := float64(sizes[len(sizes)/2])
	out := make([]float64, len(docs))
	for i, d := range docs {
		out[i] = min(1, math.Pow(m/float64(size[d.Server]), alpha))
	}
	return out
}

// leadSentence is a description's first sentence: what the tool does,
// before the details, examples and caveats that long descriptions go on
// with (and that name other tools' subjects).
func leadSentence(s string) string {
	s = strings.TrimSpace(s)
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\n':
			return s[:i]
		case '.', '!', '?':
			if i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\n' {
				return s[:i]
			}
		}
	}
	return s
}
