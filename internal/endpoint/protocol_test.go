package endpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// rpcReply is one JSON-RPC response as the gateway sent it.
type rpcReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// rawSession speaks MCP over plain HTTP POSTs, so that tests can send what
// no SDK client would.
type rawSession struct {
	t      testing.TB
	url    string
	token  string
	id     string // Mcp-Session-Id once initialized
	client *http.Client
	// version is the protocol version asked for at initialize and sent
	// as Mcp-Protocol-Version (2025-11-25 unless set).
	version string
}

func newRawSession(t testing.TB, url, token string) *rawSession {
	t.Helper()
	return newRawSessionWith(t, url, token, `{}`)
}

// newRawSessionWith initializes a raw session whose client declares caps.
func newRawSessionWith(t testing.TB, url, token, caps string) *rawSession {
	t.Helper()
	return newRawSessionAt(t, url, token, "2025-11-25", caps)
}

// newRawSessionAt initializes a raw session of protocol version whose
// client declares caps.
func newRawSessionAt(t testing.TB, url, token, version, caps string) *rawSession {
	t.Helper()
	s := &rawSession{t: t, url: url, token: token, client: &http.Client{Timeout: 60 * time.Second}, version: version}
	status, h, replies := s.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":` + caps + `,"clientInfo":{"name":"raw","version":"1"}}}`)
	if status != http.StatusOK || len(replies) != 1 || replies[0].Error != nil || h.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: %d %+v", status, replies)
	}
	s.id = h.Get("Mcp-Session-Id")
	if status, _, _ := s.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d", status)
	}
	return s
}

// result posts body, a request that must succeed, and returns its result.
func (s *rawSession) result(body string) json.RawMessage {
	s.t.Helper()
	status, _, replies := s.post(body)
	if status != http.StatusOK || len(replies) != 1 || replies[0].Error != nil {
		s.t.Fatalf("%s: %d %+v", body, status, replies)
	}
	return replies[0].Result
}

// post sends body and returns the status, the headers and the JSON-RPC
// responses, from a JSON body or an SSE stream.
func (s *rawSession) post(body string) (int, http.Header, []rpcReply) {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("Mcp-Protocol-Version", s.protocol())
	}
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatalf("POST %.60s: %v", body, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, parseReplies(s.t, resp.Header.Get("Content-Type"), b)
}

// postEvents sends body and returns the status, the headers and each
// message of the response as sent: the JSON body, or each SSE event's data.
func (s *rawSession) postEvents(body string) (int, http.Header, []string) {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", s.id)
	req.Header.Set("Mcp-Protocol-Version", s.protocol())
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatalf("POST %.60s: %v", body, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp.StatusCode, resp.Header, []string{strings.TrimSpace(string(b))}
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			out = append(out, data)
		}
	}
	return resp.StatusCode, resp.Header, out
}

// protocol is the session's Mcp-Protocol-Version.
func (s *rawSession) protocol() string {
	if s.version == "" {
		return "2025-11-25"
	}
	return s.version
}

func parseReplies(t testing.TB, contentType string, b []byte) []rpcReply {
	t.Helper()
	var out []rpcReply
	decode := func(data []byte) {
		var r rpcReply
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatalf("response is not JSON-RPC: %q: %v", data, err)
		}
		out = append(out, r)
	}
	switch {
	case strings.HasPrefix(contentType, "application/json"):
		decode(b)
	case strings.HasPrefix(contentType, "text/event-stream"):
		for _, line := range strings.Split(string(b), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				decode([]byte(data))
			}
		}
	}
	return out
}

// echo calls the echo tool on the session and fails unless it answers.
func (s *rawSession) echo(text string) {
	s.t.Helper()
	args, _ := json.Marshal(map[string]string{"text": text})
	status, _, replies := s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":"echo-%s","method":"tools/call","params":{"name":"echo","arguments":%s}}`, text, args))
	if status != http.StatusOK || len(replies) != 1 || replies[0].Error != nil || !bytes.Contains(replies[0].Result, []byte(text)) {
		s.t.Fatalf("echo %q after an error: %d %+v", text, status, replies)
	}
}

