package intercept

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/mcp-gateway/mcp-gateway/interceptor/contract"
	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/redact"
)

// toolFilter offers the tools matching an allow glob (all when there are
// none) and no deny glob.
type toolFilter struct{ allow, deny []string }

func (f *toolFilter) allows(tool string) bool {
	if len(f.allow) > 0 && !matchAny(f.allow, tool) {
		return false
	}
	for _, g := range f.deny {
		if ok, _ := path.Match(g, tool); ok {
			return false
		}
	}
	return true
}

// sizeGuard refuses calls whose arguments, and replaces results whose JSON,
// exceed a size: an agent can flood a server, and a server an agent's
// context, and neither should.
type sizeGuard struct{ maxArgs, maxResult int }

func (g *sizeGuard) before(req *contract.Request) contract.Decision {
	if n := len(req.Arguments()); g.maxArgs > 0 && n > g.maxArgs {
		return contract.Deny(fmt.Sprintf("arguments are %d bytes; at most %d are allowed", n, g.maxArgs))
	}
	return contract.Continue()
}

func (g *sizeGuard) after(req *contract.Request) contract.Decision {
	if n := len(req.Result); g.maxResult > 0 && n > g.maxResult {
		return contract.Replace(contract.TextResult(
			fmt.Sprintf("the result of %s was %d bytes; at most %d are allowed", req.ExportedTool, n, g.maxResult), true))
	}
	return contract.Continue()
}

// secretGuard keeps secrets out of arguments and results: the values of the
// servers' configured envs and headers (a token given to one server must
// reach no other, nor the agent), and, with patterns, strings in the shape
// of well-known credentials. "redact" masks them; "refuse" denies the call
// or replaces the result with an error naming what was found, never the
// value.
type secretGuard struct {
	refuse   bool
	values   []secretValue  // longest first
	patterns []tokenPattern // nil unless the guard looks for token formats
}

type secretValue struct {
	value, name string // name: where it is configured, e.g. `envs.GITHUB_TOKEN of server "github"`
}

// tokenPatterns are credential formats with a fixed, distinctive prefix and
// a long random body: real tool output (hashes, UUIDs, base64, commit ids)
// does not look like them, so they rarely give false positives. Each must
// stand alone (not inside a longer word); a format whose body may end in
// a '-' (not a word character, so \b cannot end it) ends in a group that
// takes the next character, which mask puts back. They are compiled only for a
// guard that uses them: compiled at package init they cost every start of
// the binary (launch, serve, version) about 3 ms.
type tokenPattern struct {
	name string
	re   *regexp.Regexp
}

func tokenPatterns() []tokenPattern {
	return []tokenPattern{
		{"a GitHub token", regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59})\b`)},
		{"a GitLab token", regexp.MustCompile(`\bglpat-[A-Za-z0-9_-]{20,}`)},
		{"an AWS access key id", regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`)},
		{"a Slack token", regexp.MustCompile(`\bxox[abposr]-[0-9]{6,}-[0-9A-Za-z-]{10,}\b`)},
		{"an Anthropic API key", regexp.MustCompile(`\bsk-ant-[a-z0-9]{2,8}-[A-Za-z0-9_-]{80,}`)},
		{"an OpenAI API key", regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-)[A-Za-z0-9_-]{40,}|\bsk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}\b`)},
		{"a Google API key", regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}([^0-9A-Za-z_-]|$)`)},
		{"a Stripe secret key", regexp.MustCompile(`\b(?:sk|rk)_live_[0-9A-Za-z]{24,}\b`)},
		{"a Hugging Face token", regexp.MustCompile(`\bhf_[A-Za-z]{34}\b`)},
		{"an E2B API key", regexp.MustCompile(`\be2b_[0-9a-f]{40}\b`)},
		{"a private key", regexp.MustCompile(`-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----`)},
	}
}

