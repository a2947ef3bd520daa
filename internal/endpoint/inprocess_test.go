package endpoint

import (
	"bytes"
	"context"
	"fmt"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// inFlight returns the number of POSTs being served for a session.
func (l *sessionLimit) inFlight(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if u, ok := l.seen[id]; ok {
		return u.active
	}
	return -1
}

func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// settle waits until the goroutine and fd counts are within slack of the
// baseline, and fails with a goroutine dump if they never get there.
func settle(t *testing.T, baseG, baseFD, slackG, slackFD int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		g, fd := runtime.NumGoroutine(), openFDs(t)
		if g <= baseG+slackG && fd <= baseFD+slackFD {
			t.Logf("goroutines %d (baseline %d), fds %d (baseline %d)", g, baseG, fd, baseFD)
			return
		}
		if time.Now().After(deadline) {
			var buf bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
			t.Fatalf("not back to baseline 30s after the sessions closed: goroutines %d (baseline %d), fds %d (baseline %d)\n%s",
				g, baseG, fd, baseFD, buf.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// steady returns the goroutine and fd counts once they stop changing, so
// that the baseline does not include the warm-up's goroutines on their way
// out.
func steady(t *testing.T) (goroutines, fds int) {
	t.Helper()
	g, fd := runtime.NumGoroutine(), openFDs(t)
	for range 100 {
		time.Sleep(100 * time.Millisecond)
		g2, fd2 := runtime.NumGoroutine(), openFDs(t)
		if g2 == g && fd2 == fd {
			break
		}
		g, fd = g2, fd2
	}
	return g, fd
}

// TestSessionChurnNoLeaks opens and closes 1,000 agent sessions, each making
// a call, and checks that the gateway's goroutines and open file
// descriptors come back to their baseline.
func TestSessionChurnNoLeaks(t *testing.T) {
	set := testSettings(t, DefaultMaxSessions)
	url, token, _ := inProcessGateway(t, set, io.Discard)
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: fixture.Bearer(token, tr)}
	client := mcp.NewClient(&mcp.Implementation{Name: "churn", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	session := func(i int) error {
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, legacySession())
		if err != nil {
			return fmt.Errorf("session %d: connect: %w", i, err)
		}
		defer cs.Close()
		text := fmt.Sprint("hello ", i)
		got, err := fixture.CallText(ctx, cs, "echo", map[string]any{"text": text})
		if err != nil || got != text {
			return fmt.Errorf("session %d: echo = %q, %v", i, got, err)
		}
		if err := cs.Close(); err != nil {
			// The client's DELETE gives up after 5s: the gateway took that
			// long to close the session.
			return fmt.Errorf("session %d: close: %w", i, err)
		}
		return nil
	}
	// Warm up, so that lazily started goroutines (HTTP keep-alive, the
	// runtime's) are part of the baseline.
	for i := range 20 {
		if err := session(i); err != nil {
			t.Fatal(err)
		}
	}
	tr.CloseIdleConnections()
	baseG, baseFD := steady(t)

	const total, workers = 1000, 4
	next := make(chan int)
	errs := make(chan error, total)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := session(i); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range total {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	tr.CloseIdleConnections()
	settle(t, baseG, baseFD, 10, 4)
}

// pingStatus sends a ping on session id and returns the HTTP status.
func pingStatus(t *testing.T, url, token, id string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":99,"method":"ping"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestSessionLimitSparesBusySessions: the session closed when a new one
// exceeds --max-sessions is the least recently used among those with no
// call in flight. A session waiting for a long tool call is in use, however
// long ago the call began; closing it would also wait for the call.
func TestSessionLimitSparesBusySessions(t *testing.T) {
	logs := &syncBuffer{}
	url, token, g := inProcessGateway(t, testSettings(t, 3), logs)
	hc := &http.Client{Transport: fixture.Bearer(token, http.DefaultTransport)}
	client := mcp.NewClient(&mcp.Implementation{Name: "busy", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	connect := func() *mcp.ClientSession {
		t.Helper()
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, legacySession())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	busy, idle, recent := connect(), connect(), connect()
	callCtx, stopCall := context.WithCancel(ctx)
	callDone := make(chan error, 1)
	go func() {
		_, err := busy.CallTool(callCtx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 600000}})
		callDone <- err
	}()
	waitFor(t, 30*time.Second, "the long call to reach the server", func() bool {
		return strings.Contains(logs.String(), "sleep started 600000ms")
	})
	// busy's call began first; idle and recent are used after it.
	for _, cs := range []*mcp.ClientSession{idle, recent} {
		if _, err := fixture.CallText(ctx, cs, "echo", map[string]any{"text": "x"}); err != nil {
			t.Fatal(err)
		}
	}
	// The client has its echo results; the server may still be finishing
	// those responses, and a session with a POST in flight is spared.
	waitFor(t, 20*time.Second, "the echo responses to finish", func() bool {
		return g.sessions.inFlight(idle.ID()) == 0 && g.sessions.inFlight(recent.ID()) == 0
	})
	newest := connect()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("busy=%s idle=%s recent=%s newest=%s", busy.ID(), idle.ID(), recent.ID(), newest.ID())
			for ss := range g.agg.Server().Sessions() {
				t.Logf("live: %s", ss.ID())
			}
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, "closing") || strings.Contains(l, "eviction") {
					t.Log(l)
				}
			}
		}
	})
	waitFor(t, 60*time.Second, "the idle session to be closed", func() bool {
		return pingStatus(t, url, token, idle.ID()) == http.StatusNotFound
	})
	for name, cs := range map[string]*mcp.ClientSession{"busy": busy, "recent": recent, "newest": newest} {
		if code := pingStatus(t, url, token, cs.ID()); code != http.StatusOK {
			t.Errorf("session %s: ping status %d, want 200", name, code)
		}
	}
	select {
	case err := <-callDone:
		t.Fatalf("the busy session's call ended: %v", err)
	default:
	}
	stopCall()
	<-callDone
}

// busyInSDK reports whether the SDK is handling a request of the session.
func (l *sessionLimit) busyInSDK(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ss, n := range l.inSDK {
		if ss.ID() == id && n > 0 {
			return true
		}
	}
	return false
}
