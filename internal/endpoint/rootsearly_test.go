package endpoint

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestRootsAskedBeforeTheStreamOpens checks what a server gets when it asks
// for roots outside any call in the moment between an agent's initialize
// and the opening of its standalone stream (the only place such a request
// can reach an HTTP agent): the agent's roots, asked once the stream opens,
// not an empty list at once.
//
// That moment was the cause of the intermittent "1 root(s)" / "0 root(s)"
// difference of TestDifferentialEverything's http mode (step "server
// requests after initialize"): server-everything asks for roots on its own
// 350 ms after its start; when the agent arrived within that delay (a
// loaded machine delays the server's timer and the gateway's readiness
// alike), the server's own request landed in this moment, was answered
// with no roots, and the server's log of 0 roots reached the agent before
// the "1 root(s)" it logged when the gateway, seeing the stream open, told
// it the roots changed. A direct server, which waits for the client's
// answer, logs 1 root.
func TestRootsAskedBeforeTheStreamOpens(t *testing.T) {
	logs := &syncBuffer{}
	url, token, _ := inProcessGatewayOf(t, testSettings(t, 0), logs, fixtureSpec("a", fixture.Options{Name: "a", AskRoots: true}))
	s := newRawSessionWith(t, url, token, `{"roots":{"listChanged":true}}`)
	// Initialized, no standalone stream: an agent a moment after its
	// initialize. Its roots change makes the server ask (fixture.AskRoots).
	if status, _, _ := s.post(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`); status != http.StatusAccepted {
		t.Fatalf("notifications/roots/list_changed: HTTP %d", status)
	}
	const waiting = "roots/list waits for the agent's standalone stream"
	waitFor(t, 30*time.Second, "the server's roots/list to wait for the stream or be answered", func() bool {
		l := logs.String()
		return strings.Contains(l, waiting) || strings.Contains(l, "fixture: roots now [")
	})
	if strings.Contains(logs.String(), "fixture: roots now []") {
		t.Fatalf("the server got no roots from an agent with roots whose stream was about to open:\n%s", logs)
	}
	// Once the stream is open, the waiting request is asked on it, and so
	// is the one the server makes when the gateway tells it that an agent
	// with roots can now be asked: two answers, both with the agent's root.
	asked := s.answerRootsOnStream(`[{"uri":"file:///early","name":"early"}]`)
	waitFor(t, 30*time.Second, "both of the server's roots/list to be answered", func() bool {
		return strings.Count(logs.String(), "fixture: roots now [") >= 2
	})
	if l := logs.String(); strings.Count(l, "fixture: roots now [file:///early]") != strings.Count(l, "fixture: roots now [") {
		t.Errorf("the server got other roots than the agent's:\n%s", l)
	}
	if n := asked(); n < 2 {
		t.Errorf("%d roots/list reached the agent's standalone stream, want 2", n)
	}
}

// answerRootsOnStream opens the session's standalone (GET) stream and
// answers every roots/list request that comes on it with roots, until the
// test ends. It returns once the stream is open; the function it returns
// counts the requests answered so far.
func (s *rawSession) answerRootsOnStream(roots string) (asked func() int) {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		cancel()
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", s.id)
	req.Header.Set("Mcp-Protocol-Version", s.protocol())
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		cancel()
		s.t.Fatalf("GET stream: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		s.t.Fatalf("GET stream: HTTP %d", resp.StatusCode)
	}
	answered := make(chan int, 1)
	answered <- 0
	done := make(chan struct{})
	s.t.Cleanup(func() {
		cancel()
		<-done
	})
	go func() {
		defer close(done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal([]byte(data), &m) != nil || m.Method != "roots/list" || m.ID == nil {
				continue
			}
			if err := s.postQuiet(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"roots":%s}}`, m.ID, roots)); err != nil {
				return
			}
			answered <- <-answered + 1
		}
	}()
	return func() int {
		n := <-answered
		answered <- n
		return n
	}
}

// postQuiet posts body on the session from any goroutine, and returns an
// error instead of failing the test.
func (s *rawSession) postQuiet(body string) error {
	req, err := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", s.id)
	req.Header.Set("Mcp-Protocol-Version", s.protocol())
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}
