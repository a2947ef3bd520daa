// Package jsonlimit bounds what JSON the gateway decodes with the fast
// segmentio decoder (the one the MCP SDK uses), which recurses once per
// nesting level with no limit of its own: a body of a few megabytes of
// brackets would overflow the goroutine stack and kill the process. The
// SDK checks depth before decoding; so must every other caller.
package jsonlimit

// MaxDepth is the nesting the gateway accepts, the SDK's own bound.
const MaxDepth = 1000

// DepthWithin reports whether no object or array in data nests deeper than
// max. It scans once, skipping string contents, and does not validate.
func DepthWithin(data []byte, max int) bool {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > max {
				return false
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return true
}
