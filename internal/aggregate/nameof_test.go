package aggregate

import (
	"encoding/json"
	"testing"
)

// TestNameOfAsUnmarshal: nameOf reads a plain name without decoding it,
// and must read every name as json.Unmarshal does: escapes, non-ASCII,
// invalid UTF-8 (replaced), a non-string, a missing member.
func TestNameOfAsUnmarshal(t *testing.T) {
	for _, name := range []string{`"echo"`, `"get_weather-2.v1"`, `""`, `"a\"b"`, `"a\\b"`, `"\u0065cho"`,
		`"héllo"`, "\"bad\xffutf8\"", `"tab\there"`, `"x/y"`, `12`, `null`, `{"a":1}`, `"unterminated`} {
		params := json.RawMessage(`{"name":` + name + `,"arguments":{}}`)
		var want string
		if v := json.RawMessage(name); json.Valid(params) {
			_ = json.Unmarshal(v, &want)
		}
		if got := nameOf(params); got != want {
			t.Errorf("nameOf(%s) = %q, json.Unmarshal gives %q", name, got, want)
		}
	}
	if got := nameOf(json.RawMessage(`{"arguments":{}}`)); got != "" {
		t.Errorf("nameOf without a name = %q", got)
	}
}

// TestPlainStringTakesPlainNames: the names of nearly every call (printable
// ASCII without escapes) are read without decoding, on every forwarded
// call's span; anything that needs decoding (an escape, a control byte,
// non-ASCII, a value that is not a string) is left to json.Unmarshal. A
// check that declined too much would give the same names, slower, so this
// pins the fast path itself.
func TestPlainStringTakesPlainNames(t *testing.T) {
	for _, name := range []string{``, `echo`, `a b`, `get_weather-2.v1`, `x/y`, `~!#$%&'()*+,;<=>?@[]^{|}`} {
		if got, ok := plainString([]byte(`"` + name + `"`)); !ok || got != name {
			t.Errorf("plainString(%q) = %q, %v; want the name, read plainly", `"`+name+`"`, got, ok)
		}
	}
	for _, v := range []string{`"a\"b"`, `"\\"`, `"a\\b"`, `"\u0065cho"`, `"héllo"`, "\"bad\xffutf8\"", "\"tab\there\"",
		"\"nl\n\"", "\"\x1f\"", `"a"b"`, `12`, `"`, `x`, `null`, `"unterminated`, `unopened"`} {
		if got, ok := plainString([]byte(v)); ok {
			t.Errorf("plainString(%s) = %q, true; want it left to decoding", v, got)
		}
	}
}
