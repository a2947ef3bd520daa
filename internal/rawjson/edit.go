package rawjson

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// SetMember returns obj, a JSON object, with the value of its top-level
// member key replaced by value (appended when absent); every other byte is
// kept as it was, so member order and the encoding of other values survive.
// A key spelled twice has each value replaced, so that no reader can pick
// the old one.
//
// It runs on every forwarded request that needs a rewrite, so it scans
// obj's bytes itself (memberScan) rather than through encoding/json's
// Decoder; what that scan does not take (a key written with escapes,
// anything invalid) goes to slowSetMember, whose answer (and error) it is.
func SetMember(obj json.RawMessage, key string, value json.RawMessage) (json.RawMessage, error) {
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

// SetString is SetMember with a string value.
func SetString(obj json.RawMessage, key, value string) (json.RawMessage, error) {
	return SetMember(obj, key, appendQuoted(make([]byte, 0, len(value)+2), value))
}

// SetStringBefore is SetString, except that a key obj lacks goes right
// before the member named before (appended when that is absent too).
func SetStringBefore(obj json.RawMessage, key, value, before string) (json.RawMessage, error) {
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
		return SetString(obj, key, value)
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

// DeleteMembers returns obj, a JSON object, without its top-level members
// named any of keys (each spelling of a key spelled twice), every other
// byte kept: the members left keep their order and bytes, and so do the
// spaces around them. A deleted member goes with the comma before it (the
// one after it, for the first member). obj itself is returned when it has
// none of keys.
//
// It lets the gateway take members out of an agent's _meta (the 2026
// envelope) on every request without decoding it into a map and encoding
// it again, which also sorted its members and rewrote their values. As
// SetMember, it leaves what its scanner does not take to the Decoder
// (slowDeleteMembers), whose answer and error are its.
func DeleteMembers(obj json.RawMessage, keys ...string) (json.RawMessage, error) {
	var out []byte
	// prevEnd is where the previous member's value ended (0: none yet);
	// kept whether out holds a member.
	prevEnd, kept := 0, false
	s := memberScan{b: obj}
	for s.next() {
		keyStart := s.afterKey - len(s.name) - 2
		drop := slices.Contains(keys, string(s.name))
		switch {
		case out == nil && drop && prevEnd == 0:
			out = append(make([]byte, 0, len(obj)), obj[:keyStart]...)
		case out == nil && drop:
			out = append(make([]byte, 0, len(obj)), obj[:prevEnd]...)
			kept = true
		case out != nil && !drop && kept:
			// With the separator (comma, spaces) obj has before it.
			out = append(out, obj[prevEnd:s.valEnd]...)
		case out != nil && !drop:
			out = append(out, obj[keyStart:s.valEnd]...)
			kept = true
		}
		prevEnd = s.valEnd
	}
	if s.failed {
		return slowDeleteMembers(obj, keys)
	}
	if out == nil {
		return obj, nil
	}
	return append(out, obj[prevEnd:]...), nil
}

// MemberNames returns the names of obj's top-level members, in order.
func MemberNames(obj json.RawMessage) []string {
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

// MemberValue returns the value of obj's top-level member key, as
// json.Unmarshal into a map[string]json.RawMessage reads it (the last, for
// a key spelled twice), and whether there is one; err when obj is not a
// JSON object.
func MemberValue(obj json.RawMessage, key string) (v json.RawMessage, ok bool, err error) {
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

// RemoveMember returns obj, a JSON object, without its top-level member key
// (every one, for a key spelled twice), and whether there was one. The
// other members keep their order and their values' bytes; the spaces
// between members are not kept. What the fast scan does not take goes
// unchanged, reported as not found: the caller keeps what it has.
func RemoveMember(obj json.RawMessage, key string) (json.RawMessage, bool) {
	var kept [][]byte
	found := false
	s := memberScan{b: obj}
	for s.next() {
		if string(s.name) == key {
			found = true
			continue
		}
		start := s.at
		if obj[start] == ',' {
			start = skipSpace(obj, start+1)
		}
		kept = append(kept, obj[start:s.valEnd])
	}
	if s.failed || !found {
		return obj, false
	}
	out := make([]byte, 0, len(obj))
	out = append(out, '{')
	out = append(out, bytes.Join(kept, []byte{','})...)
	return append(out, '}'), true
}

// A Member is a key and its value, as AppendAbsent adds them.
type Member struct {
	Key   string
	Value json.RawMessage
}

// AppendAbsent returns obj, a JSON object, with each of add (distinct
// keys, valid JSON values) whose key obj lacks appended, in add's order: byte for byte what SetMember for each
// absent key in turn gives, with one scan of obj and one copy where that
// takes a scan and a copy per key (and a MemberValue to see whether the
// key is there). had has bit i set when obj has add[i]'s key (at most 64
// of add). What the scan does not take goes key by key through
// MemberValue and SetMember, whose answer and error are its.
func AppendAbsent(obj json.RawMessage, add ...Member) (out json.RawMessage, had uint64, err error) {
	s := memberScan{b: obj}
	for s.next() {
		for i := range add {
			if string(s.name) == add[i].Key {
				had |= 1 << i
			}
		}
	}
	if s.failed || skipSpace(obj, s.end) != len(obj) {
		return slowAppendAbsent(obj, add) // MemberValue's reading, and error
	}
	n := len(obj)
	for i := range add {
		if had&(1<<i) == 0 {
			n += len(add[i].Key) + len(add[i].Value) + 8
		}
	}
	open, close := bytes.IndexByte(obj, '{'), bytes.LastIndexByte(obj[:s.end], '}')
	empty := len(bytes.TrimSpace(obj[open+1:close])) == 0 // as insertMember sees it
	out = append(make([]byte, 0, n), obj[:close]...)
	for i := range add {
		if had&(1<<i) != 0 {
			continue
		}
		if !empty {
			out = append(out, ',')
		}
		empty = false
		out = append(appendQuoted(out, add[i].Key), ':')
		out = append(out, add[i].Value...)
	}
	return append(out, obj[close:]...), had, nil
}

// slowAppendAbsent is AppendAbsent key by key.
func slowAppendAbsent(obj json.RawMessage, add []Member) (json.RawMessage, uint64, error) {
	var had uint64
	for i, m := range add {
		_, ok, err := MemberValue(obj, m.Key)
		if err != nil {
			return nil, 0, err
		}
		if ok {
			had |= 1 << i
			continue
		}
		if obj, err = SetMember(obj, m.Key, m.Value); err != nil {
			return nil, 0, err
		}
	}
	return obj, had, nil
}
