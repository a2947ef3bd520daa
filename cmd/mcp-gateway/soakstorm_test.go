//go:build soak

package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// stormCall is one call of TestSoakStorm: when it started, and how it ended.
type stormCall struct {
	start time.Time
	err   error
}

// TestSoakStorm: with the default restart policy, a server is killed with
// SIGKILL every 2 s (each instance has served calls by then) while 16
// sessions call it and another server. Calls to the other server never
// fail; no call that starts after the last kill fails (a call that finds
// the victim down starts it at once, and waits for it); and the victim is
// ready again after the storm. The failed calls during the storm, and how
// long after the last kill /health said ready, are reported.
// SOAK_STORM (a Go duration, default 20s) sets the storm's length.
func TestSoakStorm(t *testing.T) {
	storm := 20 * time.Second
	if v := os.Getenv("SOAK_STORM"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("SOAK_STORM: %v", err)
		}
		storm = d
	}
	const after = 5 * time.Second // calls go on this long after the storm
	sb := newTestbox(t)
	srv := func(name string) map[string]any {
		return map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: name, Tools: []string{"echo", "sleep"}})}
	}
	if r := sb.launch(mcpConfig(t, map[string]any{"a": srv("a"), "victim": srv("victim")})); r.code != 0 {
		t.Fatalf("launch: %d %s\n%s", r.code, r.stderr, sb.log())
	}
	ctx, cancel := context.WithTimeout(context.Background(), storm+after+2*time.Minute)
	defer cancel()

	var lastKill, noticed time.Time
	kills, killed := 0, 0
	var readyAfter time.Duration
	stop := time.Now().Add(storm + after)
	killerDone := make(chan struct{})
	go func() {
		defer close(killerDone)
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for range int(storm / (2 * time.Second)) {
			<-tick.C
			_, s := sb.serverHealth("victim")
			if s.PID == 0 || syscall.Kill(s.PID, syscall.SIGKILL) != nil {
				continue // between instances: no kill this time
			}
			lastKill, killed = time.Now(), s.PID
			kills++
			// A call sent between the kill and the moment the gateway
			// reads the exit goes to the dying instance: it was in
			// flight at the kill. Calls after the storm are those that
			// start once /health no longer shows the killed instance.
			for time.Now().Before(stop) {
				if _, s := sb.serverHealth("victim"); s.State != "ready" || s.PID != killed {
					break
				}
				time.Sleep(time.Millisecond)
			}
			noticed = time.Now()
		}
		// How long the victim took to be ready again (measured, not
		// asserted: the count of failed calls after the storm is).
		for time.Now().Before(stop) {
			if _, s := sb.serverHealth("victim"); s.State == "ready" && s.PID != 0 && s.PID != killed {
				readyAfter = time.Since(lastKill)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()

	calls := make([][]stormCall, 16)
	victim := make([]bool, 16) // which sessions call the victim
	var wg sync.WaitGroup
	for i := range calls {
		cs := sb.connect(ctx, nil)
		victim[i] = i%4 != 0 // 12 on the victim, 4 on "a"
		tool := "echo"
		if victim[i] {
			tool = "victim_echo"
		}
		wg.Go(func() {
			for n := 0; time.Now().Before(stop); n++ {
				text := "s" + strconv.Itoa(i) + "-" + strconv.Itoa(n)
				c := stormCall{start: time.Now()}
				got, err := fixture.CallText(ctx, cs, tool, map[string]any{"text": text})
				if err == nil && got != text {
					err = fmt.Errorf("%s answered %q, want %q", tool, got, text)
				}
				c.err = err
				calls[i] = append(calls[i], c)
			}
		})
	}
	wg.Wait()
	<-killerDone

	var during, duringFailed, afterOK, otherFailed int
	var afterFailed []string
	kinds := map[string]int{}
	for i, cs := range calls {
		for _, c := range cs {
			switch {
			case !victim[i]:
				if c.err != nil {
					otherFailed++
				}
			case c.start.After(noticed):
				if c.err != nil {
					afterFailed = append(afterFailed, c.err.Error())
				} else {
					afterOK++
				}
			default:
				during++
				if c.err != nil {
					duringFailed++
					kind, _, _ := strings.Cut(c.err.Error(), "; stderr")
					kinds[kind]++
				}
			}
		}
	}
	t.Logf("victim killed %d times, every 2 s for %s", kills, storm)
	t.Logf("calls to the victim during the storm: %d, %d failed", during, duringFailed)
	for kind, n := range kinds {
		t.Logf("  %5d × %s", n, kind)
	}
	t.Logf("the gateway saw the last kill %s after it", noticed.Sub(lastKill).Round(time.Millisecond))
	t.Logf("calls to the victim started after that: %d ok, %d failed", afterOK, len(afterFailed))
	if readyAfter > 0 {
		t.Logf("/health said ready %s after the last kill", readyAfter.Round(time.Millisecond))
	}
	if kills < 3 {
		t.Errorf("the victim was killed only %d times; the storm proved little", kills)
	}
	if otherFailed > 0 {
		t.Errorf("%d calls to the server never killed failed", otherFailed)
	}
	if len(afterFailed) > 0 {
		t.Errorf("%d calls started after the last kill failed, e.g. %q", len(afterFailed), afterFailed[0])
	}
	if afterOK == 0 {
		t.Error("no call started after the last kill succeeded")
	}
	waitFor(t, 60*time.Second, "the victim to be ready again", func() bool {
		_, s := sb.serverHealth("victim")
		return s.State == "ready"
	})
}
