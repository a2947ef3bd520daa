package endpoint

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// statelessGateway is an in-process gateway for the 2026-era fast path:
// server a with the tools the tests call and "who", server b with its own
// "who", which the gateway exports renamed (b_who).
func statelessGateway(t *testing.T) (url, token string, e *Endpoint) {
	t.Helper()
	return inProcessGatewayOf(t, testSettings(t, 0), io.Discard,
		fixtureSpec("a", fixture.Options{Name: "a", Tools: []string{"echo", "fail", "progress", "sample", "roots"}, ExtraTools: []string{"who"}}),
		fixtureSpec("b", fixture.Options{Name: "b", Tools: []string{fixture.NoTools}, ExtraTools: []string{"who"}}))
}

// statelessMessages sends one 2026-era POST (body, with the revision's
// headers for tool and the given overrides; an empty value drops a header)
// on client and returns the Content-Type and the JSON-RPC messages of the
// answer, as the bytes sent: the body of a JSON answer, each event's data
// of an SSE one.
func statelessMessages(t *testing.T, client *http.Client, url, token, body, tool string, header map[string]string) (int, string, [][]byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	h := map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json",
		"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": aggregate.StatelessRevision,
		"Mcp-Method": "tools/call", "Mcp-Name": tool}
	for k, v := range header {
		h[k] = v
	}
	for k, v := range h {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %.80s: %v", body, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	ct := resp.Header.Get("Content-Type")
	if !strings.HasPrefix(ct, "text/event-stream") {
		return resp.StatusCode, ct, [][]byte{bytes.TrimSpace(b)}
	}
	var msgs [][]byte
	for _, line := range strings.Split(string(b), "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok && strings.TrimSpace(d) != "" {
			msgs = append(msgs, []byte(strings.TrimSpace(d)))
		}
	}
	return resp.StatusCode, ct, msgs
}

// call2026 is a 2026-era tools/call of tool with args (JSON), caps (the
// declared capabilities) and extra members of params and of _meta.
func call2026(id, tool, args, caps, params, meta string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + params +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"` + aggregate.StatelessRevision + `","io.modelcontextprotocol/clientCapabilities":` + caps +
		`,"io.modelcontextprotocol/clientInfo":{"name":"fast26-test","version":"1"}` + meta + `}}}`
}

// TestStatelessFastPathTaken: a plain 2026-era tools/call is answered by
// the fast path as plain JSON (the counter moves, the SDK's handler would
// answer SSE), stamped for the revision, and the next one on the same
// connection by the lane; a call whose Mcp-Name header disagrees with the
// body is left to the SDK, which refuses it.
func TestStatelessFastPathTaken(t *testing.T) {
	url, token, e := statelessGateway(t)
	client := &http.Client{Timeout: 60 * time.Second}
	for i, id := range []string{"1", "2"} {
		before, lane := e.fast.stateless.Load(), e.lane.served.Load()
		_, ct, msgs := statelessMessages(t, client, url, token, call2026(id, "echo", `{"text":"hi"}`, `{"roots":{"listChanged":true}}`, "", ""), "echo", nil)
		want := `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"hi"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-gateway","version":"test"}}}}`
		if ct != "application/json" || len(msgs) != 1 || string(msgs[0]) != want {
			t.Fatalf("call %s: %s %q; want %s", id, ct, msgs, want)
		}
		if n := e.fast.stateless.Load(); n != before+1 {
			t.Errorf("call %s: fast-path 2026 calls %d -> %d, want one more", id, before, n)
		}
		if i == 1 && e.lane.served.Load() != lane+1 {
			t.Errorf("call %s on a kept connection: lane served %d -> %d, want one more", id, lane, e.lane.served.Load())
		}
	}
	before := e.fast.stateless.Load()
	_, _, msgs := statelessMessages(t, client, url, token, call2026("3", "echo", `{"text":"hi"}`, `{}`, "", ""), "echo", map[string]string{"Mcp-Name": "who"})
	if n := e.fast.stateless.Load(); n != before || len(msgs) != 1 || !bytes.Contains(msgs[0], []byte(`"code":-32020`)) {
		t.Errorf("Mcp-Name mismatch: fast-path calls %d -> %d, answer %q; want the SDK's -32020", before, n, msgs)
	}
}

// gatewayState matches a requestState the gateway minted: it names the
// pending call, which differs from one call to the next.
var gatewayState = regexp.MustCompile(`"requestState":"gw1\.[^"]*"`)

