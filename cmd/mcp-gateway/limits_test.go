package main

import (
	"errors"
	"io"
	"testing"
	"time"
)

// TestLimitFlags: the HTTP limits' flags refuse negative values, default to
// the endpoint's defaults, and reach a launch's background gateway whole.
func TestLimitFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--max-body-bytes", "-1"}, {"--read-header-timeout", "-1s"}, {"--body-timeout", "-1s"}, {"--idle-timeout", "-1s"},
	} {
		var ue *usageError
		if _, _, err := parseFlags(command{name: "serve"}, args, io.Discard); !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	set, _, err := parseFlags(command{name: "serve"}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	l := set.Limits
	if l.MaxBodyBytes != 4<<20 || l.ReadHeaderTimeout != 10*time.Second || l.BodyTimeout != time.Minute || l.IdleTimeout != 2*time.Minute {
		t.Errorf("defaults %+v", l)
	}
	// A launch hands every limit to the background gateway.
	set, _, err = parseFlags(command{}, []string{"--max-body-bytes", "123", "--idle-timeout", "7s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := parseFlags(command{name: "serve"}, limitArgs(set.Limits), io.Discard)
	if err != nil || again.Limits != set.Limits {
		t.Errorf("limits through args: %+v %v, want %+v", again.Limits, err, set.Limits)
	}
}
