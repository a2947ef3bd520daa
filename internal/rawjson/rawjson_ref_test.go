package rawjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// The fuzz target's oracle is encoding/json as it reads JSON, not a second
// implementation of the edits: each result is checked against what the
// edit promises, read back with encoding/json. An edit must fail exactly
// when encoding/json reads no object at the start of obj; otherwise the
// result, with the new value written as a placeholder, must read back as
// obj's members with the edit made (names in order, every other value's
// bytes as they were), and taking out what the edit put in must give obj
// back byte for byte (spaces around the replaced colon aside). slow.go
// (the Decoder-based path the scanner leaves to) is held to the same
// checks as the scanner, so a bug common to both shows.

// phText is the placeholder a checked edit writes as its value (as the
// JSON string phValue): text no fuzzed input is expected to hold (inputs
// that hold it are not checked).
const phText = "rawjson-oracle-placeholder-5b2c"

var phValue = []byte(`"` + phText + `"`)

// member is a top-level member as encoding/json reads it: the name
// decoded, the value as its bytes.
type member struct {
	name  string
	value json.RawMessage
	key   []byte // the name as written, quotes included
}

// decodeMembers reads the JSON object at the start of obj (after spaces;
// bytes after it are not read) and returns its members and the offset
// just past its closing brace; ok is false when encoding/json reads no
// object there.
func decodeMembers(obj []byte) (ms []member, end int, ok bool) {
	var raw json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(obj)).Decode(&raw); err != nil || raw[0] != '{' {
		return nil, 0, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	_, _ = dec.Token() // '{': raw is one valid object
	for dec.More() {
		from := dec.InputOffset()
		tok, _ := dec.Token()
		key := bytes.TrimLeft(raw[from:dec.InputOffset()], ", \t\r\n")
		var v json.RawMessage
		_ = dec.Decode(&v)
		ms = append(ms, member{name: tok.(string), value: v, key: key})
	}
	lead := len(obj) - len(bytes.TrimLeft(obj, " \t\r\n"))
	return ms, lead + len(raw), true
}

// tokenNames returns the names of obj's top-level members in order, from
// encoding/json's token stream, up to the first token it cannot read (so
// an invalid object's names as far as it is valid).
func tokenNames(obj []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var names []string
	depth, wantName := 1, true
	for {
		tok, err := dec.Token()
		if err != nil {
			return names
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			continue
		case json.Delim('}'), json.Delim(']'):
			if depth--; depth == 0 {
				return names
			}
			if depth == 1 {
				wantName = true // a member's value ended
			}
			continue
		}
		if depth > 1 {
			continue
		}
		if wantName {
			names = append(names, tok.(string))
		}
		wantName = !wantName
	}
}

// decodedName is name as it reads back once written by json.Marshal (bytes
// that are not UTF-8 become U+FFFD).
func decodedName(name string) string {
	b, _ := json.Marshal(name)
	var s string
	_ = json.Unmarshal(b, &s)
	return s
}

func quoted(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// sameMembers reports how got differs from want, or "".
func sameMembers(got, want []member) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d members, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].name != want[i].name || !bytes.Equal(got[i].value, want[i].value) {
			return fmt.Sprintf("member %d is %q: %s, want %q: %s", i, got[i].name, got[i].value, want[i].name, want[i].value)
		}
	}
	return ""
}

