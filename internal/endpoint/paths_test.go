package endpoint

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// Tests of which path (fast path, lane, SDK) takes a request, each checked
// by the path's own counter (fastPath.forwarded, sdkCalls.served and
// tracked, the lane's served and handedBack), so that a change that moves
// the request elsewhere fails the test instead of leaving it nothing to
// test.

// TestBatchDuplicateIDLeftToSDK: a 2025-03-26 batch that uses one request
// id twice is not answered by the fast path (which would answer both, two
// responses with one id, that the client cannot tell apart): it is the
// SDK's whole, as a batch holding anything the fast path would not take.
func TestBatchDuplicateIDLeftToSDK(t *testing.T) {
	url, token, e := batchGateway(t)
	s := newRawSessionAt(t, url, token, "2025-03-26", `{}`)
	call := func(tool string) string {
		return `{"jsonrpc":"2.0","id":"same","method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
	}
	// The same batch with two ids is the fast path's: the case below
	// differs from it by the duplicate alone.
	sdk := e.sdk.served.Load()
	status, h, out := postBatch(t, s, nil, "2025-03-26", `[`+call("who")+`,`+strings.Replace(call("b_who"), `"same"`, `"other"`, 1)+`]`)
	if status != http.StatusOK || h.Get("Content-Type") != "application/json" || len(out) != 2 || e.sdk.served.Load() != sdk {
		t.Fatalf("batch of two ids: %d %q %s (SDK requests %d -> %d); want the fast path's JSON array", status, h.Get("Content-Type"), out, sdk, e.sdk.served.Load())
	}

	sdk = e.sdk.served.Load()
	status, h, out = postBatch(t, s, nil, "2025-03-26", `[`+call("who")+`,`+call("b_who")+`]`)
	if n := e.sdk.served.Load(); n != sdk+1 {
		t.Errorf("batch with a duplicate id: SDK requests %d -> %d, want it left to the SDK", sdk, n)
	}
	if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
		t.Errorf("batch with a duplicate id: %d %q %s; want the SDK's SSE answer", status, h.Get("Content-Type"), out)
	}
	results := 0
	for _, raw := range out {
		if r := replyOf(t, raw); string(r.ID) == `"same"` && r.Error == nil {
			results++
		}
	}
	if results > 1 {
		t.Errorf("batch with a duplicate id: %d results with that id: %s", results, out)
	}
}

// TestBodyAtLimitServed: a POST whose body is exactly the body limit is
// served, with its length announced (on a new connection and on one the
// lane holds) and chunked; one byte more is refused (TestLimits).
func TestBodyAtLimitServed(t *testing.T) {
	const maxBody = 16 << 10
	set := testSettings(t, 16)
	set.Limits = Limits{MaxBodyBytes: maxBody}
	url, token, e := inProcessGatewayOf(t, set, io.Discard, fixtureSpec("a", fixture.Options{Name: "a", Tools: []string{"echo"}, ExtraTools: []string{"who"}}))
	s := newRawSession(t, url, token)
	const tmpl = `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"%s"}}}`
	text := strings.Repeat("x", maxBody-len(fmt.Sprintf(tmpl, 1, "")))
	body := func(id int) string { return fmt.Sprintf(tmpl, id, text) }
	if n := len(body(1)); n != maxBody {
		t.Fatalf("body of %d bytes, want %d", n, maxBody)
	}
	for _, chunked := range []bool{false, true} {
		var r io.Reader = strings.NewReader(body(1))
		if chunked {
			r = io.MultiReader(r) // no length: sent chunked
		}
		req, _ := http.NewRequest(http.MethodPost, url, r)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", s.id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		replies := parseReplies(t, resp.Header.Get("Content-Type"), b)
		if resp.StatusCode != http.StatusOK || len(replies) != 1 || replies[0].Error != nil || replyText(t, replies[0]) != text {
			t.Errorf("chunked=%v: a body of exactly the limit: %d %.200s", chunked, resp.StatusCode, b)
		}
	}

	// On a connection the lane holds: served there, not handed back.
	w := dialWire(t, url)
	if got := w.call(token, s.id, 2, "who"); got != "a:who" {
		t.Fatalf("who: %q", got)
	}
	served, back := e.lane.served.Load(), e.lane.handedBack.Load()
	w.send(mcpPost(token, s.id, body(3)))
	resp, b := w.response()
	replies := parseReplies(t, resp.Header.Get("Content-Type"), b)
	if resp.StatusCode != http.StatusOK || len(replies) != 1 || replies[0].Error != nil || replyText(t, replies[0]) != text {
		t.Fatalf("lane: a body of exactly the limit: %d %.200s", resp.StatusCode, b)
	}
	if e.lane.served.Load() != served+1 || e.lane.handedBack.Load() != back {
		t.Errorf("lane: served %d -> %d, handed back %d -> %d; want it served on the lane",
			served, e.lane.served.Load(), back, e.lane.handedBack.Load())
	}
}

// TestAcceptRefusedAsSDK: a POST whose Accept names only application/json
// or only text/event-stream (or nothing) is refused as the SDK refuses it,
// (its status and message), whatever it carries (a call, a list, a batch) and on
// whichever connection (a new one, one the lane holds): the fast path,
// which can answer with JSON alone, must not answer it.
func TestAcceptRefusedAsSDK(t *testing.T) {
	url, token, e := batchGateway(t)
	s := newRawSession(t, url, token)
	old := newRawSessionAt(t, url, token, "2025-03-26", `{}`)
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		return mcp.NewServer(&mcp.Implementation{Name: "reference", Version: "1"}, nil)
	}, nil)
	who := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"who","arguments":{}}}`
	requests := []struct {
		name, body string
		sess       *rawSession
	}{
		{"tools/call", who, s},
		{"tools/list", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, s},
		{"batch", `[` + who + `]`, old},
	}
	for _, accept := range []string{"application/json", "text/event-stream", ""} {
		for _, c := range requests {
			name := fmt.Sprintf("Accept %q, %s", accept, c.name)
			header := func(h http.Header) {
				h.Set("Authorization", "Bearer "+token)
				h.Set("Content-Type", "application/json")
				if accept != "" {
					h.Set("Accept", accept)
				}
				h.Set("Mcp-Session-Id", c.sess.id)
				h.Set("Mcp-Protocol-Version", c.sess.protocol())
			}
			ref, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(c.body))
			header(ref.Header)
			rec := httptest.NewRecorder()
			sdk.ServeHTTP(rec, ref)
			if rec.Code < 400 {
				t.Fatalf("%s: the SDK answered %d: the case tests nothing", name, rec.Code)
			}

			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(c.body))
			header(req.Header)
			before := e.sdk.served.Load()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			// The gateway words the SDK's plain-text refusals as JSON-RPC
			// errors (sdkanswer.go): the SDK's status and message.
			var r rpcReply
			if resp.StatusCode != rec.Code || json.Unmarshal(b, &r) != nil || r.Error == nil ||
				r.Error.Message != strings.TrimSpace(rec.Body.String()) {
				t.Errorf("%s: %d %q, want the SDK's %d %q", name, resp.StatusCode, b, rec.Code, rec.Body.String())
			}
			if n := e.sdk.served.Load(); n != before+1 {
				t.Errorf("%s: SDK requests %d -> %d, want it left to the SDK", name, before, n)
			}
		}
	}

	// On a connection the lane holds: handed back, and refused so.
	w := dialWire(t, url)
	if got := w.call(token, s.id, 3, "who"); got != "a:who" {
		t.Fatalf("who: %q", got)
	}
	back := e.lane.handedBack.Load()
	raw := strings.Replace(mcpPost(token, s.id, who), "Accept: application/json, text/event-stream\r\n", "Accept: application/json\r\n", 1)
	w.send(raw)
	resp, b := w.response()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "Accept must contain both") {
		t.Errorf("lane, Accept application/json: %d %q, want the SDK's refusal", resp.StatusCode, b)
	}
	if e.lane.handedBack.Load() != back+1 {
		t.Errorf("lane: handed back %d -> %d, want the request handed back", back, e.lane.handedBack.Load())
	}
}
