package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// This file holds the JSON comparison of the differential test: values are
// decoded keeping the order of object members (a relay that reorders a form's
// properties changes what the user sees), compared member by member, and each
// difference is reported with its path.

// jsonObject is a JSON object with its members in the order they were sent.
type jsonObject struct {
	keys []string
	vals map[string]any
}

func (o *jsonObject) get(k string) (any, bool) {
	v, ok := o.vals[k]
	return v, ok
}

func (o *jsonObject) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *jsonObject) del(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	o.keys = slices.DeleteFunc(o.keys, func(s string) bool { return s == k })
}

// decodeOrdered decodes one JSON value: objects as *jsonObject, arrays as
// []any, numbers as json.Number, so nothing is lost or reordered.
func decodeOrdered(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &jsonObject{vals: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				o.set(kt.(string), v)
			}
			_, err := dec.Token() // '}'
			return o, err
		case '[':
			a := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := dec.Token() // ']'
			return a, err
		}
		return nil, fmt.Errorf("unexpected delimiter %v", t)
	default:
		return t, nil
	}
}

// encodeOrdered renders a decoded value as compact JSON, members in order.
func encodeOrdered(v any) string {
	var b strings.Builder
	var enc func(v any)
	enc = func(v any) {
		switch t := v.(type) {
		case *jsonObject:
			b.WriteByte('{')
			for i, k := range t.keys {
				if i > 0 {
					b.WriteByte(',')
				}
				kb, _ := json.Marshal(k)
				b.Write(kb)
				b.WriteByte(':')
				enc(t.vals[k])
			}
			b.WriteByte('}')
		case []any:
			b.WriteByte('[')
			for i, e := range t {
				if i > 0 {
					b.WriteByte(',')
				}
				enc(e)
			}
			b.WriteByte(']')
		default:
			vb, _ := json.Marshal(t)
			b.Write(vb)
		}
	}
	enc(v)
	return b.String()
}

// jsonDiff is one difference between what the client got directly (want)
// and through the gateway (got), at path.
type jsonDiff struct {
	path      string
	want, got string // "<absent>" when the member is missing on that side
}

func (d jsonDiff) String() string {
	return fmt.Sprintf("%s:\n\t  direct:  %s\n\tgateway:  %s", d.path, clip(d.want), clip(d.got))
}

func clip(s string) string {
	if len(s) > 400 {
		return s[:400] + fmt.Sprintf("... (%d bytes)", len(s))
	}
	return s
}

const absent = "<absent>"

// compareJSON lists every difference between want and got. Arrays whose
// elements are all objects with distinct "name" (tools, prompts, arguments)
// or "uri" (resources) are compared by that key, so that one missing tool
// is one difference, not a shift of every later one; their order is then
// compared on its own ("<path>[order]").
func compareJSON(path string, want, got any) []jsonDiff {
	switch w := want.(type) {
	case *jsonObject:
		g, ok := got.(*jsonObject)
		if !ok {
			return []jsonDiff{{path, encodeOrdered(want), encodeOrdered(got)}}
		}
		var diffs []jsonDiff
		for _, k := range w.keys {
			gv, ok := g.get(k)
			if !ok {
				diffs = append(diffs, jsonDiff{path + "." + k, encodeOrdered(w.vals[k]), absent})
				continue
			}
			diffs = append(diffs, compareJSON(path+"."+k, w.vals[k], gv)...)
		}
		for _, k := range g.keys {
			if _, ok := w.get(k); !ok {
				diffs = append(diffs, jsonDiff{path + "." + k, absent, encodeOrdered(g.vals[k])})
			}
		}
		// The order of the members both have, on its own: a form's properties in another order are another form.
		common := func(keys []string, other *jsonObject) []string {
			return slices.DeleteFunc(slices.Clone(keys), func(k string) bool { _, ok := other.get(k); return !ok })
		}
		if wc, gc := common(w.keys, g), common(g.keys, w); !slices.Equal(wc, gc) {
			diffs = append(diffs, jsonDiff{path + "[member order]", strings.Join(wc, ","), strings.Join(gc, ",")})
		}
		return diffs
	case []any:
		g, ok := got.([]any)
		if !ok {
			return []jsonDiff{{path, encodeOrdered(want), encodeOrdered(got)}}
		}
		for _, key := range []string{"name", "uri"} {
			wk, wok := keyedBy(w, key)
			gk, gok := keyedBy(g, key)
			if !wok || !gok {
				continue
			}
			var diffs []jsonDiff
			var wOrder, gOrder []string
			for i, k := range wk {
				p := fmt.Sprintf("%s[%s=%s]", path, key, k)
				if j := slices.Index(gk, k); j >= 0 {
					wOrder = append(wOrder, k)
					diffs = append(diffs, compareJSON(p, w[i], g[j])...)
				} else {
					diffs = append(diffs, jsonDiff{p, encodeOrdered(w[i]), absent})
				}
			}
			for j, k := range gk {
				if !slices.Contains(wk, k) {
					diffs = append(diffs, jsonDiff{fmt.Sprintf("%s[%s=%s]", path, key, k), absent, encodeOrdered(g[j])})
				} else {
					gOrder = append(gOrder, k)
				}
			}
			if !slices.Equal(wOrder, gOrder) {
				diffs = append(diffs, jsonDiff{path + "[order]", strings.Join(wOrder, ","), strings.Join(gOrder, ",")})
			}
			return diffs
		}
		var diffs []jsonDiff
		for i := 0; i < max(len(w), len(g)); i++ {
			p := fmt.Sprintf("%s[%d]", path, i)
			switch {
			case i >= len(g):
				diffs = append(diffs, jsonDiff{p, encodeOrdered(w[i]), absent})
			case i >= len(w):
				diffs = append(diffs, jsonDiff{p, absent, encodeOrdered(g[i])})
			default:
				diffs = append(diffs, compareJSON(p, w[i], g[i])...)
			}
		}
		return diffs
	default:
		if encodeOrdered(want) != encodeOrdered(got) {
			return []jsonDiff{{path, encodeOrdered(want), encodeOrdered(got)}}
		}
		return nil
	}
}

// keyedBy returns the string member key of every element of a, if every
// element is an object that has it and no two share it.
func keyedBy(a []any, key string) ([]string, bool) {
	if len(a) == 0 {
		return nil, false
	}
	keys := make([]string, 0, len(a))
	for _, e := range a {
		o, ok := e.(*jsonObject)
		if !ok {
			return nil, false
		}
		v, ok := o.get(key)
		s, isStr := v.(string)
		if !ok || !isStr || slices.Contains(keys, s) {
			return nil, false
		}
		keys = append(keys, s)
	}
	return keys, true
}
