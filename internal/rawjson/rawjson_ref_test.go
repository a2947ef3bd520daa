package rawjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// The Decoder-based implementation of SetMember, SetString,
// SetStringBefore and MemberNames as it was before memberScan, kept as
// the reference the fuzz target holds the scanner to: for every input,
// the same bytes, or an error from both.

// refSetMember returns obj, a JSON object, with the value of its top-level
// member key replaced by value (appended when absent); every other byte is
// kept as it was, so member order and the encoding of other values survive.
// A key spelled twice has each value replaced, so that no reader can pick
// the old one.
func refSetMember(obj json.RawMessage, key string, value json.RawMessage) (json.RawMessage, error) {
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
	open, close := bytes.IndexByte(obj, '{'), bytes.LastIndexByte(obj[:end], '}')
	body := bytes.TrimSpace(obj[open+1 : close])
	out = append(out, obj[:close]...)
	if len(body) > 0 {
		out = append(out, ',')
	}
	k, _ := json.Marshal(key)
	out = append(append(append(out, k...), ':'), value...)
	return append(out, obj[close:]...), nil
}

// refSetString is refSetMember with a string value.
func refSetString(obj json.RawMessage, key, value string) (json.RawMessage, error) {
	v, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	return refSetMember(obj, key, v)
}