// TestProtocolErrors sends malformed and wrong JSON-RPC over a live session
// and checks each answer's HTTP status, JSON-RPC code and id, and that the
// session and the gateway keep serving after each.
func TestProtocolErrors(t *testing.T) {
	url, token, _ := inProcessGatewayOf(t, testSettings(t, 16), io.Discard, fixtureSpec("a", fixture.Options{Tools: []string{"echo"}}))
	s := newRawSession(t, url, token)
	const (
		parse    = -32700
		invalid  = -32600
		noMethod = -32601
		params   = -32602
	)
	for i, c := range []struct {
		name, body string
		status     int
		code       int64
		id         string // the id the error must carry
	}{
		{"truncated JSON", `{"jsonrpc":"2.0","id":1,"method":"ping"`, 400, parse, "null"},
		{"not JSON", `hello`, 400, parse, "null"},
		{"empty body", ``, 400, parse, "null"},
		{"a string", `"ping"`, 400, invalid, "null"},
		{"empty batch", `[]`, 400, invalid, "null"},
		{"batch of junk", `[1,2]`, 400, invalid, "null"},
		{"JSON-RPC 1.0", `{"jsonrpc":"1.0","id":2,"method":"ping"}`, 400, invalid, "null"},
		{"no version", `{"id":2,"method":"ping"}`, 400, invalid, "null"},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, 400, invalid, "null"},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, 400, invalid, "null"},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, 400, invalid, "null"},
		{"method not a string", `{"jsonrpc":"2.0","id":3,"method":7}`, 400, invalid, "3"},
		{"neither request nor response", `{"jsonrpc":"2.0","id":4}`, 400, invalid, "4"},
		{"request without id", `{"jsonrpc":"2.0","method":"tools/list"}`, 400, invalid, "null"},
		{"notification with id", `{"jsonrpc":"2.0","id":5,"method":"notifications/initialized"}`, 400, invalid, "5"},
		{"unknown method", `{"jsonrpc":"2.0","id":6,"method":"tools/frobnicate"}`, 400, noMethod, "6"},
		{"unknown method, string id", `{"jsonrpc":"2.0","id":"x-7","method":"nope"}`, 400, noMethod, `"x-7"`},
		{"missing params", `{"jsonrpc":"2.0","id":8,"method":"tools/call"}`, 400, params, "8"},
		{"params not an object", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":[1]}`, 200, params, "9"},
		{"unknown tool", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, 200, params, "10"},
		{"arguments an array", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"echo","arguments":[1]}}`, 200, params, "11"},
		{"arguments a string", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo","arguments":"x"}}`, 200, params, "12"},
		{"arguments a number", `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"echo","arguments":5}}`, 200, params, "13"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s.t = t
			status, h, replies := s.post(c.body)
			if status != c.status {
				t.Errorf("HTTP status %d, want %d", status, c.status)
			}
			if len(replies) != 1 || replies[0].Error == nil {
				t.Fatalf("want one JSON-RPC error (Content-Type %q), got %+v", h.Get("Content-Type"), replies)
			}
			r := replies[0]
			if r.Error.Code != c.code || string(r.ID) != c.id || r.Error.Message == "" {
				t.Errorf("got id %s code %d %q; want id %s code %d", r.ID, r.Error.Code, r.Error.Message, c.id, c.code)
			}
			s.echo(fmt.Sprint("still-here-", i))
		})
	}
	s.t = t
	// A response to a request the gateway never sent is accepted and
	// dropped, as the transport asks.
	if status, _, _ := s.post(`{"jsonrpc":"2.0","id":99,"result":{}}`); status != http.StatusAccepted {
		t.Errorf("stray response: HTTP %d, want 202", status)
	}
	// An unknown session is still the SDK's 404, which makes clients start
	// a new session (no JSON-RPC body: the Go client would not see a 404).
	bogus := *s
	bogus.id = "no-such-session"
	if status, _, _ := bogus.post(`{"jsonrpc":"2.0","id":1,"method":"ping"}`); status != http.StatusNotFound {
		t.Errorf("unknown session: HTTP %d, want 404", status)
	}
	s.echo("end")
	if code, h := health(t, url); code != http.StatusOK || h.Status != "ok" {
		t.Errorf("health after the errors: %d %s", code, h.Status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := connect(t, ctx, url, token)
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "sdk"}}); err != nil || text(t, res) != "sdk" {
		t.Errorf("a new SDK session after the errors: %v %v", res, err)
	}
	// Over the Go SDK client an error the gateway answers with a JSON-RPC
	// body fails that call only; the session goes on.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("unknown tool over the SDK: %v", err)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "again"}}); err != nil || text(t, res) != "again" {
		t.Errorf("SDK session after an error: %v %v", res, err)
	}
}