// checkSetMember checks got, gotErr = SetMember(obj, key, value) against
// encoding/json's reading of obj and of SetMember(obj, key, phValue).
func checkSetMember(obj []byte, key string, value []byte, got []byte, gotErr error) error {
	ms, end, ok := decodeMembers(obj)
	if !ok || gotErr != nil {
		if ok != (gotErr == nil) {
			return fmt.Errorf("= %q, %v; encoding/json reads an object: %v", got, gotErr, ok)
		}
		return nil
	}
	if bytes.Contains(obj, []byte(phText)) || strings.Contains(key, phText) || bytes.Contains(value, []byte(phText)) {
		return nil
	}
	ph, err := SetMember(obj, key, phValue)
	if err != nil {
		return fmt.Errorf("with a placeholder value: %v", err)
	}
	if !bytes.Equal(got, bytes.ReplaceAll(ph, phValue, value)) {
		return fmt.Errorf("= %q; the value is not written as given (with a placeholder: %q)", got, ph)
	}
	// It reads back as obj with key's values replaced, or key appended.
	var want []member
	n := 0
	for _, m := range ms {
		if m.name == key {
			m.value, n = phValue, n+1
		}
		want = append(want, m)
	}
	if n == 0 {
		want = append(want, member{name: decodedName(key), value: phValue})
	}
	gotMs, _, ok := decodeMembers(ph)
	if !ok {
		return fmt.Errorf("= %q: encoding/json reads no object", ph)
	}
	if d := sameMembers(gotMs, want); d != "" {
		return fmt.Errorf("= %q: %s", ph, d)
	}
	parts := bytes.Split(ph, phValue)
	if n == 0 {
		// Added before the closing brace, after a comma when obj has
		// members; every byte of obj kept.
		close := end - 1
		added := append(quoted(key), ':')
		if len(ms) > 0 {
			added = append([]byte{','}, added...)
		}
		if len(parts) != 2 || !bytes.Equal(parts[0], append(append([]byte{}, obj[:close]...), added...)) || !bytes.Equal(parts[1], obj[close:]) {
			return fmt.Errorf("= %q: not obj with %q added before its closing brace", ph, added)
		}
		return nil
	}
	// Each value of key replaced where it was: what lies between the
	// placeholders is obj's bytes, up to the key's colon and from the end
	// of its old value.
	if len(parts) != n+1 {
		return fmt.Errorf("= %q: %d placeholders, want %d", ph, len(parts)-1, n)
	}
	pos, j := 0, 0
	for _, m := range ms {
		if m.name != key {
			continue
		}
		pre, ok := bytes.CutSuffix(parts[j], []byte{':'})
		if !ok || !bytes.HasPrefix(obj[pos:], pre) {
			return fmt.Errorf("= %q: before value %d, not obj's bytes up to its key", ph, j)
		}
		pos = skipWS(obj, pos+len(pre))
		if pos >= len(obj) || obj[pos] != ':' {
			return fmt.Errorf("= %q: value %d does not follow its key's colon", ph, j)
		}
		pos = skipWS(obj, pos+1)
		if !bytes.HasPrefix(obj[pos:], m.value) {
			return fmt.Errorf("= %q: value %d is not where obj had %s", ph, j, m.value)
		}
		pos += len(m.value)
		j++
	}
	if !bytes.Equal(obj[pos:], parts[n]) {
		return fmt.Errorf("= %q: after the last value, not obj's bytes", ph)
	}
	return nil
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// checkSetStringBefore checks got, gotErr = SetStringBefore(obj, key,
// value, before): SetString's result when obj has key or lacks before (as
// far as encoding/json reads it); else obj with the member added right
// before the first member named before, where that member's key (or the
// comma before it) was, whatever follows it.
func checkSetStringBefore(obj []byte, key, value, before string, got []byte, gotErr error) error {
	names := tokenNames(obj)
	at := slices.Index(names, before)
	if slices.Contains(names, key) || at < 0 {
		want, wantErr := SetString(obj, key, value)
		if err := checkSetMember(obj, key, quoted(value), want, wantErr); err != nil {
			return fmt.Errorf("as SetString: %v", err)
		}
		if (gotErr != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
			return fmt.Errorf("= %q, %v; want SetString's %q, %v", got, gotErr, want, wantErr)
		}
		return nil
	}
	if gotErr != nil {
		return fmt.Errorf("= %v; encoding/json reads %q up to the member it goes before", gotErr, names)
	}
	if bytes.Contains(obj, []byte(phText)) || strings.Contains(key, phText) || strings.Contains(value, phText) {
		return nil
	}
	ph, err := SetStringBefore(obj, key, phText, before)
	if err != nil {
		return fmt.Errorf("with a placeholder value: %v", err)
	}
	if !bytes.Equal(got, bytes.ReplaceAll(ph, phValue, quoted(value))) {
		return fmt.Errorf("= %q; the value is not written as json.Marshal writes it (with a placeholder: %q)", got, ph)
	}
	added := append(append(quoted(key), ':'), phValue...)
	i := bytes.Index(ph, added)
	if i < 0 {
		return fmt.Errorf("= %q: no %s", ph, added)
	}
	// Where the member went (k) and what obj has there: the first
	// member's key quote, or the comma before a later member.
	k, from, to, comma, next := i, i, i+len(added)+1, i+len(added), byte('"')
	if at > 0 {
		k, from, to, comma, next = i-1, i-1, i+len(added), i-1, ','
	}
	if from < 0 || to > len(ph) || ph[comma] != ',' {
		return fmt.Errorf("= %q: no comma beside the member added", ph)
	}
	rest := append(append([]byte{}, ph[:from]...), ph[to:]...)
	if !bytes.Equal(rest, obj) || k >= len(obj) || obj[k] != next {
		return fmt.Errorf("= %q: not obj with %s added right before %q", ph, added, before)
	}
	wantNames := slices.Insert(slices.Clone(names[:at+1]), at, decodedName(key))
	if gotNames := tokenNames(ph); len(gotNames) < at+2 || !slices.Equal(gotNames[:at+2], wantNames) {
		return fmt.Errorf("= %q: names %q, want %q first", ph, gotNames, wantNames)
	}
	return nil
}

// checkDeleteMembers checks got, gotErr = DeleteMembers(obj, keys...)
// against encoding/json's reading of obj: an error exactly when it reads
// no object; obj itself when no member is named as keys; else an object
// that reads back as obj's members without those (names as decoded, every
// other value's bytes as they were), made of obj's bytes in their order
// (bytes taken out, none added), from obj's opening brace to the end.
func checkDeleteMembers(obj []byte, keys []string, got []byte, gotErr error) error {
	ms, end, ok := decodeMembers(obj)
	if !ok || gotErr != nil {
		if ok != (gotErr == nil) {
			return fmt.Errorf("= %q, %v; encoding/json reads an object: %v", got, gotErr, ok)
		}
		return nil
	}
	var want []member
	for _, m := range ms {
		if !slices.Contains(keys, m.name) {
			want = append(want, m)
		}
	}
	if len(want) == len(ms) {
		if !bytes.Equal(got, obj) {
			return fmt.Errorf("= %q: changed, with none of the keys", got)
		}
		return nil
	}
	gotMs, _, ok := decodeMembers(got)
	if !ok {
		return fmt.Errorf("= %q: encoding/json reads no object", got)
	}
	if d := sameMembers(gotMs, want); d != "" {
		return fmt.Errorf("= %q: %s", got, d)
	}
	open := bytes.IndexByte(obj, '{')
	if !bytes.HasPrefix(got, obj[:open+1]) || !bytes.HasSuffix(got, obj[end-1:]) {
		return fmt.Errorf("= %q: not from obj's opening brace to its end", got)
	}
	i := 0
	for _, c := range got {
		for i < len(obj) && obj[i] != c {
			i++
		}
		if i == len(obj) {
			return fmt.Errorf("= %q: not obj's bytes in their order", got)
		}
		i++
	}
	return nil
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
	// Arrays and objects nested past 64 (the scanner keeps which is which
	// in 64-bit words).
	`{"a":` + strings.Repeat(`[{"k":`, 70) + `1` + strings.Repeat(`}]`, 70) + `,"name":1}`,
	// The slow path's edits: a key written with escapes, an object cut
	// off after the member a key goes before.
	`{"na\u006de":1,"data":2}`, `{"data":1,"na\u006de":2}`, `{"a":1,"data"`, `{"data"`,
	// Deeper than the scanner follows: the slow path's.
	`{"name":` + strings.Repeat("[", maxScanDepth+1) + strings.Repeat("]", maxScanDepth+1) + `}`,
}

// FuzzRawJSON: SetMember, SetString, SetStringBefore and DeleteMembers
// make the edit they promise, as encoding/json reads the result, every
// other byte kept, and fail exactly when encoding/json reads no object
// (checkSetMember, checkSetStringBefore, checkDeleteMembers); MemberNames gives the names encoding/json's
// tokens give; MemberValue reads what json.Unmarshal into a map reads.
func FuzzRawJSON(f *testing.F) {
	for _, s := range rawJSONSeeds {
		for _, k := range []string{"name", "data", "a", "é", "<&>"} {
			f.Add([]byte(s), k, `"v"`, "data")
		}
	}
	f.Add([]byte(`{"a":1}`), "k\u2028", `{"x":[1]}`, "a")
	f.Add([]byte(`{"a":1}`), "k\x00\xff", `null`, "")
	// Names that are not UTF-8 (encoding/json reads U+FFFD), asked for by
	// their bytes.
	for _, name := range []string{"\x80", "\xbf", "\xc0", "a\xff", "\xe9"} {
		f.Add([]byte(`{"`+name+`":1,"data":2}`), name, `"v"`, "data")
	}
	// Keys and values of one character JSON escapes, or json.Marshal
	// writes otherwise than as it is.
	for _, c := range []string{"\x01", "\x1f", " ", "\"", "\\", "<", ">", "&", "\x7f", "\x80", "\xe9", "é", "\u2028", "\u2029"} {
		f.Add([]byte(`{"a":1}`), c, c, "a")
	}
	// Every prefix of objects with every kind of value: cut anywhere,
	// where a scanner's bounds matter.
	for _, s := range []string{
		`{"h":"\u0099\uaaff\uAAFF\u0000","data":[{"b":1},[1,2]]}`,
		`{"a" : [1, -2.5e+3, 0.5E-2, true, false, null, {"b":"\u00e9\"\\x"}], "c":{}, "d":[ ], "e":"é", "data":1990}`,
		`{"k":{"l":[{"m":[[],{}]},"\n"]},"data":-0}`,
	} {
		for i := range len(s) + 1 {
			f.Add([]byte(s[:i]), "c", `"v"`, "data")
		}
	}
	f.Fuzz(func(t *testing.T, obj []byte, key, value, before string) {
		// No room past the end: a read beyond it panics rather than
		// reading what a buffer happens to hold there.
		obj = slices.Clip(obj)
		// The scanner takes what the gateway rewrites: a valid object
		// whose names are written without escapes and that nests less
		// than it follows (the slow path only gives the same answers).
		if ms, end, ok := decodeMembers(obj); ok && end < maxScanDepth {
			plain := true
			for _, m := range ms {
				plain = plain && utf8.Valid(m.key) && !bytes.Contains(m.key, []byte{'\\'})
			}
			sc := memberScan{b: obj}
			for sc.next() {
			}
			if plain && sc.failed {
				t.Errorf("memberScan left %q to the slow path", obj)
			}
		}
		got, gotErr := SetMember(obj, key, json.RawMessage(value))
		if err := checkSetMember(obj, key, []byte(value), got, gotErr); err != nil {
			t.Errorf("SetMember(%q, %q, %q) %v", obj, key, value, err)
		}
		got, gotErr = SetString(obj, key, value)
		if err := checkSetMember(obj, key, quoted(value), got, gotErr); err != nil {
			t.Errorf("SetString(%q, %q, %q) %v", obj, key, value, err)
		}
		got, gotErr = SetStringBefore(obj, key, value, before)
		if err := checkSetStringBefore(obj, key, value, before, got, gotErr); err != nil {
			t.Errorf("SetStringBefore(%q, %q, %q, %q) %v", obj, key, value, before, err)
		}
		// An edit of valid JSON is valid JSON.
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
		// Deleting key, and key with before (a member kept around one
		// deleted, or both deleted).
		for _, keys := range [][]string{{key}, {key, before}} {
			got, gotErr := DeleteMembers(obj, keys...)
			if err := checkDeleteMembers(obj, keys, got, gotErr); err != nil {
				t.Errorf("DeleteMembers(%q, %q) %v", obj, keys, err)
			}
			if json.Valid(obj) && gotErr == nil && !json.Valid(got) {
				t.Errorf("DeleteMembers(%q, %q) = %q: not valid JSON", obj, keys, got)
			}
		}
		// AppendAbsent is SetMember key by key where MemberValue finds
		// none (of distinct keys and valid values, as it is documented).
		if key != before && json.Valid([]byte(value)) {
			add := []Member{{key, json.RawMessage(value)}, {before, json.RawMessage(`1`)}}
			got, had, gotErr := AppendAbsent(obj, add...)
			want, wantHad, wantErr := slowAppendAbsent(obj, add)
			if !bytes.Equal(got, want) || had != wantHad || (gotErr == nil) != (wantErr == nil) {
				t.Errorf("AppendAbsent(%q, %q) = %q, %b, %v; want %q, %b, %v", obj, add, got, had, gotErr, want, wantHad, wantErr)
			}
		}
		if got, want := MemberNames(obj), tokenNames(obj); !slices.Equal(got, want) {
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
// the gateway rewrites, leaving none to the slow path (the seeds would then
// check slow.go alone).
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
// and by the Decoder-based slow path.
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
			p, err := slowSetMember(benchParams, "name", quoted("echo"))
			if err != nil {
				b.Fatal(err)
			}
			m, err := slowSetMember(meta, "progressToken", quoted("mcp-gateway-12345"))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := slowSetMember(p, "_meta", m); err != nil {
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
			if _, err := slowSetStringBefore(msg, "logger", "server", "data"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
