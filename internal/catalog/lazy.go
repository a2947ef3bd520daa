package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The embedded catalog holds every E2B server key (a quarter megabyte of JSON), and every
// gateway process loads it at start, while a config names a handful of servers. Parsing it
// strictly took tens of milliseconds per process; Load instead splits it into its entries with
// splitServers (one pass over the bytes, no decoding) and parses an entry when it is first asked
// for. The embedded catalog is a build artifact that the package's tests parse strictly, entry
// by entry (TestEmbeddedCatalog), so deferring its validation loses nothing; a template's
// override file is still parsed strictly at Load.

// splitServers returns the raw entries of a catalog document {"servers": {"<name>": {...}}},
// keyed by name. It checks only the outline (objects, string keys, balanced values, no duplicate
// names); ok is false for anything it does not recognize, and the caller then parses strictly,
// which explains the problem.
func splitServers(data []byte) (map[string]json.RawMessage, bool) {
	s := scanner{data: data}
	if !s.expect('{') {
		return nil, false
	}
	if key, ok := s.key(); !ok || key != "servers" || !s.expect('{') {
		return nil, false
	}
	out := make(map[string]json.RawMessage)
	if s.peek() == '}' {
		s.pos++
	} else {
		for {
			name, ok := s.key()
			if !ok || out[name] != nil {
				return nil, false
			}
			start := s.skipSpace()
			if !s.value() || data[start] != '{' {
				return nil, false
			}
			out[name] = data[start:s.pos]
			if s.expect(',') {
				continue
			}
			if !s.expect('}') {
				return nil, false
			}
			break
		}
	}
	if !s.expect('}') || s.skipSpace() != len(data) {
		return nil, false
	}
	return out, true
}

// scanner walks JSON bytes without decoding them.
type scanner struct {
	data []byte
	pos  int
}

func (s *scanner) skipSpace() int {
	for s.pos < len(s.data) && (s.data[s.pos] == ' ' || s.data[s.pos] == '\n' || s.data[s.pos] == '\t' || s.data[s.pos] == '\r') {
		s.pos++
	}
	return s.pos
}

func (s *scanner) peek() byte {
	if s.skipSpace() < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

func (s *scanner) expect(c byte) bool {
	if s.peek() != c {
		return false
	}
	s.pos++
	return true
}

// key reads `"name":`. Names with escapes are left to the strict parser.
func (s *scanner) key() (string, bool) {
	if s.peek() != '"' {
		return "", false
	}
	end := bytes.IndexByte(s.data[s.pos+1:], '"')
	if end < 0 {
		return "", false
	}
	name := s.data[s.pos+1 : s.pos+1+end]
	if bytes.IndexByte(name, '\\') >= 0 {
		return "", false
	}
	s.pos += end + 2
	return string(name), s.expect(':')
}

// value moves past one JSON object or array, matching brackets outside strings. Whether the
// value is valid JSON inside is for the strict parser to say when the entry is parsed.
func (s *scanner) value() bool {
	var open []byte // the closing bracket each open one needs
	for ; s.pos < len(s.data); s.pos++ {
		switch c := s.data[s.pos]; c {
		case '"':
			for s.pos++; s.pos < len(s.data) && s.data[s.pos] != '"'; s.pos++ {
				if s.data[s.pos] == '\\' {
					s.pos++
				}
			}
			if s.pos >= len(s.data) {
				return false
			}
		case '{':
			open = append(open, '}')
		case '[':
			open = append(open, ']')
		case '}', ']':
			if len(open) == 0 || open[len(open)-1] != c {
				return false
			}
			open = open[:len(open)-1]
			if len(open) == 0 {
				s.pos++
				return true
			}
		default:
			if len(open) == 0 {
				return false // a scalar where an entry's object belongs
			}
		}
	}
	return false
}

// parseLazy parses the embedded entry called name. A failure is a broken build (the tests parse
// every embedded entry), not bad input, so it panics with what is wrong rather than passing the
// entry off as unknown.
func parseLazy(name string, raw json.RawMessage) Entry {
	e, err := parseEntry(name, raw)
	if err != nil {
		panic(fmt.Sprintf("embedded catalog entry %q: %v (catalog.json must pass the catalog package's tests)", name, err))
	}
	return e
}
