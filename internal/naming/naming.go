package naming

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxLen is the longest tool name clients accept: they validate names
// against ^[a-zA-Z0-9_-]{1,64}$ and reject the whole list otherwise.
const MaxLen = 64

// Sanitize maps any string to a valid exported tool name. Characters
// outside [a-zA-Z0-9_-] become '_'; a name longer than MaxLen is cut and
// ends in a short hash of the whole input, so that two long names sharing a
// prefix stay distinct and the result is the same on every run.
func Sanitize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b.WriteByte(c)
		default:
			b.WriteByte('_')
		}
	}
	out := b.String()
	if out == "" {
		out = "_"
	}
	if len(out) > MaxLen {
		return out[:min(len(out), MaxLen-9)] + "_" + shortHash(s)
	}
	return out
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}

// Key identifies an item (a tool, a prompt) by where it comes from.
type Key struct{ Server, Item string }

// Namer assigns exported names to upstream tools (and prompts). The rule is
// the contract's: the first server by name keeps a tool's plain name and
// later servers get "<server>_<tool>". Assignments are sticky for the
// gateway's lifetime, so a name an agent has seen keeps meaning the same
// tool across restarts and list changes; the names of other gateways
// changed under the agent when a second server appeared, ours do not.
type Namer struct {
	assigned map[Key]string
}

// New returns a Namer that has assigned nothing yet.
func New() *Namer { return &Namer{assigned: make(map[Key]string)} }

// Assign returns exported names for the present tools, visited in order
// (servers sorted by name, each server's tools in published order).
func (n *Namer) Assign(present []Key) map[Key]string {
	out := make(map[Key]string, len(present))
	taken := make(map[string]bool, len(present))
	if len(n.assigned) == 0 {
		// The first naming (at start) holds every tool: sized once
		// instead of growing through every power of two.
		n.assigned = make(map[Key]string, len(present))
	}
	// Existing assignments first, so that a newcomer never takes a name that
	// is already in use.
	for _, k := range present {
		if name, ok := n.assigned[k]; ok && !taken[name] {
			out[k] = name
			taken[name] = true
		}
	}
	for _, k := range present {
		if _, ok := out[k]; ok {
			continue
		}
		name := Sanitize(k.Item)
		if taken[name] {
			name = Sanitize(k.Server + "_" + k.Item)
		}
		if taken[name] {
			// Two different originals sanitized to the same name: make the
			// later one unique, deterministically.
			base := name
			if len(base) > MaxLen-9 {
				base = base[:MaxLen-9]
			}
			name = base + "_" + shortHash(k.Server+"\x00"+k.Item)
		}
		out[k] = name
		taken[name] = true
		n.assigned[k] = name
	}
	return out
}
