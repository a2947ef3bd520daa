package logfile

import (
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestWriterBatches: info lines wait for the next flush; a warning is
// written at once, after the lines before it; Close writes the rest.
func TestWriterBatches(t *testing.T) {
	out := &fixture.Log{}
	lw := NewWriter(out)
	log := zerolog.New(lw)
	log.Info().Msg("first")
	log.Info().Msg("second")
	log.Warn().Msg("third")
	if got := out.String(); !strings.Contains(got, "first") || strings.Index(got, "second") > strings.Index(got, "third") ||
		!strings.Contains(got, "third") {
		t.Fatalf("after a warning the log holds %q, want first, second, third in order", got)
	}
	log.Info().Msg("fourth")
	deadline := time.Now().Add(10*flushInterval + time.Second)
	for !strings.Contains(out.String(), "fourth") {
		if time.Now().After(deadline) {
			t.Fatal("the periodic flush did not write an info line")
		}
		time.Sleep(10 * time.Millisecond)
	}
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
