package rawjson

import (
	"bytes"
	"encoding/json"
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

// TestDeleteMembers: the members named go, each with one comma, and every
// other byte stays; an object without them is returned as it is. The
// slow path (a key written with escapes) gives the same answers.
func TestDeleteMembers(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"a":1,"b":2,"d":3}`, `{"a":1,"d":3}`},
		{`{"b":2,"a":1}`, `{"a":1}`},
		{`{"a":1,"b":2}`, `{"a":1}`},
		{`{ "b" : 2 , "a" : [1, {"b":0}] }`, `{ "a" : [1, {"b":0}] }`},
		{`{"a":1 , "b":2 }`, `{"a":1 }`},
		{`{"b":1,"b":2}`, `{}`},
		{`{"b":1,"c":2,"a":3,"b":4}`, `{"a":3}`},
		{`{"c":1,"a":2,"b":3,"c":4}`, `{"a":2}`},
		{`{"a":1}`, `{"a":1}`},
		{` {"a":"\"b\":1","b":{}} x`, ` {"a":"\"b\":1"} x`},
		{`{"\u0062":1,"a":2}`, `{"a":2}`},
		{`{"a":2,"\u0062":1, "c" : 3}`, `{"a":2}`},
	} {
		got, err := DeleteMembers([]byte(c.in), "b", "c")
		if err != nil || string(got) != c.want {
			t.Errorf("DeleteMembers(%s) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{``, `[]`, `{"a":1`, `{"b":}`} {
		if got, err := DeleteMembers([]byte(in), "b"); err == nil {
			t.Errorf("DeleteMembers(%s) = %s, no error", in, got)
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

// TestListPage: EncodeList writes the items as they are, comma-separated,
// with nextCursor only when there is one; ItemsOf reads them back, a null
// member or cursor as none, and refuses what is not a list result.
func TestListPage(t *testing.T) {
	items := []json.RawMessage{json.RawMessage(`{"name":"a"}`), json.RawMessage(`{"name":"b","x":[1, 2]}`)}
	for _, c := range []struct {
		items []json.RawMessage
		next  string
		want  string
	}{
		{items, "", `{"tools":[{"name":"a"},{"name":"b","x":[1, 2]}]}`},
		{items[:1], "c<1>", `{"tools":[{"name":"a"}],"nextCursor":"c\u003c1\u003e"}`},
		{nil, "", `{"tools":[]}`},
	} {
		got := EncodeList("tools", c.items, c.next)
		if string(got) != c.want {
			t.Errorf("EncodeList(%s, %q) = %s, want %s", c.items, c.next, got, c.want)
		}
		back, next, err := ItemsOf(got, "tools")
		if err != nil || next != c.next || len(back) != len(c.items) {
			t.Errorf("ItemsOf(%s) = %s, %q, %v", got, back, next, err)
		}
		for i := range back {
			if !bytes.Equal(back[i], c.items[i]) {
				t.Errorf("item %d read back as %s, was %s", i, back[i], c.items[i])
			}
		}
	}
	if back, next, err := ItemsOf(json.RawMessage(`{"tools":null,"nextCursor":null}`), "tools"); err != nil || back != nil || next != "" {
		t.Errorf("null members: %s, %q, %v; want none", back, next, err)
	}
	for _, bad := range []string{`[]`, `{"tools":{}}`, `{"tools":[],"nextCursor":1}`} {
		if _, _, err := ItemsOf(json.RawMessage(bad), "tools"); err == nil {
			t.Errorf("ItemsOf(%s): no error", bad)
		}
	}
}
