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
	var out []string
	rs := []rune(s)
	start := -1
	flush := func(end int) {
		if start >= 0 && end > start {
			out = append(out, strings.ToLower(string(rs[start:end])))
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
			case unicode.IsUpper(prev) && unicode.IsUpper(r) && i+1 < len(rs) && unicode.IsLower(rs[i+1]):
				flush(i) // "HTTPServer": the S starts a word
			}
		}
		if start < 0 {
			start = i
		}
	}
	flush(len(rs))
	return out
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
	ws := words(s, true)
	out := ws[:0]
	for _, w := range ws {
		if stopword(w) || len(w) == 1 && (w[0] < '0' || w[0] > '9') {
			continue // a lone letter ("what's" -> s) says nothing
		}
		out = append(out, stem(w))
	}
	return out
}

// plainTerms is text as the plain BM25 baseline reads it: lowercase words
// split on non-alphanumerics only, nothing dropped or stemmed.
func plainTerms(s string) []string { return words(s, false) }
