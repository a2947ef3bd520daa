package main

import (
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestLogWriterBatches: info lines wait for the next flush; a warning is
// written at once, after the lines before it; Close writes the rest.
func TestLogWriterBatches(t *testing.T) {
	out := &syncBuffer{}
	lw := newLogWriter(out)
	log := zerolog.New(lw)
	log.Info().Msg("first")
	log.Info().Msg("second")
	log.Warn().Msg("third")
	if got := out.String(); !strings.Contains(got, "first") || strings.Index(got, "second") > strings.Index(got, "third") ||
		!strings.Contains(got, "third") {
		t.Fatalf("after a warning the log holds %q, want first, second, third in order", got)
	}
	log.Info().Msg("fourth")
	waitFor(t, 10*logFlushInterval+time.Second, "the periodic flush", func() bool { return strings.Contains(out.String(), "fourth") })
	log.Info().Msg("fifth")
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "fifth") {
		t.Errorf("Close did not write the buffered line: %q", out.String())
	}
	if err := lw.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
