package rawjson

import (
	"encoding/json"
	"testing"
)

func TestRemoveMember(t *testing.T) {
	for _, c := range []struct{ in, key, want string }{
		{`{"a":1,"resultType":"complete","b":{"c":[1,2]}}`, "resultType", `{"a":1,"b":{"c":[1,2]}}`},
		{`{"resultType":"complete"}`, "resultType", `{}`},
		{`{ "resultType" : "complete" , "a" : 1 }`, "resultType", `{"a" : 1}`},
		{`{"a":1,"a":2,"b":3}`, "a", `{"b":3}`},
		{`{"a":1}`, "x", `{"a":1}`},
	} {
		got, found := RemoveMember(json.RawMessage(c.in), c.key)
		if string(got) != c.want || found != (c.in != c.want) {
			t.Errorf("RemoveMember(%s, %q) = %s, %v; want %s", c.in, c.key, got, found, c.want)
		}
	}
}
