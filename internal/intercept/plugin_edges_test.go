package intercept

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/pluginwire"
)

// The edges of the plugin runner that gremlins' surviving mutants showed
// untested (docs/mutation.md).

// logLines are the stderr lines a lineLog logged, from its JSON log.
func logLines(t *testing.T, log string) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		if l == "" {
			continue
		}
		var e struct{ Line string }
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, e.Line)
	}
	return out
}

// TestLineLog: a plugin's stderr is logged a line per entry, blank lines
// skipped; a last line without a newline is logged at flush; a line longer
// than 64 KiB is logged in pieces, the first once it passes 64 KiB.
func TestLineLog(t *testing.T) {
	buf := &fixture.Log{}
	w := &lineLog{log: zerolog.New(buf), msg: "plugin"}
	_, _ = w.Write([]byte("\nfirst\n  \n\tsecond  \nthi"))
	_, _ = w.Write([]byte("rd\n\nlast"))
	if got := logLines(t, buf.String()); strings.Join(got, "|") != "first|second|third" {
		t.Errorf("logged %q, want first, second, third (blank lines skipped, last line held)", got)
	}
	w.flush()
	if got := logLines(t, buf.String()); len(got) != 4 || got[3] != "last" {
		t.Errorf("after flush: %q, want the last line logged", got)
	}
	w.flush()
	_, _ = w.Write([]byte(" \t"))
	w.flush()
	if got := logLines(t, buf.String()); len(got) != 4 {
		t.Errorf("an empty or blank last line was logged: %q", got)
	}

	buf = &fixture.Log{}
	w = &lineLog{log: zerolog.New(buf), msg: "plugin"}
	_, _ = w.Write([]byte(strings.Repeat("a", 64<<10)))
	if got := logLines(t, buf.String()); len(got) != 0 {
		t.Errorf("a line of exactly 64 KiB without a newline was logged before it ended: %d entries", len(got))
	}
	_, _ = w.Write([]byte("b"))
	if got := logLines(t, buf.String()); len(got) != 1 || len(got[0]) != 64<<10+1 {
		t.Errorf("a line past 64 KiB: %d entries, want one of %d bytes", len(got), 64<<10+1)
	}
}

// TestPluginBackoff: no wait after a first failure, then 250 ms doubling
// per failure, at most 30 s.
func TestPluginBackoff(t *testing.T) {
	p := &pluginRunner{}
	for n, want := range map[int]time.Duration{1: 0, 2: pluginBackoffMin, 3: 2 * pluginBackoffMin, 5: 8 * pluginBackoffMin, 40: pluginBackoffMax} {
		p.failures = n - 1
		before := time.Now()
		p.failedLocked()
		after := time.Now()
		if want == 0 {
			if !p.retryAt.IsZero() {
				t.Errorf("after failure %d: retry at %v, want at once", n, p.retryAt)
			}
			continue
		}
		if p.retryAt.Before(before.Add(want)) || p.retryAt.After(after.Add(want)) {
			t.Errorf("after failure %d: retry %v after, want %v", n, p.retryAt.Sub(before), want)
		}
	}
}

// TestPluginSuccessResetsFailures: a call the running plugin answers ends
// its run of failures, so that its next crash restarts it at once.
func TestPluginSuccessResetsFailures(t *testing.T) {
	e := engine(t, pluginConfig(testPluginBin(t), ""), nil)
	_, _, _, err := e.Call(context.Background(), call("crash"), (&upstream{}).next)
	interceptorError(t, err, "plugin failed")
	pid(t, e) // restarted, and answered
	p := e.chain[0].run.(*pluginRunner)
	p.mu.Lock()
	failures := p.failures
	p.mu.Unlock()
	if failures != 0 {
		t.Errorf("%d failures counted after the restarted plugin answered, want 0", failures)
	}
	_, _, _, err = e.Call(context.Background(), call("crash"), (&upstream{}).next)
	interceptorError(t, err, "plugin failed")
	pid(t, e) // a second crash, not in a row: restarted at once
}

// TestEngineCloseEndsPlugins: Close ends the plugin's host process (and
// waits for it); hooks after it fail.
func TestEngineCloseEndsPlugins(t *testing.T) {
	e := engine(t, pluginConfig(testPluginBin(t), ""), nil)
	pid(t, e)
	p := e.chain[0].run.(*pluginRunner)
	p.mu.Lock()
	host := p.proc.pid
	p.mu.Unlock()
	e.Close()
	if alive(host) {
		t.Errorf("the plugin host %d runs after Close returned", host)
	}
	_, _, _, err := e.Call(context.Background(), call("pid"), (&upstream{}).next)
	interceptorError(t, err, "shutting down")
}

