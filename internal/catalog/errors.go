package catalog

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidConfig is matched (errors.Is) by every error Resolve returns because of the shape or
// content of the mcp config: *ConfigError and *UnknownServerError. The caller shows those
// messages to users as "Failed to start MCP gateway: <msg>", so they are short and name the
// server and field, and never contain a value from the config (envs and properties hold secrets).
var ErrInvalidConfig = errors.New("invalid mcp config")

// ErrNotInstalled is matched by the error Resolve returns when a catalog server is neither
// installed nor runnable through its package runner (npx, uvx). It is not a config error: the
// config is fine, the template lacks the server.
var ErrNotInstalled = errors.New("server not installed")

// ConfigError reports one invalid part of the mcp config. Server is the key in the config ("" for
// the config as a whole) and Field the field inside that server's entry ("" for the entry itself).
// Err never contains a value taken from the config.
type ConfigError struct {
	Server string
	Field  string
	Err    error
}

// Error formats as `server "github/acme/x": runCmd: is required`.
func (e *ConfigError) Error() string {
	var b strings.Builder
	if e.Server != "" {
		fmt.Fprintf(&b, "server %q: ", e.Server)
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	if e.Err == nil {
		b.WriteString("invalid")
	} else {
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *ConfigError) Unwrap() error { return e.Err }

// Is makes every ConfigError match ErrInvalidConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// UnknownServerError reports a config key that is neither a GitHub server, a local server (no
// runCmd) nor a catalog entry. It lists the catalog so the user can see what the template offers,
// and suggests a close catalog name when there is one (a typo such as "sequential-thinking").
type UnknownServerError struct {
	Server  string
	Known   []string // catalog names, sorted
	Suggest string   // closest catalog name, or ""
}

// Error formats as `unknown server "foo": not in the catalog and no runCmd given (catalog: a, b)`.
func (e *UnknownServerError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "unknown server %q: not in the catalog and no runCmd given", e.Server)
	if e.Suggest != "" {
		fmt.Fprintf(&b, "; did you mean %q?", e.Suggest)
	}
	fmt.Fprintf(&b, " (%s)", catalogHint(e.Known))
	return b.String()
}

// catalogHint tells a user who named no catalog entry what the catalog holds: its names when
// they fit in a message, else how to search it.
func catalogHint(names []string) string {
	switch {
	case len(names) == 0:
		return "the catalog is empty"
	case len(names) > maxListed:
		return fmt.Sprintf("%d servers in the catalog: `mcp-gateway catalog <word>` searches them", len(names))
	}
	return "catalog: " + strings.Join(names, ", ")
}

// maxListed is the most catalog names an error lists; a longer list would bury the message.
const maxListed = 20

// Is makes every UnknownServerError match ErrInvalidConfig.
func (e *UnknownServerError) Is(target error) bool { return target == ErrInvalidConfig }

// suggest returns the known name closest to name when it is a plausible typo: equal after
// dropping case, '-' and '_', or at most two edits away (one for names under six bytes). It returns "" otherwise.
func suggest(name string, known []string) string {
	fold := func(s string) string {
		return strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(s))
	}
	// Two edits turn most short names into some other catalog name ("foo" into "box"); allow
	// them only for names long enough that a two-letter slip is still recognizably the same.
	best, bestDist := "", 3
	if len(name) < 6 {
		bestDist = 2
	}
	for _, k := range known {
		if fold(k) == fold(name) {
			return k
		}
		if d := editDistance(strings.ToLower(name), strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes. Names are short (config
// keys are compared against a catalog of tens of entries), so the quadratic cost does not matter;
// keys longer than 64 bytes are never typos of a catalog name and are not compared.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return max(len(a), len(b))
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// UnavailableError reports a config key that names a catalog entry which cannot start here: E2B
// runs it as a Docker image, and no package runs it without Docker (Entry.Unavailable). The
// launch fails at validation, before anything starts, rather than with a server that never comes
// up.
type UnavailableError struct {
	Server string
	Reason string // why it cannot start here
	HowTo  string // how to run it anyway
}

// Error formats as `server "x" cannot start here: <reason>; to run it anyway, <how>`.
func (e *UnavailableError) Error() string {
	return fmt.Sprintf("server %q cannot start here: %s; to run it anyway, %s", e.Server, e.Reason, e.HowTo)
}

// Is makes every UnavailableError match ErrInvalidConfig: the config asks for something this
// gateway cannot do.
func (e *UnavailableError) Is(target error) bool { return target == ErrInvalidConfig }

// Problems is every problem Resolve found in one config: a config fixed one
// error per launch takes as many launches (and template rebuilds) as it has
// problems. errors.Is and errors.As see each of them.
type Problems []error

// Error lists the problems one per line, after a count.
func (p Problems) Error() string {
	lines := make([]string, len(p))
	for i, err := range p {
		lines[i] = err.Error()
	}
	return fmt.Sprintf("%d problems in the mcp config:\n  %s", len(p), strings.Join(lines, "\n  "))
}

// Unwrap returns the problems.
func (p Problems) Unwrap() []error { return p }

// joinProblems returns errs as one error: nil, the only one, or Problems
// (flattened, so a server's several problems are listed with the others).
func joinProblems(errs []error) error {
	var flat Problems
	for _, err := range errs {
		var p Problems
		if errors.As(err, &p) {
			flat = append(flat, p...)
			continue
		}
		flat = append(flat, err)
	}
	switch len(flat) {
	case 0:
		return nil
	case 1:
		return flat[0]
	}
	return flat
}