// TestSessionlessPOST: a POST without Mcp-Session-Id that is not an
// initialize request gets HTTP 400 with a JSON-RPC error -32000 carrying its
// id (null for what has none), as the transport spec asks and the
// TypeScript SDK's server does, and starts no session; initialize still
// does, and real clients still connect.
func TestSessionlessPOST(t *testing.T) {
	t.Parallel() // it waits out timers; the rest of the package need not wait
	url, token, e := inProcessGatewayOf(t, testSettings(t, 16), io.Discard, fixtureSpec("a", fixture.Options{Tools: []string{"echo"}}))
	noSession := &rawSession{t: t, url: url, token: token, client: &http.Client{Timeout: 30 * time.Second}}
	sessions := func() int {
		n := 0
		for range e.agg.Server().Sessions() {
			n++
		}
		return n
	}
	before := sessions()
	for _, c := range []struct{ name, body, id string }{
		{"tools/list", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "1"},
		{"tools/call", `{"jsonrpc":"2.0","id":"c-2","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`, `"c-2"`},
		{"ping", `{"jsonrpc":"2.0","id":3,"method":"ping"}`, "3"},
		{"server/discover", `{"jsonrpc":"2.0","id":4,"method":"server/discover","params":{}}`, "4"},
		{"unknown method", `{"jsonrpc":"2.0","id":5,"method":"tools/frobnicate"}`, "5"},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "null"},
		{"response", `{"jsonrpc":"2.0","id":6,"result":{}}`, "null"},
		{"batch", `[{"jsonrpc":"2.0","id":7,"method":"ping"}]`, "null"},
	} {
		t.Run(c.name, func(t *testing.T) {
			noSession.t = t
			status, h, replies := noSession.post(c.body)
			if status != http.StatusBadRequest || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
				t.Errorf("HTTP %d %q, want 400 application/json", status, h.Get("Content-Type"))
			}
			if len(replies) != 1 || replies[0].Error == nil {
				t.Fatalf("want one JSON-RPC error, got %+v", replies)
			}
			if r := replies[0]; r.Error.Code != -32000 || string(r.ID) != c.id || !strings.Contains(r.Error.Message, "Mcp-Session-Id") {
				t.Errorf("got id %s code %d %q; want id %s, code -32000 naming Mcp-Session-Id", r.ID, r.Error.Code, r.Error.Message, c.id)
			}
			if h.Get(sessionIDHeader) != "" {
				t.Errorf("the refusal carries a session id %q", h.Get(sessionIDHeader))
			}
		})
	}
	noSession.t = t
	if n := sessions(); n != before {
		t.Errorf("sessionless POSTs left %d sessions, had %d", n, before)
	}

	// A real client that skips initialize, the Go SDK's transport, fails
	// that call with the error (the SDK turns a 4xx with a JSON-RPC body
	// into the call's failure).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: fixture.Bearer(token, http.DefaultTransport)}}
	conn, err := tr.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	id, _ := jsonrpc.MakeID(float64(11))
	err = conn.Write(ctx, &jsonrpc.Request{ID: id, Method: "tools/list", Params: json.RawMessage(`{}`)})
	if err == nil || !strings.Contains(err.Error(), "Mcp-Session-Id header required") {
		t.Errorf("Go SDK transport, tools/list before initialize: %v, want the refusal", err)
	}

	// initialize still needs no session id, and clients connect as before
	// (the Go SDK client first tries server/discover without a session,
	// and falls back to initialize on its error).
	s := newRawSession(t, url, token)
	s.echo("raw")
	cs := connect(t, ctx, url, token)
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "sdk"}}); err != nil || text(t, res) != "sdk" {
		t.Errorf("Go SDK client after the refusals: %v %v", res, err)
	}
}

// TestEnvelopeReadsAsEncodingJSON: what checkEnvelope reads of a message
// (its method, whether its id is valid, whether logging/setLevel names a
// level) is what encoding/json reads, for plain strings and for escaped,
// non-ASCII and invalid ones alike.
func TestEnvelopeReadsAsEncodingJSON(t *testing.T) {
	for _, method := range []string{`"tools/call"`, `"tools\/call"`, `"tools\u002fcall"`, `"ツール"`, "\"bad\xff\"", `""`, `"a b~"`} {
		body := `{"jsonrpc":"2.0","id":1,"method":` + method + `}`
		msg, err := checkEnvelope([]byte(body))
		var want string
		if json.Unmarshal([]byte(method), &want) != nil {
			if err == nil {
				t.Errorf("method %s: accepted as %q, want refused as encoding/json refuses it", method, msg.Method)
			}
			continue
		}
		if err != nil || msg.Method != want {
			t.Errorf("method %s: %q %v, want %q", method, msg.Method, err, want)
		}
	}
	for _, id := range []string{`"x"`, `"a\"b"`, `"\u00e9"`, `"é"`, "\"bad\xff\"", `""`} {
		var s string
		valid := json.Unmarshal([]byte(id), &s) == nil
		if got := validID(json.RawMessage(id)); got != valid {
			t.Errorf("id %s: valid %v, encoding/json says %v", id, got, valid)
		}
	}
	for _, params := range []string{
		`{"level":"info"}`, `{"level":"loud"}`, `{"Level":"info"}`, `{"LEVEL":"loud"}`,
		`{"level":"info","level":"loud"}`, `{"level":"loud","level":"info"}`, `{"level":"\u0069nfo"}`,
		`{"level":5}`, `{"level":null}`, `{}`, `null`, `[]`, `{"level":"info"`, `{"other":1}`,
	} {
		var p struct {
			Level string `json:"level"`
		}
		refuse := json.Unmarshal([]byte(params), &p) == nil && !slices.Contains(logLevels(), p.Level)
		err := checkKept(&rpcMessage{Method: "logging/setLevel", Params: json.RawMessage(params)}, len(params))
		if (err != nil) != refuse {
			t.Errorf("logging/setLevel %s: refused %v (%v), want %v as encoding/json reads it", params, err != nil, err, refuse)
		}
	}
}
