package aggregate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

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
func setMember(obj json.RawMessage, key string, value json.RawMessage) (json.RawMessage, error) {
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
	// Insert before the closing brace.
	close := bytes.LastIndexByte(obj[:end], '}')
	body := bytes.TrimSpace(obj[1:close])
	out = append(out, obj[:close]...)
	if len(body) > 0 {
		out = append(out, ',')
	}
	k, _ := json.Marshal(key)
	out = append(append(append(out, k...), ':'), value...)
	return append(out, obj[close:]...), nil
}

// setString is setMember with a string value.
func setString(obj json.RawMessage, key, value string) (json.RawMessage, error) {
	v, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	return setMember(obj, key, v)
}

// setStringBefore is setString, except that a key obj lacks goes right
// before the member named before (appended when that is absent too).
func setStringBefore(obj json.RawMessage, key, value, before string) (json.RawMessage, error) {
	names := memberNames(obj)
	if slices.Contains(names, key) || !slices.Contains(names, before) {
		return setString(obj, key, value)
	}
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	first := true
	for dec.More() {
		at := int(dec.InputOffset()) // after '{', or after the previous value
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if name, _ := tok.(string); name == before {
			k, _ := json.Marshal(key)
			v, err := json.Marshal(value)
			if err != nil {
				return nil, err
			}
			member := append(append(append([]byte{}, k...), ':'), v...)
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
	return setString(obj, key, value)
}

// memberNames returns the names of obj's top-level members, in order.
func memberNames(obj json.RawMessage) []string {
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
