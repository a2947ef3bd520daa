package toolsearch

import (
	"strings"
	"unicode"
)

// words splits s into lowercase words: on anything that is not a letter or
// a digit (so snake_case and kebab-case split), and, when camel is set, at
// a case change too (camelCase, HTTPServer -> http server). Tool names are
// written every way, and an agent's query names none of them exactly.
func words(s string, camel bool) []string {
	out, _ := splitWords(s, camel)
	return out
}

// splitWords is words, and for each word whether a case change, not a
// separator, parted it from the one before (glued: "Press" of
// "WordPress").
func splitWords(s string, camel bool) (out []string, glued []bool) {
	rs := []rune(s)
	start := -1
	flush := func(end int) {
		if start >= 0 && end > start {
			w := rs[start:end]
			if n := len(w); camel && n >= 3 && w[n-1] == 's' && isUpperRun(w[:n-1]) {
				w = w[:n-1] // PRs, URLs, IDs: the acronym's plural is the acronym
			}
			out = append(out, strings.ToLower(string(w)))
			glued = append(glued, start > 0 && (unicode.IsLetter(rs[start-1]) || unicode.IsDigit(rs[start-1])))
		}
		start = -1
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			continue
		}
		if start >= 0 && camel && i > 0 {
			prev := rs[i-1]
			switch {
			case (unicode.IsLower(prev) || unicode.IsDigit(prev)) && unicode.IsUpper(r):
				flush(i) // letters and digits stay together: k8s, s3, ec2, V1
			case unicode.IsUpper(prev) && unicode.IsUpper(r) && i+1 < len(rs) && unicode.IsLower(rs[i+1]) &&
				!pluralAcronym(rs, i+1):
				flush(i) // "HTTPServer": the S starts a word
			}
		}
		if start < 0 {
			start = i
		}
	}
	flush(len(rs))
	return out, glued
}

// pluralAcronym reports whether rs[i] is the "s" of an acronym's plural
// ("PRs", "IDs", "URLs"): it ends a word, so the capital before it does
// not start one ("PRs" is "prs", not "p" and "rs").
func pluralAcronym(rs []rune, i int) bool {
	return rs[i] == 's' && (i+1 == len(rs) || !unicode.IsLower(rs[i+1]))
}

func isUpperRun(rs []rune) bool {
	for _, r := range rs {
		if !unicode.IsUpper(r) {
			return false
		}
	}
	return true
}

// stopword reports whether w says nothing about which tool is meant: the
// glue of a sentence ("how do I get the ..."), and words every tool
// description has ("tool", "use").
func stopword(w string) bool {
	switch w {
	case "a", "an", "the", "of", "to", "in", "on", "for", "and", "or", "is", "are", "be", "by", "with",
		"from", "at", "as", "it", "its", "this", "that", "these", "those", "i", "me", "my", "we", "our",
		"you", "your", "can", "could", "would", "should", "will", "do", "does", "how", "what", "which",
		"please", "want", "need", "some", "any", "into", "about", "tool", "use", "using", "used",
		"if", "then", "than", "so", "not", "no", "yes", "all", "also", "via", "eg",
		"here", "there", "now", "just", "whats", "am", "was", "were", "been", "has", "have", "had", "did",
		"thing", "things", "something", "stuff", "let", "lets", "im", "ive", "them", "they", "their", "us", "he", "she":
		return true
	}
	return false
}

// stem reduces an English word to a stem shared by its common forms
// (files/file, created/creates/creating/create, queries/query): a few
// suffix rules rather than a full Porter stemmer, because tool text is
// short and mostly verbs and nouns in their plain forms. Both the index
// and the query go through it, so only consistency matters.
func stem(w string) string {
	if len(w) <= 3 || !isASCIIAlpha(w) {
		return w
	}
	switch w {
	case "news", "series", "species", "always", "canvas", "alias", "atlas", "https":
		return w // not plurals
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "xes"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") &&
		!strings.HasSuffix(w, "is"):
		w = w[:len(w)-1]
	}
	stripped := false
	switch {
	case strings.HasSuffix(w, "ing") && len(w) > 5:
		w, stripped = w[:len(w)-3], true
	case strings.HasSuffix(w, "ed") && len(w) > 4:
		w, stripped = w[:len(w)-2], true
	}
	if stripped && len(w) > 3 && w[len(w)-1] == w[len(w)-2] && !strings.ContainsRune("aeiouls", rune(w[len(w)-1])) {
		w = w[:len(w)-1] // running -> run, but add, fill, pass stay
	}
	if strings.HasSuffix(w, "e") && len(w) > 3 {
		w = w[:len(w)-1] // create, created, creating -> creat
	}
	if strings.HasSuffix(w, "y") && len(w) > 3 {
		w = w[:len(w)-1] + "i" // query, queries -> queri
	}
	return w
}

func hasDigit(w string) bool { return strings.ContainsAny(w, "0123456789") }

func isASCIIAlpha(w string) bool {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// terms is text as the ranker indexes and queries it: words (camelCase
// split), stopwords dropped, stemmed.
func terms(s string) []string {
	ts, _, _ := termsJoined(s)
	return ts
}

// termsJoined is terms, and the joins of the camelCase parts that stand
// next to each other ("WordPress" gives "word", "press" and, joined,
// "wordpress"): products are written both ways ("Wordpress",
// "WordPress", "GitHub", "github"), and a query says them either way.
// Joins with a digit (pressV1) are left out. parts[k] holds the
// positions in ts of the two words of joins[k].
func termsJoined(s string) (ts, joins []string, parts [][2]int) {
	ws, glued := splitWords(s, true)
	prev := -1 // position in ts of the word before, -1 if dropped
	for i, w := range ws {
		if stopword(w) || len(w) == 1 && (w[0] < '0' || w[0] > '9') {
			prev = -1
			continue // a lone letter ("what's" -> s) says nothing
		}
		if glued[i] && prev >= 0 && !hasDigit(w) && !hasDigit(ws[i-1]) {
			joins = append(joins, stem(ws[i-1]+w))
			parts = append(parts, [2]int{prev, len(ts)})
		}
		prev = len(ts)
		ts = append(ts, stem(w))
	}
	return ts, joins, parts
}

// indexTerms is text as the index holds it: its terms and their joins.
func indexTerms(s string) []string {
	ts, joins, _ := termsJoined(s)
	return append(ts, joins...)
}

// plainTerms is text as the plain BM25 baseline reads it: lowercase words
// split on non-alphanumerics only, nothing dropped or stemmed.
func plainTerms(s string) []string { return words(s, false) }