func newSecretGuard(spec Spec, servers []catalog.ServerSpec) *secretGuard {
	g := &secretGuard{refuse: spec.Mode == "refuse"}
	if spec.Patterns {
		g.patterns = tokenPatterns()
	}
	seen := map[string]bool{}
	add := func(v, name string) {
		v = strings.TrimSpace(v)
		if len(v) < minSecretLen || seen[v] {
			return
		}
		seen[v] = true
		g.values = append(g.values, secretValue{v, name})
	}
	for _, s := range servers {
		for _, k := range sortedKeys(s.Env) {
			add(s.Env[k], fmt.Sprintf("envs.%s of server %q", k, s.Name))
		}
		for _, k := range sortedKeys(s.Headers) {
			v := s.Headers[k]
			add(v, fmt.Sprintf("headers.%s of server %q", k, s.Name))
			if _, cred, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
				add(cred, fmt.Sprintf("headers.%s of server %q", k, s.Name))
			}
		}
	}
	sort.SliceStable(g.values, func(i, j int) bool { return len(g.values[i].value) > len(g.values[j].value) })
	return g
}

// minSecretLen is the shortest configured value treated as a secret: an
// env such as DEBUG=1 or REGION=eu is configuration, and masking every "1"
// would garble results and protect nothing.
const minSecretLen = 8

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (g *secretGuard) before(req *contract.Request) contract.Decision {
	args := req.Arguments()
	out, found := g.scan(args)
	switch {
	case found == "":
		return contract.Continue()
	case g.refuse:
		return contract.Deny("the arguments contain " + found)
	}
	return contract.Rewrite(out)
}

func (g *secretGuard) after(req *contract.Request) contract.Decision {
	out, found := g.scan(req.Result)
	switch {
	case found == "":
		return contract.Continue()
	case g.refuse:
		return contract.Replace(contract.TextResult(
			fmt.Sprintf("the result of %s was withheld: it contains %s", req.ExportedTool, found), true))
	}
	return contract.Replace(out)
}

// scan looks for secrets in every string of a JSON document (keys
// included), decoded, so that escapes cannot hide one. It returns the
// document with them masked and a description of the first found ("" for
// none).
//
// Every string is looked at as it stands in the document, token by token:
// an object with a member name twice ({"text":"<secret>","text":"x"})
// decodes to its last value only, while a server whose parser keeps the
// first would get the secret. The masked document is built from the
// decoded value, which holds each name once (the last value, masked).
func (g *secretGuard) scan(doc json.RawMessage) (json.RawMessage, string) {
	if len(doc) == 0 || (len(g.values) == 0 && len(g.patterns) == 0) {
		return doc, ""
	}
	found, ok := g.scanTokens(doc)
	if !ok || found == "" {
		return doc, ""
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return doc, ""
	}
	var walk func(any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case string:
			s, what := g.mask(v)
			if what != "" && found == "" {
				found = what
			}
			return s
		case []any:
			for i := range v {
				v[i] = walk(v[i])
			}
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			for _, k := range keys {
				e := v[k]
				nk, what := g.mask(k)
				if what != "" && found == "" {
					found = what
				}
				if nk != k {
					delete(v, k)
				}
				v[nk] = walk(e)
			}
		}
		return v
	}
	v = walk(v)
	out, err := json.Marshal(v)
	if err != nil {
		return doc, found
	}
	return out, found
}

// scanTokens reports the first secret in any string of doc (member names
// included, every occurrence of a repeated name), and false if doc is not
// JSON.
func (g *secretGuard) scanTokens(doc json.RawMessage) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return "", true
		}
		if err != nil {
			return "", false
		}
		if str, ok := tok.(string); ok {
			if _, what := g.mask(str); what != "" {
				return what, true
			}
		}
	}
}

// mask returns s with every secret masked, and what the first one was.
func (g *secretGuard) mask(s string) (string, string) {
	found := ""
	for _, sv := range g.values {
		if strings.Contains(s, sv.value) {
			if found == "" {
				found = "the value of " + sv.name
			}
			s = strings.ReplaceAll(s, sv.value, redact.Mask)
		}
	}
	for _, p := range g.patterns {
		if p.re.MatchString(s) {
			if found == "" {
				found = p.name
			}
			s = p.re.ReplaceAllString(s, redact.Mask+"${1}") // ${1}: the character after a token, if taken
		}
	}
	return s, found
}
