// Package redact removes secrets from text before it is logged or sent to an
// agent. Servers print their own configuration more often than one would
// hope, and the gateway quotes their stderr in errors.
package redact

import (
	"slices"
	"strings"
)

// Mask replaces every secret.
const Mask = "[REDACTED]"

// minLen is the shortest value treated as a secret: masking "1" or "on"
// would garble every line and protect nothing.
const minLen = 4

// Redactor replaces known secret values with Mask. The zero value and nil
// redact nothing. It is safe for concurrent use.
type Redactor struct {
	r *strings.Replacer
}

// New returns a Redactor for the given secret values. Longer secrets are
// replaced first, so a secret containing another is masked whole.
func New(secrets ...string) *Redactor {
	uniq := make([]string, 0, len(secrets))
	for _, s := range secrets {
		if len(s) >= minLen && !slices.Contains(uniq, s) {
			uniq = append(uniq, s)
		}
	}
	if len(uniq) == 0 {
		return &Redactor{}
	}
	slices.SortFunc(uniq, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(uniq))
	for _, s := range uniq {
		pairs = append(pairs, s, Mask)
	}
	return &Redactor{r: strings.NewReplacer(pairs...)}
}

// String returns s with every secret masked.
func (r *Redactor) String(s string) string {
	if r == nil || r.r == nil {
		return s
	}
	return r.r.Replace(s)
}
