package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The whole harness runs in CI as `go run ./bench -quick` (make
// bench-smoke); these tests pin the pieces whose mistakes would not fail a
// run but would print wrong numbers.

func TestPercentile(t *testing.T) {
	s := stats{}
	for i := 1; i <= 100; i++ {
		s.lat = append(s.lat, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}, {0.1, time.Millisecond}} {
		if got := s.pct(c.p); got != c.want {
			t.Errorf("pct(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if got := (stats{}).pct(50); got != 0 {
		t.Errorf("pct of no calls = %v, want 0", got)
	}
}

func TestDriveCountMakesExactlyN(t *testing.T) {
	var made atomic.Int64
	w := func(context.Context) error { made.Add(1); return nil }
	s, err := drive(context.Background(), []call{w, w, w, w, w}, 0, 1234)
	if err != nil {
		t.Fatal(err)
	}
	if s.calls != 1234 || made.Load() != 1234 || len(s.lat) != 1234 {
		t.Fatalf("calls %d, made %d, latencies %d; want 1234 each", s.calls, made.Load(), len(s.lat))
	}
}

func TestDriveStopsOnFirstError(t *testing.T) {
	boom := errors.New("wrong answer")
	var made atomic.Int64
	w := func(context.Context) error {
		if made.Add(1) == 10 {
			return boom
		}
		return nil
	}
	_, err := drive(context.Background(), []call{w, w}, time.Minute, 0)
	if !errors.Is(err, boom) {
		t.Fatalf("drive error = %v, want %v", err, boom)
	}
}

func TestProcReaders(t *testing.T) {
	// Burn CPU until at least one clock tick is accounted; a loaded machine
	// may take a while to give us 10 ms.
	var cpu time.Duration
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if cpu, err = cpuTime(os.Getpid()); err != nil || cpu > 0 {
			break
		}
		for x := 0; x < 1_000_000; x++ {
			_ = x * x
		}
	}
	if err != nil || cpu <= 0 {
		t.Fatalf("cpuTime(self) = %v, %v; want > 0", cpu, err)
	}
	rss, err := rssBytes(os.Getpid())
	if err != nil || rss < 1<<20 {
		t.Fatalf("rssBytes(self) = %v, %v; want at least 1 MiB", rss, err)
	}
	if !alive(os.Getpid()) {
		t.Fatal("alive(self) = false")
	}
	if _, err := cpuTime(-1); err == nil {
		t.Fatal("cpuTime(-1) did not fail")
	}
}

func TestTableMarksVerdicts(t *testing.T) {
	var tb table
	tb.add("a", "1 ms", "≤ 2 ms", judge(true))
	tb.add("b", "3 ms", "≤ 2 ms", judge(false))
	tb.add("c", "info", "", none)
	if tb.misses() != 1 {
		t.Fatalf("misses = %d, want 1", tb.misses())
	}
	var out strings.Builder
	tb.write(&out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("table has %d lines, want 5:\n%s", len(lines), out.String())
	}
	if !strings.Contains(lines[2], "PASS") || !strings.Contains(lines[3], "MISS") || strings.Contains(lines[4], "PASS") {
		t.Fatalf("verdicts misplaced:\n%s", out.String())
	}
}

// TestQuickReportChecksOnly: a quick run reports what it checked (every measurement ran with
// the right answers, no process left behind) and none of its numbers or targets, which would
// read as failures (31% of direct against >= 50%) in a passing run.
func TestQuickReportChecksOnly(t *testing.T) {
	var tb table
	tb.add("gateway, 1 session", "1,234 calls/s (31% of direct)", "≥ 50% of direct calls/s", judge(false))
	tb.add("launch to ready, 1 server", "0 µs", "", none)
	tb.add("no interceptor, 1 session: p50", "1 ms", "", none)
	var out strings.Builder
	tb.writeChecks(&out)
	got := out.String()
	for _, bad := range []string{"Target", "Result", "|", "31%", "50%", "0 µs", "MISS", "PASS", "p50"} {
		if strings.Contains(got, bad) {
			t.Errorf("quick report has %q:\n%s", bad, got)
		}
	}
	for _, want := range []string{"ok  gateway, 1 session\n", "ok  launch to ready, 1 server\n", "No process left behind."} {
		if !strings.Contains(got, want) {
			t.Errorf("quick report lacks %q:\n%s", want, got)
		}
	}
}

func TestQuartiles(t *testing.T) {
	var ds []time.Duration
	for _, v := range []int{9, -3, 5, 1, 7, 3, 11, -1} { // sorted: -3 -1 1 3 5 7 9 11
		ds = append(ds, time.Duration(v)*time.Millisecond)
	}
	if q1, q3 := quartiles(ds); q1 != 1*time.Millisecond || q3 != 9*time.Millisecond {
		t.Errorf("quartiles = %v, %v; want 1ms, 9ms", q1, q3)
	}
	if q1, q3 := quartiles(ds[:1]); q1 != 9*time.Millisecond || q3 != q1 {
		t.Errorf("quartiles of one = %v, %v; want 9ms twice", q1, q3)
	}
	if ds[0] != 9*time.Millisecond {
		t.Error("quartiles sorted its argument in place")
	}
}

func TestFormatting(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{count(1234567), "1,234,567"},
		{count(999), "999"},
		{dur(150 * time.Microsecond), "150 µs"},
		{dur(2500 * time.Microsecond), "2.50 ms"},
		{dur(1500 * time.Millisecond), "1.50 s"},
		{mib(20 << 20), "20.0 MiB"},
		{plural(1, "server"), "1 server"},
		{plural(64, "server"), "64 servers"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestParseOptions(t *testing.T) {
	o, err := parseOptions([]string{"-quick"}, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	if o.calls >= 100_000 || o.duration >= 5*time.Second || o.only["profile"] || !o.only["calls"] || !o.only["launch"] || !o.only["interceptors"] ||
		o.reps != 1 || o.targetReps != 1 {
		t.Fatalf("-quick options not shrunk or parts wrong: %+v", o)
	}
	if o, err := parseOptions(nil, &strings.Builder{}); err != nil || o.reps != 7 || o.targetReps != 15 {
		t.Fatalf("default launch reps: %d, at the target %d (%v); want 7 and 15", o.reps, o.targetReps, err)
	}
	if _, err := parseOptions([]string{"-only", "profile"}, &strings.Builder{}); err == nil {
		t.Fatal("-only profile without -profile was accepted")
	}
	if _, err := parseOptions([]string{"-only", "nope"}, &strings.Builder{}); err == nil {
		t.Fatal("unknown part accepted")
	}
}
