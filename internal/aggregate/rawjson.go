package aggregate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What the gateway relays stays the bytes the server or agent sent: Go SDK
// types would drop members they do not know (a tool's execution), add zero
// values (idempotentHint, ttlMs) and sort map keys (an elicitation form's
// fields). Only what routing needs is rewritten, member by member, with
// setMember.

// rawResult is a result the SDK server sends as the bytes it holds: the
// embedded ResultBase makes it an mcp.Result, and the SDK encodes results
// with encoding/json, which calls MarshalJSON (and compacts the bytes).
type rawResult struct {
	mcp.ResultBase
	raw json.RawMessage
}

func (r *rawResult) MarshalJSON() ([]byte, error) { return r.raw, nil }

// setMember returns obj, a JSON object, with the value of its top-level
// member key replaced by value (appended when absent); every other byte is
// kept as it was, so member order and the encoding of other values survive.
// A key spelled twice has each value replaced, so that no reader can pick
// the old one.
//
// It runs on every forwarded request that needs a rewrite, so it scans
// obj's bytes itself (scanMembers) rather than through encoding/json's
// Decoder; what that scan does not take (a key written with escapes,
// anything invalid) goes to slowSetMember, whose answer (and error) it is.
func setMember(obj json.RawMessage, key string, value json.RawMessage) (json.RawMessage, error) {
	var out []byte
	last, found := 0, false
	s := memberScan{b: obj}
	for s.next() {
		if string(s.name) != key {
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(obj)+len(value)+8)
		}
		found = true
		// obj[afterKey:valEnd] is `:` and the value, with any spaces.
		out = append(append(append(out, obj[last:s.afterKey]...), ':'), value...)
		last = s.valEnd
	}
	if s.failed {
		return slowSetMember(obj, key, value)
	}
	if found {
		return append(out, obj[last:]...), nil
	}
	return insertMember(obj, s.end, key, value), nil
}

// insertMember returns obj, whose closing brace ends at end, with the
// member key: value added before that brace.
func insertMember(obj []byte, end int, key string, value []byte) []byte {
	open, close := bytes.IndexByte(obj, '{'), bytes.LastIndexByte(obj[:end], '}')
	body := bytes.TrimSpace(obj[open+1 : close]) // obj may begin with spaces
	out := make([]byte, 0, len(obj)+len(key)+len(value)+8)
	out = append(out, obj[:close]...)
	if len(body) > 0 {
		out = append(out, ',')
	}
	out = append(appendQuoted(out, key), ':')
	out = append(out, value...)
	return append(out, obj[close:]...)
}

// setString is setMember with a string value.
func setString(obj json.RawMessage, key, value string) (json.RawMessage, error) {
	return setMember(obj, key, appendQuoted(make([]byte, 0, len(value)+2), value))
}

// setStringBefore is setString, except that a key obj lacks goes right
// before the member named before (appended when that is absent too).
func setStringBefore(obj json.RawMessage, key, value, before string) (json.RawMessage, error) {
	at, first, hasKey := -1, false, false
	s := memberScan{b: obj}
	for i := 0; s.next(); i++ {
		switch string(s.name) {
		case key:
			hasKey = true
		case before:
			if at < 0 {
				at, first = s.at, i == 0
			}
		}
	}
	if s.failed {
		return slowSetStringBefore(obj, key, value, before)
	}
	if hasKey || at < 0 {
		return setString(obj, key, value)
	}
	out := make([]byte, 0, len(obj)+len(key)+len(value)+8)
	out = append(out, obj[:at]...)
	if !first {
		out = append(out, ',')
	}
	out = append(appendQuoted(out, key), ':')
	out = appendQuoted(out, value)
	if first {
		out = append(out, ',')
	}
	return append(out, obj[at:]...), nil
}

// memberNames returns the names of obj's top-level members, in order.
func memberNames(obj json.RawMessage) []string {
	var names []string
	s := memberScan{b: obj}
	for s.next() {
		names = append(names, string(s.name))
	}
	if s.failed {
		return slowMemberNames(obj)
	}
	return names
}

// memberValue returns the value of obj's top-level member key, as
// json.Unmarshal into a map[string]json.RawMessage reads it (the last, for
// a key spelled twice), and whether there is one; err when obj is not a
// JSON object.
func memberValue(obj json.RawMessage, key string) (v json.RawMessage, ok bool, err error) {
	s := memberScan{b: obj}
	for s.next() {
		if string(s.name) == key {
			v, ok = obj[s.valStart:s.valEnd], true
		}
	}
	if s.failed || skipSpace(obj, s.end) != len(obj) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(obj, &m); err != nil {
			return nil, false, err
		}
		v, ok = m[key]
		return v, ok, nil
	}
	return v, ok, nil
}

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