// TestStatelessDifferential: each request is sent twice to one gateway,
// once with the fast path on and once with every 2026-era request left to
// the SDK's stateless handler, and the JSON-RPC messages of the two
// answers must be the same bytes (the framing aside: the fast path answers
// plain JSON where it can), and taken by the path the case says.
func TestStatelessDifferential(t *testing.T) {
	url, token, e := statelessGateway(t)
	client := &http.Client{Timeout: 60 * time.Second}
	sampleCaps := `{"sampling":{}}`
	cases := []struct {
		name, tool, body string
		header           map[string]string
		fast             bool // taken by the fast path
		// retry, when set, is the body of the agent's retry after an
		// InputRequiredResult, with STATE for its requestState.
		retry string
	}{
		{name: "success", tool: "echo", body: call2026("1", "echo", `{"text":"differential"}`, `{}`, "", ""), fast: true},
		{name: "tool error", tool: "fail", body: call2026("2", "fail", `{"message":"it failed"}`, `{}`, "", ""), fast: true},
		{name: "unknown tool", tool: "nosuch", body: call2026("3", "nosuch", `{}`, `{}`, "", "")},
		{name: "renamed tool", tool: "b_who", body: call2026("4", "b_who", `{}`, `{}`, "", ""), fast: true},
		{name: "Mcp-Name mismatch", tool: "echo", body: call2026("5", "echo", `{"text":"x"}`, `{}`, "", ""), header: map[string]string{"Mcp-Name": "fail"}},
		{name: "Mcp-Method missing", tool: "echo", body: call2026("6", "echo", `{"text":"x"}`, `{}`, "", ""), header: map[string]string{"Mcp-Method": ""}},
		{name: "version header mismatch", tool: "echo", body: call2026("7", "echo", `{"text":"x"}`, `{}`, "", ""), header: map[string]string{"Mcp-Protocol-Version": "2025-11-25"}},
		{name: "capabilities not an object", tool: "echo", body: call2026("8", "echo", `{"text":"x"}`, `[]`, "", "")},
		{name: "progress", tool: "progress", body: call2026("9", "progress", `{"steps":3}`, `{}`, "", `,"progressToken":"tok-9"`), fast: true},
		{name: "input required (2025 server's sampling)", tool: "sample", body: call2026("10", "sample", `{"prompt":"q"}`, sampleCaps, "", ""), fast: true,
			retry: call2026("11", "sample", `{"prompt":"q"}`, sampleCaps, `,"inputResponses":{"sampling-1":{"role":"assistant","model":"m","content":{"type":"text","text":"42"}}},"requestState":STATE`, "")},
		{name: "input required (roots)", tool: "roots", body: call2026("12", "roots", `{}`, `{"roots":{}}`, "", ""), fast: true,
			retry: call2026("13", "roots", `{}`, `{"roots":{}}`, `,"inputResponses":{"roots-1":{"roots":[{"uri":"file:///tmp/r"}]}},"requestState":STATE`, "")},
		{name: "server's invalid params", tool: "echo", body: call2026("16", "echo", `null`, `{}`, "", ""), fast: true},
		{name: "roots not declared", tool: "roots", body: call2026("14", "roots", `{}`, `{}`, "", ""), fast: true},
		{name: "sampling not declared", tool: "sample", body: call2026("15", "sample", `{"prompt":"q"}`, `{}`, "", ""), fast: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got [2][][]byte
			var status [2]int
			for i, sdkOnly := range []bool{false, true} {
				e.fast.sdkOnly.Store(sdkOnly)
				before := e.fast.stateless.Load()
				var msgs [][]byte
				status[i], _, msgs = statelessMessages(t, client, url, token, c.body, c.tool, c.header)
				if took := e.fast.stateless.Load() != before; took != (c.fast && !sdkOnly) {
					t.Errorf("sdkOnly %v: taken by the fast path: %v, want %v", sdkOnly, took, c.fast && !sdkOnly)
				}
				if c.retry != "" {
					state := gatewayState.Find(msgs[len(msgs)-1])
					if state == nil {
						t.Fatalf("sdkOnly %v: no gateway requestState in %q", sdkOnly, msgs)
					}
					retry := strings.Replace(c.retry, `"requestState":STATE`, string(state), 1)
					_, _, final := statelessMessages(t, client, url, token, retry, c.tool, nil)
					msgs = append(msgs, final...)
				}
				for j := range msgs {
					msgs[j] = gatewayState.ReplaceAll(msgs[j], []byte(`"requestState":"STATE"`))
				}
				got[i] = msgs
			}
			e.fast.sdkOnly.Store(false)
			if status[0] != status[1] {
				t.Errorf("HTTP status: fast path %d, SDK path %d", status[0], status[1])
			}
			if len(got[0]) != len(got[1]) {
				t.Fatalf("fast path sent %d messages, the SDK path %d:\nfast: %q\nSDK:  %q", len(got[0]), len(got[1]), got[0], got[1])
			}
			for j := range got[0] {
				if !bytes.Equal(got[0][j], got[1][j]) {
					t.Errorf("message %d differs:\nfast: %s\nSDK:  %s", j, got[0][j], got[1][j])
				}
			}
			t.Logf("%q", got[0])
		})
	}
}
