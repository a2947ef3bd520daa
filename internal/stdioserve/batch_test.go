package stdioserve

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestBatchSpy: the requests of a line that begins with '[' (after spaces)
// are noted, however the bytes are split into reads; those of a plain line
// and the responses in a batch are not; the bytes pass unchanged.
func TestBatchSpy(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"[x]"}}`,
		` 	[{"jsonrpc":"2.0","id":2,"method":"tools/call"},{"jsonrpc":"2.0","id":"s","method":"ping"},{"jsonrpc":"2.0","id":9,"result":{}},{"jsonrpc":"2.0","method":"notifications/x"}]`,
		``,
		`{"jsonrpc":"2.0","id":3,"method":"ping","params":{"a":["[",1]}}`,
		`[{"jsonrpc":"2.0","id":4,"method":"ping"}]`, // the last line, without its line break
	}, "\n")
	for _, split := range []struct {
		name string
		r    func(io.Reader) io.Reader
	}{{"whole", func(r io.Reader) io.Reader { return r }}, {"byte by byte", iotest.OneByteReader}} {
		spy := newBatchSpy(split.r(strings.NewReader(in)))
		out, err := io.ReadAll(spy)
		if err != nil || string(out) != in {
			t.Fatalf("%s: read %q, %v; want the input unchanged", split.name, out, err)
		}
		for _, c := range []struct {
			id   any
			want bool
		}{{float64(1), false}, {float64(2), true}, {"s", true}, {float64(9), false}, {float64(3), false}, {float64(4), true}} {
			id, _ := jsonrpc.MakeID(c.id)
			if got := spy.batched(id); got != c.want {
				t.Errorf("%s: batched(%v) = %v, want %v", split.name, c.id, got, c.want)
			}
		}
		if id, _ := jsonrpc.MakeID(float64(2)); spy.batched(id) {
			t.Errorf("%s: id 2 still batched after it was taken", split.name)
		}
	}
	spy := newBatchSpy(strings.NewReader("[{\"id\":1,\n\"method\":\"ping\"}]\n"))
	if _, err := io.ReadAll(spy); err != nil {
		t.Fatal(err)
	}
	if id, _ := jsonrpc.MakeID(float64(5)); !spy.batched(id) {
		t.Error("after a batch line that did not parse, a request is not taken for a lone one")
	}
}
