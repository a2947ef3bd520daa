package rawjson

import "testing"

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
