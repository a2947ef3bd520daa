package rawjson

import (
	"bytes"
	"unicode/utf8"
)

// memberScan walks the top-level members of a JSON object, validating
// every byte up to its closing brace as encoding/json's Decoder would
// (bytes after it are not looked at, as the Decoder does not), and giving
// each member's offsets as the Decoder-based code reads them. It fails
// (failed set, next false) on anything it does not take: invalid JSON, and
// also what is valid but not its to read: a key written with escapes or
// whose bytes are not valid UTF-8 (its name is then not its bytes), and
// nesting deeper than maxScanDepth. A failed scan leaves the answer to the
// slow path.
type memberScan struct {
	b []byte
	i int // where scanning goes on

	// The current member, after next: at is where the Decoder stood
	// before its key (the first non-space byte after '{' or after the
	// previous value: the key's quote, or the comma); name its key's
	// bytes; afterKey the offset just past the key's closing quote;
	// valEnd just past its value.
	at, afterKey, valStart, valEnd int
	name                           []byte

	started bool
	end     int // past the closing brace, once next reported the end
	failed  bool
}

// maxScanDepth bounds the nesting memberScan follows inside a value
// (deeper goes to the slow path).
const maxScanDepth = 1024

// next moves to the next member and reports whether there is one; at the
// end (or a failure) it reports false, with end (or failed) set.
func (s *memberScan) next() bool {
	if s.failed || s.end > 0 {
		return false
	}
	b := s.b
	i := skipSpace(b, s.i)
	if !s.started {
		s.started = true
		if i >= len(b) || b[i] != '{' {
			return s.fail()
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == '}' {
			s.end = i + 1
			return false
		}
		s.at = i
	} else {
		if i >= len(b) {
			return s.fail()
		}
		switch b[i] {
		case '}':
			s.end = i + 1
			return false
		case ',':
			s.at = i
			i = skipSpace(b, i+1)
		default:
			return s.fail()
		}
	}
	if i >= len(b) || b[i] != '"' {
		return s.fail()
	}
	k := scanString(b, i)
	if k < 0 {
		return s.fail()
	}
	name := b[i+1 : k-1]
	for _, c := range name {
		if c == '\\' || c >= utf8.RuneSelf {
			if bytes.IndexByte(name, '\\') >= 0 || !utf8.Valid(name) {
				return s.fail()
			}
			break
		}
	}
	i = skipSpace(b, k)
	if i >= len(b) || b[i] != ':' {
		return s.fail()
	}
	v := skipSpace(b, i+1)
	e := scanValue(b, v)
	if e < 0 {
		return s.fail()
	}
	s.name, s.afterKey, s.valStart, s.valEnd, s.i = name, k, v, e, e
	return true
}

func (s *memberScan) fail() bool {
	s.failed = true
	return false
}

// skipSpace returns the offset of the first byte from i on that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanString returns the offset just past the JSON string whose opening
// quote is at b[i], or -1 when it is not a valid one (a control character,
// an unknown escape, or no closing quote). Other bytes, valid UTF-8 or not,
// are taken as encoding/json takes them.
func scanString(b []byte, i int) int {
	for i++; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			return i + 1
		case c == '\\':
			if i+1 >= len(b) {
				return -1
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return -1
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return -1
					}
				}
				i += 6
			default:
				return -1
			}
		case c < 0x20:
			return -1
		default:
			i++
		}
	}
	return -1
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// scanValue returns the offset just past the JSON value that starts at
// b[i], or -1 when there is none there, it is invalid, or it nests deeper
// than maxScanDepth.
func scanValue(b []byte, i int) int {
	// Bit d of inObj says whether the d-th array or object the value is
	// inside is an object.
	var inObj [maxScanDepth / 64]uint64
	depth := 0
	for {
		// A value starts at b[i].
		if i >= len(b) {
			return -1
		}
		switch c := b[i]; c {
		case '{', '[':
			if depth == maxScanDepth {
				return -1
			}
			closing := byte(']')
			if c == '{' {
				closing = '}'
				inObj[depth/64] |= 1 << (depth % 64)
			} else {
				inObj[depth/64] &^= 1 << (depth % 64)
			}
			depth++
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == closing {
				i++
				depth--
				break // an empty one: a value ended
			}
			if c == '{' {
				if i = scanKey(b, i); i < 0 {
					return -1
				}
			}
			continue // its first value
		case '"':
			if i = scanString(b, i); i < 0 {
				return -1
			}
		case 't':
			if !bytes.HasPrefix(b[i:], []byte("true")) {
				return -1
			}
			i += 4
		case 'f':
			if !bytes.HasPrefix(b[i:], []byte("false")) {
				return -1
			}
			i += 5
		case 'n':
			if !bytes.HasPrefix(b[i:], []byte("null")) {
				return -1
			}
			i += 4
		default:
			if i = scanNumber(b, i); i < 0 {
				return -1
			}
		}
		// A value ended at i: close what it ends, or go on to the next
		// value of the array or object it is in.
		for {
			if depth == 0 {
				return i
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return -1
			}
			closing := byte(']')
			if inObj[(depth-1)/64]&(1<<((depth-1)%64)) != 0 {
				closing = '}'
			}
			if b[i] == closing {
				i++
				depth--
				continue
			}
			if b[i] != ',' {
				return -1
			}
			i = skipSpace(b, i+1)
			if closing == '}' {
				if i = scanKey(b, i); i < 0 {
					return -1
				}
			}
			break
		}
	}
}

// scanKey reads an object member's key and colon at b[i] and returns the
// offset of its value (spaces skipped), or -1.
func scanKey(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = scanString(b, i); i < 0 {
		return -1
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipSpace(b, i+1)
}

// scanNumber returns the offset just past the JSON number at b[i], or -1.
func scanNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

// digits returns the offset of the first byte from i on that is not a
// decimal digit.
func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}
