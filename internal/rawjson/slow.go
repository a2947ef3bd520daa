package rawjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
)

// The slow path: encoding/json's Decoder reads obj, for what memberScan
// does not take.

// slowSetMember is SetMember through encoding/json's Decoder.
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

// slowSetStringBefore is SetStringBefore through encoding/json's Decoder.
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

// slowMemberNames is MemberNames through encoding/json's Decoder: the
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

// slowDeleteMembers is DeleteMembers through encoding/json's Decoder,
// which matches the names as decoded.
func slowDeleteMembers(obj json.RawMessage, keys []string) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var out []byte
	prevEnd, kept := 0, false
	for dec.More() {
		from := int(dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string)
		// The key's quote: the first byte past the spaces and the comma
		// that follow the previous value (or the brace).
		keyStart := from
		for keyStart < len(obj) && (obj[keyStart] == ',' || obj[keyStart] == ' ' || obj[keyStart] == '\t' ||
			obj[keyStart] == '\n' || obj[keyStart] == '\r') {
			keyStart++
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		valEnd := int(dec.InputOffset())
		drop := slices.Contains(keys, name)
		switch {
		case out == nil && drop && prevEnd == 0:
			out = append(make([]byte, 0, len(obj)), obj[:keyStart]...)
		case out == nil && drop:
			out = append(make([]byte, 0, len(obj)), obj[:prevEnd]...)
			kept = true
		case out != nil && !drop && kept:
			out = append(out, obj[prevEnd:valEnd]...)
		case out != nil && !drop:
			out = append(out, obj[keyStart:valEnd]...)
			kept = true
		}
		prevEnd = valEnd
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, errors.New("not a JSON object")
	}
	if out == nil {
		return obj, nil
	}
	return append(out, obj[prevEnd:]...), nil
}
