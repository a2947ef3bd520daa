package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// member is one key/value pair of a JSON object, in document order.
type member struct {
	Key   string
	Value json.RawMessage
}

// readObject decodes data as exactly one JSON object and returns its members in document order.
// encoding/json.Unmarshal silently keeps the last of duplicate keys; the config is user input
// where `{"time":{},"time":{"x":1}}` or `{} junk` hide mistakes, so both are errors here.
func readObject(data []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxError(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("must be a JSON object, got %s", jsonType(data))
	}
	var members []member
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntaxError(err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("invalid JSON: object key is not a string")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, syntaxError(err)
		}
		if seen[key] {
			return nil, fmt.Errorf("duplicate key %q", key)
		}
		seen[key] = true
		members = append(members, member{Key: key, Value: v})
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, syntaxError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("invalid JSON: unexpected data after the object")
	}
	return members, nil
}

// syntaxError turns a decoder error into a message that says where, without quoting input.
func syntaxError(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid JSON at byte %d: %w", se.Offset, err)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("invalid JSON: unexpected end of input")
	}
	return fmt.Errorf("invalid JSON: %w", err)
}

// jsonType names the JSON type of raw from its first significant byte, for messages such as
// "must be a string, got number". It never looks past that byte, so it cannot leak a value.
func jsonType(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch c := raw[0]; {
	case c == '{':
		return "object"
	case c == '[':
		return "array"
	case c == '"':
		return "string"
	case c == 't' || c == 'f':
		return "boolean"
	case c == 'n':
		return "null"
	case c == '-' || (c >= '0' && c <= '9'):
		return "number"
	default:
		return "invalid JSON"
	}
}

// fieldMap indexes members by key; readObject guarantees keys are unique.
func fieldMap(members []member) map[string]json.RawMessage {
	m := make(map[string]json.RawMessage, len(members))
	for _, mb := range members {
		m[mb.Key] = mb.Value
	}
	return m
}

// decodeString decodes raw as a JSON string; other types (null included) are an error naming the
// type found.
func decodeString(raw json.RawMessage) (string, error) {
	if t := jsonType(raw); t != "string" {
		return "", fmt.Errorf("must be a string, got %s", t)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", syntaxError(err)
	}
	return s, nil
}

// decodeStrings decodes raw as a JSON array of strings.
func decodeStrings(raw json.RawMessage) ([]string, error) {
	if t := jsonType(raw); t != "array" {
		return nil, fmt.Errorf("must be a list of strings, got %s", t)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, syntaxError(err)
	}
	out := make([]string, 0, len(elems))
	for i, e := range elems {
		s, err := decodeString(e)
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// decodeBool decodes raw as a JSON boolean.
func decodeBool(raw json.RawMessage) (bool, error) {
	if t := jsonType(raw); t != "boolean" {
		return false, fmt.Errorf("must be true or false, got %s", t)
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return false, syntaxError(err)
	}
	return b, nil
}
