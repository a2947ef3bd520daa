package supervisor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestSilentServerStoppedAtConnectTimeout: a server that never answers
// initialize is reported as stopped for its silence, with the limit, not as
// having died by itself ("killed by signal 15").
func TestSilentServerStoppedAtConnectTimeout(t *testing.T) {
	s, _ := runServer(t, fixture.Options{StartDelay: time.Hour}, Options{ConnectTimeout: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := s.WaitStarted(ctx)
	if err == nil || !strings.Contains(err.Error(), "sent no initialize answer within 300ms and was stopped") || strings.Contains(err.Error(), "signal") {
		t.Fatalf("first start: %v; want it stopped for sending no initialize answer within 300ms", err)
	}
}
