package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
)

// applied is where the values of one entry's properties go.
type applied struct {
	args      []string          // property arguments, after the entry's fixed ones
	argValues []string          // the config values inside args: secrets (but Public ones')
	env       map[string]string // env-mapped properties
	publicEnv []string          // the env variables set from Public properties
	headers   map[string]string // header-mapped properties (remote entries), canonical names
	values    map[string]string // every given property as text, for the entry's env templates
}

// applyProperties type-checks the config fields of catalog entry e against its properties and
// maps them to arguments, environment variables and headers. Flags and argument templates come
// first and positional arguments last (each group in property-name order), the order CLIs parse
// most reliably. A null value counts as absent: SDKs send None/undefined optional settings that
// way.
func applyProperties(e Entry, fields map[string]json.RawMessage) (applied, error) {
	var a applied
	var errs []error // every property's problem, not only the first
	var flags, positional []string
	for _, name := range slices.Sorted(maps.Keys(e.Properties)) {
		p := e.Properties[name]
		bad := func(err error) error { return &ConfigError{Server: e.Name, Field: name, Err: err} }
		raw, ok := fields[name]
		if ok && jsonType(raw) == "null" {
			ok = false
		}
		if !ok {
			if p.Required {
				errs = append(errs, bad(fmt.Errorf("is required (%s)", describeType(p))))
				continue
			}
			continue
		}
		elems, err := checkProperty(p, raw)
		if err != nil {
			errs = append(errs, bad(err))
			continue
		}
		text := envText(raw)
		if a.values == nil {
			a.values = make(map[string]string)
		}
		a.values[name] = text
		formatted := text
		if p.Format != "" {
			formatted, _ = fill(p.Format, map[string]string{name: text}) // Parse checked the template
		}
		switch {
		case p.Env != "":
			if a.env == nil {
				a.env = make(map[string]string)
			}
			a.env[p.Env] = formatted
			if p.Public {
				a.publicEnv = append(a.publicEnv, p.Env)
			}
		case p.Header != "":
			if !validHeaderValue(formatted) {
				errs = append(errs, bad(errors.New("contains a line break or another control character, which a header value cannot")))
				continue
			}
			if a.headers == nil {
				a.headers = make(map[string]string)
			}
			a.headers[textproto.CanonicalMIMEHeaderKey(p.Header)] = formatted
		case p.Unused != "":
		case p.Arg != "":
			arg, _ := fill(p.Arg, map[string]string{name: argText(raw)})
			flags = append(flags, arg)
			a.secretArg(p, argText(raw))
		case p.Flag != "":
			for _, el := range elems {
				if p.Type == TypeBoolean {
					if string(bytes.TrimSpace(el)) == "true" {
						flags = append(flags, p.Flag)
					}
					continue
				}
				flags = append(flags, p.Flag, argText(el))
				a.secretArg(p, argText(el))
			}
		default:
			for _, el := range elems {
				positional = append(positional, argText(el))
				a.secretArg(p, argText(el))
			}
		}
	}
	a.args = append(flags, positional...)
	if len(errs) > 0 {
		return applied{}, joinProblems(errs)
	}
	return a, nil
}

// secretArg records v, an argument value of property p, as a secret unless p is Public.
func (a *applied) secretArg(p Property, v string) {
	if !p.Public {
		a.argValues = append(a.argValues, v)
	}
}

// checkProperty checks raw against p and returns the values it stands for: the elements of an
// array, or raw itself.
func checkProperty(p Property, raw json.RawMessage) ([]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if p.Type != TypeArray {
		if err := checkValue(p.Type, raw); err != nil {
			return nil, fmt.Errorf("must be %s, got %s", describeType(p), err)
		}
		return []json.RawMessage{raw}, nil
	}
	if t := jsonType(raw); t != "array" {
		return nil, fmt.Errorf("must be %s, got %s", describeType(p), t)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, syntaxError(err)
	}
	if p.Required && len(elems) == 0 {
		return nil, fmt.Errorf("must not be empty (%s)", describeType(p))
	}
	for i, el := range elems {
		if err := checkValue(p.Items, el); err != nil {
			return nil, fmt.Errorf("element %d: must be %s, got %s", i, describeType(Property{Type: p.Items}), err)
		}
	}
	return elems, nil
}

// checkValue checks one non-array value. Its error text is what was found instead, for the
// caller's "must be X, got <err>"; it never contains the value.
func checkValue(t PropType, raw json.RawMessage) error {
	got := jsonType(raw)
	want := map[PropType]string{
		TypeString: "string", TypeNumber: "number", TypeInteger: "number",
		TypeBoolean: "boolean", TypeObject: "object",
	}[t]
	if got != want {
		return errors.New(got)
	}
	switch t {
	case TypeString:
		s, err := decodeString(raw)
		if err != nil {
			return err
		}
		if strings.ContainsRune(s, 0) {
			return errors.New("a string containing a NUL byte")
		}
	case TypeInteger:
		if _, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64); err != nil {
			return errors.New("a number that is not a 64-bit integer")
		}
	case TypeObject:
		if _, err := readObject(raw); err != nil {
			return fmt.Errorf("an invalid object (%w)", err)
		}
	}
	return nil
}

// argText renders a checked value as one argv element: strings as they are, numbers as written,
// booleans as true/false, objects as compact JSON.
func argText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if jsonType(raw) == "string" {
		s, _ := decodeString(raw) // checked by checkProperty
		return s
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// envText renders a checked value for an environment variable: strings as they are, anything
// else (arrays included) as compact JSON.
func envText(raw json.RawMessage) string { return argText(raw) }

// describeType says what a property accepts, in words, for error messages.
func describeType(p Property) string {
	if p.Type == TypeArray {
		return "a list of " + map[PropType]string{
			TypeString: "strings", TypeNumber: "numbers", TypeInteger: "integers",
			TypeBoolean: "booleans", TypeObject: "JSON objects",
		}[p.Items]
	}
	return map[PropType]string{
		TypeString: "a string", TypeNumber: "a number", TypeInteger: "an integer",
		TypeBoolean: "true or false", TypeObject: "a JSON object",
	}[p.Type]
}