// refSetStringBefore is refSetString, except that a key obj lacks goes right
// before the member named before (appended when that is absent too).
func refSetStringBefore(obj json.RawMessage, key, value, before string) (json.RawMessage, error) {
	names := refMemberNames(obj)
	if slices.Contains(names, key) || !slices.Contains(names, before) {
		return refSetString(obj, key, value)
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
	return refSetString(obj, key, value)
}

// refMemberNames returns the names of obj's top-level members, in order.
func refMemberNames(obj json.RawMessage) []string {
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

// rawJSONSeeds are objects that are hard to read member by member:
// whitespace everywhere, duplicate keys, nested values holding braces,
// quotes and commas in strings, escapes in keys and values, numbers of
// every shape, invalid JSON, and bytes after the object.
var rawJSONSeeds = []string{
	`{}`, ` { } `, `{"name":"x"}`, `{ "name" : "x" , "b" : [1, {"c":"}"}] }`,
	`{"name":"a","name":"b"}`, `{"a":{"name":"inner"},"name":1}`,
	`{"_meta":{"progressToken":null},"name":"echo","arguments":{"text":"hi"}}`,
	`{"na\u006de":"escaped key","name":"plain"}`, `{"x":"\"}{\\","name":"q"}`,
	`{"a":"\ud83d\ude00","b":"é","c":"\u00e9"}`, `{"\u00e9":1}`, `{"é":1,"data":2}`,
	`{"n":-0.5e+10,"m":0,"o":1E3,"p":[true,false,null]}`,
	`{"level":"info","data":"x"}`, `{ "data" : 1 , "level":"info"}`, `{"level":"info","logger":"own","data":"x"}`,
	`{"a":1} trailing`, `{"a":1}}`, `{"a":[[[[{"b":[]}]]]]}`,
	// Invalid: both fail (or, for SetStringBefore, agree on what came before).
	``, `[]`, `"s"`, `{`, `{"a"`, `{"a":`, `{"a":1`, `{"a":1,}`, `{,"a":1}`, `{"a" 1}`, `{"a":01}`,
	`{"a":1.}`, `{"a":-}`, `{"a":1e}`, `{"a":tru}`, `{"a":truex}`, `{"a":"x"y}`, `{"a":[1,]}`, `{"a":{"b"}}`,
	`{"a":"\x"}`, `{"a":"\u12"}`, "{\"a\":\"\x01\"}", "{\"a\xff\":1}", `{"data":1,"x":}`, `{"data":}`, `{1:2}`,
	` {"a":1}`, "\t{\"data\":1}", ` {}`, "\n\t{ }", ` {"name":1}`, "\r\n{\"level\":\"info\"}", "{\"a\":\"\xff\",\"name\":1}",
	// Deeper than the scanner follows: the slow path's.
	`{"name":` + strings.Repeat("[", maxScanDepth+1) + strings.Repeat("]", maxScanDepth+1) + `}`,
}

// FuzzRawJSON: SetMember, SetString, SetStringBefore and MemberNames give
// the bytes the Decoder-based reference gives, for every input, or both an
// error; MemberValue reads what json.Unmarshal into a map reads.
func FuzzRawJSON(f *testing.F) {
	for _, s := range rawJSONSeeds {
		for _, k := range []string{"name", "data", "a", "é", "<&>"} {
			f.Add([]byte(s), k, `"v"`, "data")
		}
	}
	f.Add([]byte(`{"a":1}`), "k\u2028", `{"x":[1]}`, "a")
	f.Add([]byte(`{"a":1}`), "k\x00\xff", `null`, "")
	f.Fuzz(func(t *testing.T, obj []byte, key, value, before string) {
		got, gotErr := SetMember(obj, key, json.RawMessage(value))
		want, wantErr := refSetMember(obj, key, json.RawMessage(value))
		if (gotErr != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
			t.Errorf("SetMember(%q, %q, %q) = %q, %v; want %q, %v", obj, key, value, got, gotErr, want, wantErr)
		}
		got, gotErr = SetString(obj, key, value)
		want, wantErr = refSetString(obj, key, value)
		if (gotErr != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
			t.Errorf("SetString(%q, %q, %q) = %q, %v; want %q, %v", obj, key, value, got, gotErr, want, wantErr)
		}
		got, gotErr = SetStringBefore(obj, key, value, before)
		want, wantErr = refSetStringBefore(obj, key, value, before)
		if (gotErr != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
			t.Errorf("SetStringBefore(%q, %q, %q, %q) = %q, %v; want %q, %v", obj, key, value, before, got, gotErr, want, wantErr)
		}
		// Whatever the reference does, an edit of valid JSON is valid JSON.
		if json.Valid(obj) {
			if got, err := SetString(obj, key, value); err == nil && !json.Valid(got) {
				t.Errorf("SetString(%q, %q, %q) = %q: not valid JSON", obj, key, value, got)
			}
			if got, err := SetStringBefore(obj, key, value, before); err == nil && !json.Valid(got) {
				t.Errorf("SetStringBefore(%q, %q, %q, %q) = %q: not valid JSON", obj, key, value, before, got)
			}
			if got, err := SetMember(obj, key, json.RawMessage(value)); err == nil && json.Valid([]byte(value)) && !json.Valid(got) {
				t.Errorf("SetMember(%q, %q, %q) = %q: not valid JSON", obj, key, value, got)
			}
		}
		if got, want := MemberNames(obj), refMemberNames(obj); !slices.Equal(got, want) {
			t.Errorf("MemberNames(%q) = %q, want %q", obj, got, want)
		}
		v, ok, err := MemberValue(obj, key)
		var m map[string]json.RawMessage
		mErr := json.Unmarshal(obj, &m)
		if mv, mok := m[key]; (err != nil) != (mErr != nil) || ok != mok || !bytes.Equal(v, mv) {
			t.Errorf("MemberValue(%q, %q) = %q, %v, %v; want %q, %v, %v", obj, key, v, ok, err, mv, mok, mErr)
		}
	})
}

// TestMemberScanTakesValidObjects: the scanner itself reads the objects
// the gateway rewrites, leaving none to the slow path (which would make
// the fuzz target compare the reference with itself).
func TestMemberScanTakesValidObjects(t *testing.T) {
	for _, s := range []string{
		`{}`, ` { } `, `{ "name" : "x" , "b" : [1, {"c":"}"}] }`, `{"name":"a","name":"b"}`,
		`{"_meta":{"progressToken":null},"name":"echo","arguments":{"text":"hi"}}`,
		`{"x":"\"}{\\","name":"q"}`, `{"a":"\ud83d\ude00","b":"é","c":"\u00e9"}`, `{"é":1,"data":2}`,
		`{"n":-0.5e+10,"m":0,"o":1E3,"p":[true,false,null]}`, `{"a":1} trailing`, `{"a":[[[[{"b":[]}]]]]}`,
	} {
		sc := memberScan{b: []byte(s)}
		for sc.next() {
		}
		if sc.failed || sc.end == 0 {
			t.Errorf("memberScan of %s failed", s)
		}
	}
	for _, s := range []string{`{"na\u006de":1}`, "{\"a\xff\":1}", `{"a":1`, `{"a":01}`, `{,"a":1}`} {
		sc := memberScan{b: []byte(s)}
		for sc.next() {
		}
		if !sc.failed {
			t.Errorf("memberScan of %s did not leave it to the slow path", s)
		}
	}
}

// benchParams are a tools/call's params as an agent sends them.
var benchParams = json.RawMessage(`{"name":"b_echo","arguments":{"text":"the quick brown fox jumps over the lazy dog","n":[1,2,3],"o":{"k":"v"}},"_meta":{"progressToken":"p-1","trace":"t"}}`)

// BenchmarkRename is the routed name set in a call's params, and the
// progress token replaced in its _meta (withProgressToken), by the scanner
// and by the Decoder-based reference.
func BenchmarkRename(b *testing.B) {
	meta := json.RawMessage(`{"progressToken":"p-1","trace":"t"}`)
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, err := SetString(benchParams, "name", "echo")
			if err != nil {
				b.Fatal(err)
			}
			m, err := SetString(meta, "progressToken", "mcp-gateway-12345")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := SetMember(p, "_meta", m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decoder", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, err := refSetString(benchParams, "name", "echo")
			if err != nil {
				b.Fatal(err)
			}
			m, err := refSetString(meta, "progressToken", "mcp-gateway-12345")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := refSetMember(p, "_meta", m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSetStringBefore is a log message tagged with its server.
func BenchmarkSetStringBefore(b *testing.B) {
	msg := json.RawMessage(`{"level":"info","data":{"msg":"a message of the server's","n":3}}`)
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := SetStringBefore(msg, "logger", "server", "data"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decoder", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := refSetStringBefore(msg, "logger", "server", "data"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
