package toolsearch

import "regexp"

// A query often names the object it is about by an instance rather than a
// word: "notes.txt" is a file, "#general" a channel, "40.7, -74.0" a
// place's coordinates. Tool text says the word ("Read a file", "channel
// ID", "latitude"), so these patterns say it for the query.
var (
	hintFile   = regexp.MustCompile(`(?i)[\w-]\.(txt|md|json|ya?ml|csv|tsv|js|mjs|ts|tsx|py|go|rs|java|rb|php|c|h|cpp|html?|css|xml|log|pdf|docx?|xlsx?|pptx?|png|jpe?g|gif|svg|toml|ini|conf|cfg|env|sh|sql|zip|tar|gz)\b`)
	hintPath   = regexp.MustCompile(`(^|\s)(~|\.{1,2})?/[\w.-]`)
	hintURL    = regexp.MustCompile(`(?i)\bhttps?://|\bwww\.`)
	hintChan   = regexp.MustCompile(`(^|\s)#[a-zA-Z][\w-]*`)
	hintUser   = regexp.MustCompile(`(^|\s)@[a-zA-Z][\w.-]*`)
	hintIP     = regexp.MustCompile(`\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b`)
	hintCoords = regexp.MustCompile(`-?\d{1,3}\.\d+\s*,\s*-?\d{1,3}\.\d+`)
)

// hints are the words that the instances a query names stand for.
func hints(query string) []string {
	var out []string
	switch {
	case hintFile.MatchString(query), hintPath.MatchString(query):
		out = append(out, "file")
	case hintURL.MatchString(query):
		out = append(out, "url")
	}
	if hintChan.MatchString(query) {
		out = append(out, "channel")
	}
	if hintUser.MatchString(query) {
		out = append(out, "user")
	}
	if hintIP.MatchString(query) {
		out = append(out, "ip")
	} else if hintCoords.MatchString(query) {
		out = append(out, "coordinates")
	}
	return out
}