// TestPluginHostOnceFound: the host found when the config was parsed is
// the one started, without looking for it again (PATH may have changed).
func TestPluginHostOnceFound(t *testing.T) {
	cfg, err := Parse([]byte(pluginConfig(testPluginBin(t), "")))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	e := New(cfg, nil, Options{Environ: os.Environ()})
	t.Cleanup(e.Close)
	if err := e.Start(context.Background()); err != nil {
		t.Fatalf("start with the host found at parse time, PATH without it: %v", err)
	}
}

// TestFindHostNextToExecutable: the host installed next to the gateway's
// executable is found there, first, whatever PATH holds; a file there that
// is not executable, or a directory, is not taken.
func TestFindHostNextToExecutable(t *testing.T) {
	buildPlugins(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	next := filepath.Join(filepath.Dir(self), HostName)
	if _, err := os.Lstat(next); err == nil {
		t.Skipf("%s exists already", next)
	}
	host, err := os.ReadFile(filepath.Join(binDir, HostName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(next) })
	for _, c := range []struct {
		name  string
		make  func() error
		found bool
	}{
		{"not executable", func() error { return os.WriteFile(next, host, 0o644) }, false},
		{"a directory", func() error { return os.Mkdir(next, 0o755) }, false},
		{"executable", func() error { return os.WriteFile(next, host, 0o755) }, true},
	} {
		os.RemoveAll(next)
		if err := c.make(); err != nil {
			t.Skipf("cannot write next to the test binary: %v", err)
		}
		got, err := findHost() // PATH has the built host too
		if c.found && got != next {
			t.Errorf("%s: found %q, %v; want %s", c.name, got, err, next)
		}
		if !c.found && got == next {
			t.Errorf("%s next to the executable was taken", c.name)
		}
	}
	os.RemoveAll(next)
	t.Setenv("PATH", t.TempDir())
	if _, err := findHost(); err == nil || !strings.Contains(err.Error(), "in "+filepath.Dir(self)+" nor on PATH") {
		t.Errorf("no host anywhere: %v, want an error naming where it looked", err)
	}
}

// TestPluginCancelReachesPlugin: a call its caller cancels is cancelled at
// the plugin (which then writes $TESTPLUGIN_CANCELFILE).
func TestPluginCancelReachesPlugin(t *testing.T) {
	cancelled := filepath.Join(t.TempDir(), "cancelled")
	e := engine(t, pluginConfig(testPluginBin(t), `,"timeout":"60s"`), nil, "TESTPLUGIN_CANCELFILE="+cancelled)
	ctx, cancel := context.WithCancel(context.Background())
	hung := make(chan error, 1)
	go func() {
		_, _, _, err := e.Call(ctx, call("hang"), (&upstream{}).next)
		hung <- err
	}()
	p := e.chain[0].run.(*pluginRunner)
	for inFlight := 0; inFlight == 0; time.Sleep(10 * time.Millisecond) {
		p.mu.Lock()
		if h := p.proc; h != nil {
			h.pmu.Lock()
			inFlight = len(h.pending)
			h.pmu.Unlock()
		}
		p.mu.Unlock()
	}
	cancel()
	if err := <-hung; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(cancelled); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the plugin never saw the cancellation")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPluginHostLineTooLong: a host that writes a line longer than
// pluginwire.MaxLine (a broken host: the real one refuses such documents)
// is killed, and the call fails saying why. The host here is a script that
// says it is ready, then writes such a line and lingers.
func TestPluginHostLineTooLong(t *testing.T) {
	dir := t.TempDir()
	host := filepath.Join(dir, "host")
	script := "#!/bin/sh\necho '{\"ready\":true}'\nhead -c " + strconv.Itoa(pluginwire.MaxLine+1) + " /dev/zero | tr '\\0' a\necho\nexec sleep 60\n"
	if err := os.WriteFile(host, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p := newPlugin(Spec{Name: "tp", Path: "/bin/true"}, host, os.Environ(), zerolog.Nop())
	t.Cleanup(p.close)
	p.mu.Lock()
	h, err := p.getLocked()
	p.mu.Unlock()
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	_, err = p.handle(context.Background(), []byte(`{}`), time.Minute)
	if err == nil || !strings.Contains(err.Error(), "reading the plugin host") {
		t.Errorf("call to a host whose line is too long: %v, want an error saying the host could not be read", err)
	}
	select {
	case <-h.exited:
	case <-time.After(30 * time.Second):
		t.Error("the host that wrote a line too long was not killed")
	}
}