// appendQuoted appends s as a JSON string, as json.Marshal writes it (it
// escapes <, > and & too): by hand when no byte needs an escape, which is
// every name and token the gateway sets, else through json.Marshal.
func appendQuoted(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c == 0x7f {
				return appendMarshaled(dst, s)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || r == '\u2028' || r == '\u2029' {
			return appendMarshaled(dst, s)
		}
		i += n
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

func appendMarshaled(dst []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return append(dst, b...)
}

// The slow path: encoding/json's Decoder reads obj, for what memberScan
// does not take.

// slowSetMember is setMember through encoding/json's Decoder.
func slowSetMember(obj json.RawMessage, key string, value json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var out []byte
	last, found := 0, false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string)
		afterKey := int(dec.InputOffset())
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if name != key {
			continue
		}
		found = true
		// obj[afterKey:end] is `:` and the value, with any spaces.
		out = append(append(append(out, obj[last:afterKey]...), ':'), value...)
		last = int(dec.InputOffset())
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, errors.New("not a JSON object")
	}
	end := int(dec.InputOffset())
	if found {
		return append(out, obj[last:]...), nil
	}
	return insertMember(obj, end, key, value), nil
}

// slowSetStringBefore is setStringBefore through encoding/json's Decoder.
func slowSetStringBefore(obj json.RawMessage, key, value, before string) (json.RawMessage, error) {
	names := slowMemberNames(obj)
	if slices.Contains(names, key) || !slices.Contains(names, before) {
		return slowSetMember(obj, key, appendQuoted(nil, value))
	}
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	first := true
	for dec.More() {
		at := int(dec.InputOffset()) // the key's quote, or the comma before it
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if name, _ := tok.(string); name == before {
			member := append(appendQuoted(nil, key), ':')
			member = appendQuoted(member, value)
			out := append([]byte{}, obj[:at]...)
			if first {
				out = append(append(out, member...), ',')
			} else {
				out = append(append(out, ','), member...)
			}
			return append(out, obj[at:]...), nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
		first = false
	}
	return slowSetMember(obj, key, appendQuoted(nil, value))
}

// slowMemberNames is memberNames through encoding/json's Decoder: the
// names up to the first error.
func slowMemberNames(obj json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var names []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return names
		}
		name, _ := tok.(string)
		names = append(names, name)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return names
		}
	}
	return names
}

// encodeList encodes one page of a list result: member holds items (each
// already JSON), and nextCursor follows when there is one.
func encodeList(member string, items []json.RawMessage, next string) json.RawMessage {
	n := len(member) + len(next) + 32
	for _, it := range items {
		n += len(it) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	b = strconv.AppendQuote(b, member)
	b = append(b, ":["...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	b = append(b, ']')
	if next != "" {
		b = append(b, `,"nextCursor":`...)
		nb, _ := json.Marshal(next)
		b = append(b, nb...)
	}
	return append(b, '}')
}

// itemsOf returns the raw items of member in a list result, and its next
// cursor.
func itemsOf(res json.RawMessage, member string) (items []json.RawMessage, next string, err error) {
	var page map[string]json.RawMessage
	if err := json.Unmarshal(res, &page); err != nil {
		return nil, "", fmt.Errorf("list result: %w", err)
	}
	if v, ok := page[member]; ok && !bytes.Equal(v, []byte("null")) {
		if err := json.Unmarshal(v, &items); err != nil {
			return nil, "", fmt.Errorf("list result: %s: %w", member, err)
		}
	}
	if v, ok := page["nextCursor"]; ok && !bytes.Equal(v, []byte("null")) {
		if err := json.Unmarshal(v, &next); err != nil {
			return nil, "", fmt.Errorf("list result: nextCursor: %w", err)
		}
	}
	return items, next, nil
}

// ErrorJSON encodes a JSON-RPC error object for the transports that write
// answers themselves (the HTTP fast path, stdio mode's raw path), with its
// data when the data encodes, else code and message alone: an answer must
// go out whatever the error holds.
func ErrorJSON(e *jsonrpc.Error) json.RawMessage {
	b, err := json.Marshal(e)
	if err != nil {
		b, _ = json.Marshal(&jsonrpc.Error{Code: e.Code, Message: e.Message})
	}
	return b
}
