package jsonlimit

import (
	"strings"
	"testing"
)

func TestDepthWithin(t *testing.T) {
	cases := []struct {
		in   string
		max  int
		want bool
	}{
		{`{}`, 1, true},
		{`{"a":[1,{"b":2}]}`, 3, true},
		{`{"a":[1,{"b":2}]}`, 2, false},
		{`{"a":"[[[[[[[["}`, 1, true}, // brackets in strings do not count
		{`{"a":"\"[[[[["}`, 1, true},  // nor after an escaped quote
		{`[[[]],[[]]]`, 3, true},      // siblings do not add up
		{`]]]` + `[[[]]]`, 2, false},  // stray closers do not buy depth
		{strings.Repeat("[", 1001) + strings.Repeat("]", 1001), MaxDepth, false},
		{strings.Repeat("[", 1000) + strings.Repeat("]", 1000), MaxDepth, true},
	}
	for _, c := range cases {
		if got := DepthWithin([]byte(c.in), c.max); got != c.want {
			t.Errorf("DepthWithin(%.40q, %d) = %v, want %v", c.in, c.max, got, c.want)
		}
	}
}
