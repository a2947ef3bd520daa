package rawjson

import (
	"strings"
	"testing"
)

// TestSetStringBefore: a member an object lacks goes before the named one,
// every other byte as it was; one it has is replaced where it is.
func TestSetStringBefore(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"level":"info","data":"x"}`, `{"level":"info","logger":"s","data":"x"}`},
		{`{ "data" : 1 , "level":"info"}`, `{ "logger":"s","data" : 1 , "level":"info"}`},
		{`{"level":"info","logger":"own","data":"x"}`, `{"level":"info","logger":"s","data":"x"}`},
		{`{"level":"info"}`, `{"level":"info","logger":"s"}`},
		{`{}`, `{"logger":"s"}`},
	} {
		got, err := SetStringBefore([]byte(c.in), "logger", "s", "data")
		if err != nil || string(got) != c.want {
			t.Errorf("SetStringBefore(%s) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
}

// TestScannersRefuse: each of the scanner's readers answers -1 (not an
// offset) for what it cannot read, at every place it can tell: an offset
// would make memberScan go on from the wrong byte.
func TestScannersRefuse(t *testing.T) {
	for _, c := range []struct {
		name string
		scan func([]byte, int) int
		in   []string
	}{
		{"scanString", scanString, []string{`"abc`, `"\`, `"\u12`, `"\u12G4"`, `"\x"`, "\"\x01\""}},
		{"scanNumber", scanNumber, []string{``, `-`, `x`, `1.`, `1.x`, `1e`, `1e+`, `-x`}},
		{"scanKey", scanKey, []string{``, `a`, `"a`, `"a" 1`, `"a"`}},
		{"scanValue", scanValue, []string{``, `tru`, `fals`, `nul`, `"a`, `-`, `[`, `[1`, `[1 2]`, `[1,`, `{`, `{1:2}`,
			`{"a"}`, `{"a":1`, `{"a":1,}`, `{"a":1 "b":2}`, `[{"a":1]`, `{"a":[1}`, strings.Repeat("[", maxScanDepth+1)}},
	} {
		for _, in := range c.in {
			if got := c.scan([]byte(in), 0); got != -1 {
				t.Errorf("%s(%q) = %d, want -1", c.name, in, got)
			}
		}
	}
}
