package supervisor

import (
	"slices"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
)

// TestLineRing: the stderr tail a failure message quotes keeps the last
// lines in the order written, across the ring's wrap, and cuts only a line
// longer than its width.
func TestLineRing(t *testing.T) {
	r := newLineRing(3, 5)
	r.add("a")
	if got := r.last(10); !slices.Equal(got, []string{"a"}) {
		t.Errorf("one line: %q", got)
	}
	r.add("b")
	r.add("c")
	if got := r.last(10); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("a full ring: %q", got)
	}
	r.add("d")
	if got := r.last(10); !slices.Equal(got, []string{"b", "c", "d"}) {
		t.Errorf("after the wrap: %q", got)
	}
	if got := r.last(2); !slices.Equal(got, []string{"c", "d"}) {
		t.Errorf("the last two: %q", got)
	}
	r.add("12345")
	r.add("123456")
	if got := r.last(2); !slices.Equal(got, []string{"12345", "12345…"}) {
		t.Errorf("a line of the width, and one longer: %q", got)
	}
}

// TestRemoteRetryFailedDefault: a remote left without RetryFailed has a
// failed remote tried again by calls once a second, not never.
func TestRemoteRetryFailedDefault(t *testing.T) {
	for _, set := range []time.Duration{0, -1} {
		r := NewRemote(catalog.ServerSpec{Name: "rm", URL: "http://127.0.0.1:1"}, RemoteOptions{RetryFailed: set})
		if r.retryFailed != time.Second {
			t.Errorf("RetryFailed %v: %v, want 1s", set, r.retryFailed)
		}
	}
	if r := NewRemote(catalog.ServerSpec{Name: "rm", URL: "http://127.0.0.1:1"}, RemoteOptions{RetryFailed: time.Minute}); r.retryFailed != time.Minute {
		t.Errorf("RetryFailed 1m: %v", r.retryFailed)
	}
}
