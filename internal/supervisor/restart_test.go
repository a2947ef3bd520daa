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
// (here: its stdout closes after three messages) but whose process lives on
// is not kept as a dead session that fails every call forever: it is
// stopped, process group and all, and started again.
func TestLiveProcessWithoutSessionIsReplaced(t *testing.T) {
	t.Parallel() // it waits out timers; the rest of the package need not wait
	// The fixture writes to a FIFO; the shell relays its first three lines
	// (the answers to the era probe, initialize and tools/list) to our
	// stdout, closes it and
	// waits, while a sleep after the fixture keeps the process group alive.
	// Our stdin reaches the fixture through fd 4 (a background job's stdin
	// is /dev/null).
	fifo := filepath.Join(t.TempDir(), "out")
	shell := fmt.Sprintf(`exec 4<&0; mkfifo '%[1]s'
{ %[2]s <&4 >'%[1]s'; sleep 1000; } >/dev/null &
exec 4<&- <'%[1]s'
for i in 1 2 3; do IFS= read -r l; printf '%%s\n' "$l"; done
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

// TestKilledServerThatServedIsNotACrashLoop: a server killed again and again
// (each start completed its handshake and answered calls) is restarted at
// the shortest backoff every time and never marked failed, so that it is
// back at once when the kills stop. StableAfter is an hour: every exit is
// "soon after the start", which used to count as a fast failure.
func TestKilledServerThatServedIsNotACrashLoop(t *testing.T) {
	s, logs := runServer(t, fixture.Options{}, Options{RestartPolicy: RestartPolicy{
		MinBackoff: 10 * time.Millisecond, MaxBackoff: time.Hour, FailAfter: 3, StableAfter: time.Hour}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const kills = 8 // well past FailAfter
	for i := range kills {
		res, err := call(ctx, s, "pid", nil)
		if err != nil {
			t.Fatalf("call before kill %d: %v\n%s", i, err, logs)
		}
		pid := s.Status().PID
		if got := resultText(t, res); got != itoa(pid) {
			t.Fatalf("pid tool says %s, status says %d", got, pid)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		for s.Status().PID == pid || s.Status().Restarts < i+1 {
			if st := s.Status(); st.State == StateFailed {
				t.Fatalf("after kill %d of a server that served: %+v", i+1, st)
			}
			select {
			case <-ctx.Done():
				t.Fatalf("not restarted after kill %d: %+v", i+1, s.Status())
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	if _, err := call(ctx, s, "echo", map[string]any{"text": "after"}); err != nil {
		t.Fatalf("call after %d kills: %v", kills, err)
	}
	if st := s.Status(); st.State != StateReady || st.Restarts != kills {
		t.Errorf("status after the storm: %+v", st)
	}
}

// TestCallEndsBackoff: a call that arrives while a server waits out its
// restart backoff starts it at once. The backoff here is an hour.
func TestCallEndsBackoff(t *testing.T) {
	s, _ := runServer(t, fixture.Options{}, Options{RestartPolicy: RestartPolicy{
		MinBackoff: time.Hour, MaxBackoff: time.Hour, StableAfter: time.Hour}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
	pid := s.Status().PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for s.Status().State != StateRestarting {
		select {
		case <-ctx.Done():
			t.Fatalf("never restarting: %+v", s.Status())
		case <-time.After(5 * time.Millisecond):
		}
	}
	res, err := call(ctx, s, "pid", nil)
	if err != nil {
		t.Fatalf("call during the backoff: %v", err)
	}
	if got := resultText(t, res); got == itoa(pid) || got != itoa(s.Status().PID) {
		t.Errorf("answered by pid %s; killed %d, now %+v", got, pid, s.Status())
	}
}

// TestRemoteFlapsThenRetries: a remote that restarts again and again (each
// session served calls) is never marked failed, and a call that meets the
// lost session re-initializes and is retried, as Do promises, even with an
// hour of backoff.
func TestRemoteFlapsThenRetries(t *testing.T) {
	rem := fixture.StartRemote(t, fixture.RemoteOptions{Token: "tok"})
	r, logs := runRemote(t, catalog.ServerSpec{URL: rem.URL(), Headers: map[string]string{"Authorization": "Bearer tok"}}, RemoteOptions{
		RestartPolicy: RestartPolicy{MinBackoff: time.Hour, MaxBackoff: time.Hour, FailAfter: 2, StableAfter: time.Hour},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := 1; i <= 5; i++ {
		res, err := callRemote(ctx, r, "generation", nil)
		if err != nil {
			t.Fatalf("call %d: %v\n%s", i, err, logs)
		}
		if got := resultText(t, res); got != itoa(i) {
			t.Fatalf("call %d answered by generation %s", i, got)
		}
		rem.Restart()
	}
	if st := r.Status(); st.State == StateFailed {
		t.Errorf("a remote that served every session is failed: %+v", st)
	}
}
