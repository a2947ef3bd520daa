package supervisor

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestLiveProcessWithoutSessionIsReplaced: a server that stops answering
// (here: its stdout closes after two messages) but whose process lives on
// is not kept as a dead session that fails every call forever: it is
// stopped, process group and all, and started again.
func TestLiveProcessWithoutSessionIsReplaced(t *testing.T) {
	// The fixture writes to a FIFO; the shell relays its first two lines
	// (the initialize and tools/list responses) to our stdout, closes it and
	// waits, while a sleep after the fixture keeps the process group alive.
	// Our stdin reaches the fixture through fd 4 (a background job's stdin
	// is /dev/null).
	fifo := filepath.Join(t.TempDir(), "out")
	shell := fmt.Sprintf(`exec 4<&0; mkfifo '%[1]s'
{ %[2]s <&4 >'%[1]s'; sleep 1000; } >/dev/null &
exec 4<&- <'%[1]s'
for i in 1 2; do IFS= read -r l; printf '%%s\n' "$l"; done
exec >/dev/null
wait`, fifo, fixture.ShellCommand(fixture.Options{Tools: []string{"echo"}}))
	logs := &logBuffer{}
	s := New(catalog.ServerSpec{Name: "mute", Kind: catalog.KindLocal, Shell: shell}, Options{
		Logger:        zerolog.New(logs),
		RestartPolicy: RestartPolicy{MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond},
		StopWait:      200 * time.Millisecond,
		OnReady: func(ctx context.Context, _ *Server, cs *mcp.ClientSession, _ RoundTrip) error {
			_, err := cs.ListTools(ctx, nil)
			return err
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		s.Run(ctx)
		close(done)
	}()
	defer func() {
		cancel()
		<-done
	}()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := s.WaitStarted(wctx); err != nil {
		t.Fatalf("first start: %v", err)
	}
	first := s.Status().PID
	for s.Status().Restarts < 1 {
		select {
		case <-wctx.Done():
			t.Fatalf("a server without a session was never replaced: %+v\n%s", s.Status(), logs)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if !strings.Contains(logs.String(), "process lives on") {
		t.Errorf("log does not say why the server was stopped:\n%s", logs)
	}
	// The whole group of the first instance is gone, not only its shell.
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(-first, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("process group %d of the replaced instance is still alive", first)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestNextCallAfterDeathWaitsForRestart: a call that arrives after the
// process died but before the supervisor has noticed is not sent to the dead
// session; it waits for the restart and succeeds.
func TestNextCallAfterDeathWaitsForRestart(t *testing.T) {
	s, _ := runServer(t, fixture.Options{}, Options{RestartPolicy: RestartPolicy{FailAfter: 100}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 5 {
		if _, err := call(ctx, s, "crash", map[string]any{"code": 9}); err == nil || !strings.Contains(err.Error(), "exit status 9") {
			t.Fatalf("crash %d: %v", i, err)
		}
		// Immediately: the crash call returned once the exit was known,
		// which can be before Run has moved the state on.
		res, err := call(ctx, s, "echo", map[string]any{"text": "after"})
		if err != nil {
			t.Fatalf("call %d right after the crash: %v", i, err)
		}
		if got := resultText(t, res); got != "after" {
			t.Fatalf("echo = %q", got)
		}
	}
}
