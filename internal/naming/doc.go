// Package naming gives every upstream item (a tool, a prompt) the one name
// agents see, by the contract's rule: the first server by name keeps an
// item's plain name, later servers get "<server>_<item>", and every name is
// a valid tool name (^[a-zA-Z0-9_-]{1,64}$, Sanitize). Names are sticky
// (Namer): one an agent has seen keeps meaning the same item across
// restarts and list changes.
//
// The package is a leaf (standard library only). A Namer is not safe for
// concurrent use: its owner (internal/aggregate) holds its lock.
package naming
