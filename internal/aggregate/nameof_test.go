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
