package logfile

import (
	"encoding/json"
	"slices"
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
	if got := messages(t, out.String()); !slices.Equal(got, []string{"first", "second", "third"}) {
		t.Fatalf("after a warning the log holds %q, want exactly first, second, third in order", got)
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

// messages returns the message of every log line in out, in order.
func messages(t *testing.T, out string) []string {
	t.Helper()
	var msgs []string
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		var l struct {
			Message string `json:"message"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		msgs = append(msgs, l.Message)
	}
	return msgs
}
