//go:build soak

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// soakDuration is how long the soak runs; SOAK_DURATION (a Go duration)
// overrides it for a quick local run.
func soakDuration(t *testing.T) time.Duration {
	if v := os.Getenv("SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("SOAK_DURATION: %v", err)
		}
		return d
	}
	return 60 * time.Second
}

// soakStats counts the calls to one server.
type soakStats struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	bad        []string       // failures that do not explain themselves
	kinds      map[string]int // failure messages up to the stderr quote
}

// TestSoak: 32 concurrent sessions call three servers while one of them is
// killed with SIGKILL every few seconds. Calls to the healthy servers never
// fail; every failed call to the killed one names it and says how it ended.
// Run with `make soak` (go test -race -tags soak -run Soak ./cmd/mcp-gateway/).
//
// --max-backoff 2s: being killed every few seconds is a crash loop by the
// supervisor's rules (uptime under 10s), whose retries would otherwise back
// off to 30s and leave the victim down for most of the run.
func TestSoak(t *testing.T) {
	sb := newTestbox(t)
	srv := func(name string) map[string]any {
		return map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: name, Tools: []string{"echo", "sleep"}})}
	}
	r := sb.launch(mcpConfig(t, map[string]any{"a": srv("a"), "b": srv("b"), "victim": srv("victim")}), "--max-backoff", "2s")
	if r.code != 0 {
		t.Fatalf("launch: %d %s\n%s", r.code, r.stderr, sb.log())
	}
	// "a" sorts first and keeps the plain names.
	tools := map[string]struct{ echo, sleep string }{
		"a":      {"echo", "sleep"},
		"b":      {"b_echo", "b_sleep"},
		"victim": {"victim_echo", "victim_sleep"},
	}
	servers := []string{"a", "b", "victim"}
	stats := map[string]*soakStats{}
	for _, name := range servers {
		stats[name] = &soakStats{kinds: map[string]int{}}
	}

	dur := soakDuration(t)
	ctx, cancel := context.WithTimeout(context.Background(), dur+2*time.Minute)
	defer cancel()
	stop := time.Now().Add(dur)

	var kills atomic.Int64
	killerDone := make(chan struct{})
	go func() {
		defer close(killerDone)
		for time.Now().Before(stop) {
			time.Sleep(time.Duration(2000+rand.IntN(2000)) * time.Millisecond)
			_, s := sb.serverHealth("victim")
			if s.PID != 0 && syscall.Kill(s.PID, syscall.SIGKILL) == nil {
				kills.Add(1)
			}
		}
	}()

	var wg sync.WaitGroup
	for i := range 32 {
		cs := sb.connect(ctx, nil)
		wg.Go(func() {
			for n := 0; time.Now().Before(stop); n++ {
				server := servers[(i+n)%len(servers)]
				st := stats[server]
				var err error
				if n%4 == 3 {
					// Slow calls, so that kills find calls in flight.
					ms := 50 + rand.IntN(250)
					var got string
					got, err = fixture.CallText(ctx, cs, tools[server].sleep, map[string]any{"ms": ms})
					if err == nil && got != fmt.Sprintf("slept %dms", ms) {
						err = fmt.Errorf("sleep answered %q", got)
					}
				} else {
					text := "s" + strconv.Itoa(i) + "-" + strconv.Itoa(n)
					var got string
					got, err = fixture.CallText(ctx, cs, tools[server].echo, map[string]any{"text": text})
					if err == nil && got != text {
						err = fmt.Errorf("echo answered %q, want %q", got, text)
					}
				}
				if err == nil {
					st.ok.Add(1)
					continue
				}
				st.failed.Add(1)
				msg := err.Error()
				explained := server == "victim" && strings.Contains(msg, `server "victim"`) &&
					(strings.Contains(msg, "killed by signal 9") || strings.Contains(msg, "exit status"))
				kind, _, _ := strings.Cut(msg, "; stderr")
				st.mu.Lock()
				st.kinds[kind]++
				if !explained && len(st.bad) < 10 {
					st.bad = append(st.bad, msg)
				}
				st.mu.Unlock()
			}
		})
	}
	wg.Wait()
	<-killerDone

	for _, name := range servers {
		st := stats[name]
		t.Logf("%s: %d ok, %d failed", name, st.ok.Load(), st.failed.Load())
		for kind, n := range st.kinds {
			t.Logf("  %5d × %s", n, kind)
		}
		if name != "victim" && st.failed.Load() != 0 {
			t.Errorf("%d calls to the healthy server %s failed: %q", st.failed.Load(), name, st.bad)
		} else if len(st.bad) > 0 {
			t.Errorf("unexplained failures on %s: %q", name, st.bad)
		}
		if st.ok.Load() == 0 {
			t.Errorf("no call to %s succeeded", name)
		}
	}
	t.Logf("victim killed %d times", kills.Load())
	if kills.Load() < 3 {
		t.Errorf("the victim was killed only %d times; the soak proved little", kills.Load())
	}

	// Afterwards: the victim is back, the others never restarted, and the
	// gateway has reaped every child it had.
	waitFor(t, 60*time.Second, "the victim to be ready again", func() bool {
		_, s := sb.serverHealth("victim")
		return s.State == "ready"
	})
	for _, name := range []string{"a", "b"} {
		if _, s := sb.serverHealth(name); s.Restarts != 0 || s.State != "ready" {
			t.Errorf("%s after the soak: %+v", name, s)
		}
	}
	gw := sb.pid()
	waitFor(t, 20*time.Second, "no zombie children of the gateway", func() bool { return len(zombieChildren(gw)) == 0 })
}

// zombieChildren lists the exited, unreaped children of pid.
func zombieChildren(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) >= 2 && f[0] == "Z" && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}
