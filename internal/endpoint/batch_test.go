package endpoint

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// batchGateway runs an in-process gateway with two fixtures that publish
// the same names (b's exported as b_...): "who" answering "<server>:who",
// and the verbatim items with params_seen.
func batchGateway(t *testing.T) (url, token string, g *Endpoint) {
	t.Helper()
	return inProcessGatewayOf(t, testSettings(t, 16), io.Discard,
		fixtureSpec("a", fixture.Options{Name: "a", Verbatim: true, ExtraTools: []string{"who"}}),
		fixtureSpec("b", fixture.Options{Name: "b", Verbatim: true, ExtraTools: []string{"who"}}))
}

// postBatch sends body on the session with client (the session's own when
// nil) and Mcp-Protocol-Version version, and returns the status, the
// headers and each message of the answer as sent: the elements of a JSON
// array, a JSON object, or each SSE event's data.
func postBatch(t *testing.T, s *rawSession, client *http.Client, version, body string) (int, http.Header, []json.RawMessage) {
	t.Helper()
	status, h, out, err := postBatchE(s, client, version, body)
	if err != nil {
		t.Fatalf("POST %.60s: %v", body, err)
	}
	return status, h, out
}

// postBatchE is postBatch for a goroutine of a test: it returns its error.
func postBatchE(s *rawSession, client *http.Client, version, body string) (int, http.Header, []json.RawMessage, error) {
	if client == nil {
		client = s.client
	}
	req, err := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", s.id)
	if version != "" {
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, nil, err
	}
	var out []json.RawMessage
	switch ct := resp.Header.Get("Content-Type"); {
	case strings.HasPrefix(ct, "text/event-stream"):
		for _, line := range strings.Split(string(b), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				out = append(out, json.RawMessage(data))
			}
		}
	case bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")):
		if err := json.Unmarshal(b, &out); err != nil {
			return 0, nil, nil, fmt.Errorf("answer %q: %w", b, err)
		}
	case len(bytes.TrimSpace(b)) > 0:
		out = append(out, json.RawMessage(bytes.TrimSpace(b)))
	}
	return resp.StatusCode, resp.Header, out, nil
}

// replyOf decodes one message of an answer.
func replyOf(t *testing.T, raw json.RawMessage) rpcReply {
	t.Helper()
	var r rpcReply
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("not a JSON-RPC response: %s: %v", raw, err)
	}
	return r
}

// rawMember returns the bytes of member ("result" or "error") of a
// JSON-RPC response as sent.
func rawMember(t *testing.T, raw json.RawMessage, member string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return string(m[member])
}

// TestBatchOnFastPath: a batch of requests the fast path takes (protocol
// 2025-03-26) is answered with one JSON array in the batch's order: two
// tools/calls to two servers, a prompts/get, a resources/read that the
// server fails, and tools/list, each answered with the bytes its server
// sent (the same bytes a single request gets), its params reaching the
// server byte for byte, and the error as the single request's. The same
// batch sent again on a connection the lane took over is answered with
// the same bytes.
func TestBatchOnFastPath(t *testing.T) {
	url, token, g := batchGateway(t)
	s := newRawSessionAt(t, url, token, "2025-03-26", `{}`)
	// Until every server's prompts are named, requests about them wait on
	// the SDK's path.
	if status, _, r := s.post(`{"jsonrpc":"2.0","id":"l","method":"prompts/list"}`); status != http.StatusOK || len(r) != 1 || r[0].Error != nil {
		t.Fatalf("prompts/list: %d %+v", status, r)
	}
	const (
		verbatimParams = `{"zeta":1,"name":"b_verbatim","arguments":{"z":1,"a":2},"x-extra":[true]}`
		verbatimSeen   = `{"zeta":1,"name":"verbatim","arguments":{"z":1,"a":2},"x-extra":[true]}`
		promptParams   = `{"zeta":[3,1],"name":"verbatim","arguments":{"topic":"x"},"alpha":{"b":1,"a":2}}`
		readParams     = `{"uri":"fixture://no/such/resource"}`
	)
	// What each request gets alone.
	single := func(method, params string) json.RawMessage {
		t.Helper()
		status, h, out := postBatch(t, s, nil, "2025-03-26", `{"jsonrpc":"2.0","id":"single","method":"`+method+`","params":`+params+`}`)
		if status != http.StatusOK || len(out) != 1 || h.Get("Content-Type") != "application/json" {
			t.Fatalf("%s alone: %d %s %s", method, status, h.Get("Content-Type"), out)
		}
		return out[0]
	}
	wantA := rawMember(t, single("tools/call", `{"name":"who","arguments":{}}`), "result")
	wantB := rawMember(t, single("tools/call", `{"name":"b_who","arguments":{}}`), "result")
	wantVerbatim := rawMember(t, single("tools/call", verbatimParams), "result")
	wantReadErr := rawMember(t, single("resources/read", readParams), "error")
	wantList := rawMember(t, single("tools/list", `{}`), "result")
	if wantReadErr == "" || !strings.Contains(wantA, "a:who") || !strings.Contains(wantB, "b:who") {
		t.Fatalf("single answers: %s %s %s", wantA, wantB, wantReadErr)
	}

	batch := `[` +
		`{"jsonrpc":"2.0","id":"w1","method":"tools/call","params":{"name":"who","arguments":{}}},` +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":` + verbatimParams + `},` +
		`{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":` + promptParams + `},` +
		`{"jsonrpc":"2.0","id":4,"method":"resources/read","params":` + readParams + `},` +
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"b_who","arguments":{}}},` +
		`{"jsonrpc":"2.0","id":6,"method":"tools/list"}` +
		`]`
	want := []struct{ id, member, raw string }{
		{`"w1"`, "result", wantA},
		{`2`, "result", wantVerbatim},
		{`3`, "result", fixture.VerbatimGetPromptJSON},
		{`4`, "error", wantReadErr},
		{`5`, "result", wantB},
		{`6`, "result", wantList},
	}
	check := func(name string, status int, h http.Header, out []json.RawMessage) {
		t.Helper()
		if status != http.StatusOK || h.Get("Content-Type") != "application/json" || len(out) != len(want) {
			t.Fatalf("%s: %d %q, %d answers %s; want 200, one JSON array of %d", name, status, h.Get("Content-Type"), len(out), out, len(want))
		}
		for i, w := range want {
			if r := replyOf(t, out[i]); string(r.ID) != w.id {
				t.Errorf("%s: answer %d has id %s, want %s (the batch's order)", name, i, r.ID, w.id)
			}
			if got := rawMember(t, out[i], w.member); got != w.raw {
				t.Errorf("%s: answer %d (%s): %s\n%s\nwant, as the server sent it:\n%s", name, i, w.id, w.member, got, w.raw)
			}
		}
	}

	// A new connection: net/http serves the batch, and the lane takes the
	// connection over.
	fresh := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{}}
	t.Cleanup(fresh.CloseIdleConnections)
	adopted := g.lane.adopted.Load()
	status, h, first := postBatch(t, s, fresh, "2025-03-26", batch)
	check("fresh connection", status, h, first)
	if g.lane.adopted.Load() == adopted {
		t.Errorf("the lane did not take over the connection of a batch answered on the fast path")
	}
	served := g.lane.served.Load()
	status, h, again := postBatch(t, s, fresh, "2025-03-26", batch)
	check("lane", status, h, again)
	if g.lane.served.Load() != served+1 {
		t.Errorf("the lane served %d requests, want the batch", g.lane.served.Load()-served)
	}
	if fmt.Sprint(first) != fmt.Sprint(again) {
		t.Errorf("net/http and the lane answer the same batch differently:\n%s\n%s", first, again)
	}

	// The params as sent, renamed only: the single call's, and one per
	// batch.
	seen := paramsSeen(t, s, "b_"+fixture.ParamsSeenTool, "tools/call")
	if n := countRaw(seen, verbatimSeen); n != 3 {
		t.Errorf("server b read %d tools/call params %s, want 3 (one single, one per batch); read: %s", n, verbatimSeen, seen)
	}
	prompts := paramsSeen(t, s, fixture.ParamsSeenTool, "prompts/get")
	if n := countRaw(prompts, promptParams); n != 2 {
		t.Errorf("server a read prompts/get params %s, want %s twice, as sent", prompts, promptParams)
	}
}

// countRaw counts the messages of seen that are want, byte for byte.
func countRaw(seen []json.RawMessage, want string) int {
	n := 0
	for _, p := range seen {
		if string(p) == want {
			n++
		}
	}
	return n
}

// TestBatchListsAsAlone: the lists and ping in a batch are answered on
// the fast path, each with the bytes the same request gets alone (a page
// past the first too); a batch holding one the single request leaves to
// the SDK (an invalid cursor, params the SDK would not decode or that may
// name the sessionless protocol) is the SDK's whole, as that request is.
func TestBatchListsAsAlone(t *testing.T) {
	set := testSettings(t, 16)
	set.PageSize = 2
	url, token, _ := inProcessGatewayOf(t, set, io.Discard,
		fixtureSpec("a", fixture.Options{Name: "a", Verbatim: true, ExtraTools: []string{"who"}}),
		fixtureSpec("b", fixture.Options{Name: "b", Verbatim: true, ExtraTools: []string{"who"}}))
	s := newRawSessionAt(t, url, token, "2025-03-26", `{}`)
	// Until every server's prompts are named, requests about them wait on
	// the SDK's path.
	if status, _, r := s.post(`{"jsonrpc":"2.0","id":"l","method":"prompts/list"}`); status != http.StatusOK || len(r) != 1 || r[0].Error != nil {
		t.Fatalf("prompts/list: %d %+v", status, r)
	}
	request := func(id, method, params string) string {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q`, id, method)
		if params != "" {
			body += `,"params":` + params
		}
		return body + "}"
	}
	// alone is the answer to a request sent alone, and whether it came on
	// the fast path (plain JSON; the SDK answers on an SSE stream).
	alone := func(method, params string) (json.RawMessage, bool) {
		t.Helper()
		status, h, out := postBatch(t, s, nil, "2025-03-26", request(`"alone"`, method, params))
		if status != http.StatusOK || len(out) != 1 {
			t.Fatalf("%s %s alone: %d %s", method, params, status, out)
		}
		return out[0], h.Get("Content-Type") == "application/json"
	}
	var second string // a cursor of prompts/list's second page
	if first, _ := alone("prompts/list", `{}`); true {
		var r struct {
			Result struct {
				NextCursor string `json:"nextCursor"`
			} `json:"result"`
		}
		if err := json.Unmarshal(first, &r); err != nil || r.Result.NextCursor == "" {
			t.Fatalf("prompts/list's first page: %s (%v), want a nextCursor", first, err)
		}
		second = fmt.Sprintf(`{"cursor":%q}`, r.Result.NextCursor)
	}

	taken := []struct{ method, params string }{
		{"tools/list", ``},
		{"tools/list", `{"_meta":{"x":1}}`},
		{"tools/list", `{"Cursor":"x"}`}, // the SDK matches member names exactly: the first page
		{"prompts/list", `{}`},
		{"prompts/list", second},
		{"resources/list", `null`},
		{"resources/templates/list", `{}`},
		{"ping", ``},
		{"ping", `{}`},
	}
	batch := `[{"jsonrpc":"2.0","id":"who","method":"tools/call","params":{"name":"who","arguments":{}}}`
	var want []string
	for i, c := range taken {
		raw, fast := alone(c.method, c.params)
		if !fast {
			t.Fatalf("%s %s alone: not on the fast path: %s", c.method, c.params, raw)
		}
		want = append(want, rawMember(t, raw, "result"))
		batch += "," + request(fmt.Sprint(i), c.method, c.params)
	}
	batch += "]"
	status, h, out := postBatch(t, s, nil, "2025-03-26", batch)
	if status != http.StatusOK || h.Get("Content-Type") != "application/json" || len(out) != len(taken)+1 {
		t.Fatalf("batch of lists: %d %q, %d answers %s; want 200 and the fast path's JSON array of %d", status, h.Get("Content-Type"), len(out), out, len(taken)+1)
	}
	if r := replyOf(t, out[0]); string(r.ID) != `"who"` || !strings.Contains(string(r.Result), "a:who") {
		t.Errorf("batch of lists: the call answered %s", out[0])
	}
	for i, c := range taken {
		if r := replyOf(t, out[i+1]); string(r.ID) != fmt.Sprint(i) {
			t.Errorf("%s %s: answer %d has id %s, want %d (the batch's order)", c.method, c.params, i+1, r.ID, i)
		}
		if got := rawMember(t, out[i+1], "result"); got != want[i] {
			t.Errorf("%s %s in a batch:\n%s\nwant, as alone:\n%s", c.method, c.params, got, want[i])
		}
	}

	// What the single path declines sends the whole batch to the SDK.
	for _, c := range []struct{ method, params string }{
		{"prompts/list", `{"cursor":"!!"}`},
		{"resources/templates/list", `{"cursor":7}`},
		{"tools/list", `{"protocolVersion":"2025-03-26"}`},
		{"resources/list", `{"cursor":"\u0041"}`},
		{"ping", `[]`},
	} {
		if raw, fast := alone(c.method, c.params); fast {
			t.Errorf("%s %s alone: answered on the fast path (%s); the case tests nothing", c.method, c.params, raw)
			continue
		}
		batch := `[` + request(`"who"`, "tools/call", `{"name":"who","arguments":{}}`) + "," + request(`"l"`, c.method, c.params) + `]`
		status, h, out := postBatch(t, s, nil, "2025-03-26", batch)
		if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") || len(out) != 2 {
			t.Errorf("batch with %s %s: %d %q %s; want the SDK's SSE answer with 2 responses", c.method, c.params, status, h.Get("Content-Type"), out)
		}
	}
}

// TestBatchCancels: a batch of notifications only (a cancellation of a
// fast-path call in flight) is answered 202, and the call it names ends
// without an answer; a request of a batch that the agent cancels is left
// out of the batch's answer.
func TestBatchCancels(t *testing.T) {
	url, token, g := batchGateway(t)
	s := newRawSessionAt(t, url, token, "2025-03-26", `{}`)
	if status, _, r := s.post(`{"jsonrpc":"2.0","id":"l","method":"prompts/list"}`); status != http.StatusOK || len(r) != 1 || r[0].Error != nil {
		t.Fatalf("prompts/list: %d %+v", status, r)
	}
	// The verbatim prompt with "wait" waits until it is cancelled.
	const wait = `{"jsonrpc":"2.0","id":%q,"method":"prompts/get","params":{"name":"verbatim","arguments":{"wait":"yes"}}}`
	inFlight := func(id string) {
		t.Helper()
		key := fastCallKey{s.id, `"` + id + `"`}
		waitFor(t, 10*time.Second, "call "+id+" in flight", func() bool {
			g.fast.mu.Lock()
			defer g.fast.mu.Unlock()
			_, ok := g.fast.calls[key]
			return ok
		})
	}
	done := make(chan batchAnswer, 1)
	go func() {
		status, h, out, err := postBatchE(s, &http.Client{Timeout: 60 * time.Second}, "2025-03-26", fmt.Sprintf(wait, "w"))
		done <- batchAnswer{status, h, out, err}
	}()
	inFlight("w")
	status, _, out := postBatch(t, s, nil, "2025-03-26", `[{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w","reason":"test"}}]`)
	if status != http.StatusAccepted || len(out) != 0 {
		t.Fatalf("batch of a cancellation: %d %s, want 202 and no body", status, out)
	}
	select {
	case a := <-done:
		if a.err != nil || a.status != http.StatusOK || len(a.out) != 0 {
			t.Errorf("the cancelled call: %d %s %v, want 200 and no answer", a.status, a.out, a.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call the batch cancelled is still running")
	}

	// A batch whose first request is cancelled while it runs: the other
	// request's answer alone.
	go func() {
		status, h, out, err := postBatchE(s, &http.Client{Timeout: 60 * time.Second}, "2025-03-26",
			`[`+fmt.Sprintf(wait, "w2")+`,{"jsonrpc":"2.0","id":"who","method":"tools/call","params":{"name":"who","arguments":{}}}]`)
		done <- batchAnswer{status, h, out, err}
	}()
	inFlight("w2")
	cancelLeavesWho(t, s, done, "w2", "a batch with a cancelled request")
}

// batchAnswer is a batch POST's outcome, from the goroutine that sent it.
type batchAnswer struct {
	status int
	h      http.Header
	out    []json.RawMessage
	err    error
}

// cancelLeavesWho cancels the batch call id and checks that the batch,
// answered on done, answers with its "who" call's result alone, as JSON.
func cancelLeavesWho(t *testing.T, s *rawSession, done <-chan batchAnswer, id, what string) {
	t.Helper()
	if status, _, out := postBatch(t, s, nil, "2025-03-26", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"`+id+`"}}`); status != http.StatusAccepted {
		t.Fatalf("cancel: %d %s", status, out)
	}
	select {
	case a := <-done:
		if a.err != nil {
			t.Fatalf("%s: %v", what, a.err)
		}
		if a.status != http.StatusOK || a.h.Get("Content-Type") != "application/json" || len(a.out) != 1 ||
			string(replyOf(t, a.out[0]).ID) != `"who"` || !strings.Contains(rawMember(t, a.out[0], "result"), "a:who") {
			t.Errorf("%s: %d %q %s, want the other call's answer alone, as JSON", what, a.status, a.h.Get("Content-Type"), a.out)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: still running after its call %s was cancelled", what, id)
	}
}

// TestBatchLeftToSDK: a batch holding anything the fast path would not
// answer alone, or whose answers could need a stream, is the SDK's whole,
// as before: answered on an SSE stream, every request answered.
func TestBatchLeftToSDK(t *testing.T) {
	url, token, _ := batchGateway(t)
	s := newRawSessionAt(t, url, token, "2025-03-26", `{}`)
	who := `{"jsonrpc":"2.0","id":"who","method":"tools/call","params":{"name":"who","arguments":{}}}`
	for _, c := range []struct {
		name, batch string
		answers     int
	}{
		{"a ping the SDK refuses", `[` + who + `,{"jsonrpc":"2.0","id":"p","method":"ping","params":[]}]`, 2},
		{"an unknown tool", `[` + who + `,{"jsonrpc":"2.0","id":"u","method":"tools/call","params":{"name":"nope","arguments":{}}}]`, 2},
		{"a progress token", `[` + who + `,{"jsonrpc":"2.0","id":"t","method":"tools/call","params":{"name":"b_who","arguments":{},"_meta":{"progressToken":1}}}]`, 2},
		{"a notification the SDK owns", `[` + who + `,{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}]`, 1},
		{"a cancellation of nothing in flight", `[` + who + `,{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"gone"}}]`, 1},
	} {
		status, h, out := postBatch(t, s, nil, "2025-03-26", c.batch)
		if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") || len(out) != c.answers {
			t.Errorf("batch with %s: %d %q %s; want the SDK's SSE answer with %d responses", c.name, status, h.Get("Content-Type"), out, c.answers)
			continue
		}
		for _, raw := range out {
			if r := replyOf(t, raw); string(r.ID) == `"who"` && (r.Error != nil || !strings.Contains(string(r.Result), "a:who")) {
				t.Errorf("batch with %s: who answered %s", c.name, raw)
			}
		}
	}

	// A client that offers sampling: the server may ask it something
	// during any call, on the call's stream.
	sampling := newRawSessionAt(t, url, token, "2025-03-26", `{"sampling":{}}`)
	status, h, out := postBatch(t, sampling, nil, "2025-03-26", `[`+who+`]`)
	if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") || len(out) != 1 {
		t.Errorf("batch of a client with sampling: %d %q %s; want the SDK's SSE answer", status, h.Get("Content-Type"), out)
	}
}

// TestBatchProtocolVersions: batches are the fast path's only where the
// SDK takes them: a 2024-11-05 session's too, with or without
// Mcp-Protocol-Version; a request that says 2025-06-18 on a 2025-03-26
// session gets the SDK's refusal, and a 2025-06-18 session the gateway's.
func TestBatchProtocolVersions(t *testing.T) {
	url, token, _ := batchGateway(t)
	who := `[{"jsonrpc":"2.0","id":"who","method":"tools/call","params":{"name":"who","arguments":{}}}]`
	old := newRawSessionAt(t, url, token, "2024-11-05", `{}`)
	for _, header := range []string{"2024-11-05", ""} {
		status, h, out := postBatch(t, old, nil, header, who)
		if status != http.StatusOK || h.Get("Content-Type") != "application/json" || len(out) != 1 || !strings.Contains(string(out[0]), "a:who") {
			t.Errorf("2024-11-05 session, Mcp-Protocol-Version %q: %d %q %s; want the fast path's JSON array", header, status, h.Get("Content-Type"), out)
		}
	}
	s := newRawSessionAt(t, url, token, "2025-03-26", `{}`)
	status, _, out := postBatch(t, s, nil, "2025-06-18", who)
	if status != http.StatusBadRequest || len(out) != 1 {
		t.Fatalf("batch saying 2025-06-18: %d %s, want the SDK's 400", status, out)
	}
	if r := replyOf(t, out[0]); r.Error == nil || r.Error.Code != -32600 || !strings.Contains(r.Error.Message, "batching is not supported in 2025-06-18") {
		t.Errorf("batch saying 2025-06-18: %s, want the SDK's refusal as a -32600 error", out[0])
	}
	newer := newRawSessionAt(t, url, token, "2025-06-18", `{}`)
	status, _, out = postBatch(t, newer, nil, "2025-06-18", who)
	if status != http.StatusBadRequest || len(out) != 1 || !strings.Contains(string(out[0]), "not part of protocol 2025-06-18") {
		t.Errorf("batch on a 2025-06-18 session: %d %s, want 400 naming the protocol", status, out)
	}
}

// TestRouteAgreesWithTheFastPath: what aggregate.Route says of a request
// without a stream, before anything is sent, is what the fast path does: a
// request that routes is answered alone by the fast path (plain JSON),
// one that does not by the SDK (but for a progress token, which the single
// fast path streams and a batch cannot). A batch relies on it to be
// answered by one path whole: one that routes is the fast path's and its
// request is sent, never answered "nothing was sent".
func TestRouteAgreesWithTheFastPath(t *testing.T) {
	url, token, g := batchGateway(t)
	s := newRawSession(t, url, token)
	if status, _, r := s.post(`{"jsonrpc":"2.0","id":"l","method":"prompts/list"}`); status != http.StatusOK || len(r) != 1 || r[0].Error != nil {
		t.Fatalf("prompts/list: %d %+v", status, r)
	}
	old := newRawSessionAt(t, url, token, "2025-03-26", `{}`) // a version with batches
	for _, c := range []struct {
		method, params string
		routes         bool
	}{
		{"tools/call", `{"name":"who","arguments":{}}`, true},
		{"tools/call", `{"name":"b_who"}`, true},
		{"tools/call", `{"name":"who","arguments":null,"x":[1]}`, true},
		{"tools/call", `{"name":"nope","arguments":{}}`, false},
		{"tools/call", `{"name":"who","arguments":[1]}`, false},
		{"tools/call", `{"name":5}`, false},
		{"tools/call", `{"name":"who","_meta":"x"}`, false},
		{"tools/call", `{"name":"who","_meta":{"progressToken":null}}`, true}, // no token
		{"tools/call", `[]`, false},
		{"tools/call", `{"name":"who","_meta":{"progressToken":1}}`, false},      // needs a stream
		{"tools/call", `{"name":"who","_meta":{"progress\u0054oken":1}}`, false}, // the same, escaped
		{"tools/call", `{"name":"who"} x`, false},
		{"prompts/get", `{"name":"verbatim"}`, true},
		{"prompts/get", `{"name":"nope"}`, false},
		{"prompts/get", `{"name":1}`, false},
		{"prompts/get", `{"name":"verbatim","_meta":{"progressToken":null}}`, true}, // no token
		{"prompts/get", `{"name":"verbatim","_meta":{"progressToken":"t"}}`, false},
		{"resources/read", `{"uri":"` + fixture.VerbatimResource + `"}`, true},
		{"resources/read", `{"uri":"fixture://no/such/resource"}`, true}, // tried on each server
		{"resources/read", `{"uri":""}`, false},
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"verbatim"},"argument":{"name":"topic","value":"a"}}`, true},
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"nope"},"argument":{"name":"topic","value":"a"}}`, false},
		{"completion/complete", `{"argument":{"name":"topic","value":"a"}}`, false},
		{"resources/subscribe", `{"uri":"` + fixture.VerbatimResource + `"}`, true},
		{"resources/unsubscribe", `{"uri":"` + fixture.VerbatimResource + `","x":1}`, true},
		{"resources/subscribe", `{"uri":""}`, false},
		{"resources/unsubscribe", `{"URI":"` + fixture.VerbatimResource + `"}`, false},
	} {
		if _, got := g.agg.Route(c.method, json.RawMessage(c.params), false); got != c.routes {
			t.Errorf("Route(%s %s) = %v, want %v", c.method, c.params, got, c.routes)
		}
		req := `{"jsonrpc":"2.0","id":1,"method":"` + c.method + `","params":` + c.params + `}`
		// Alone, a request with a progress token takes the fast path
		// with the call's stream; in a batch there is none (Route without a stream).
		streams := strings.Contains(c.params, `oken":1`) || strings.Contains(c.params, `oken":"t"`)
		status, h, _ := postBatch(t, s, nil, s.protocol(), req)
		if fast := status == http.StatusOK && h.Get("Content-Type") == "application/json"; fast != (c.routes || streams) {
			t.Errorf("%s %s alone: %d %q: on the fast path: %v, want %v", c.method, c.params, status, h.Get("Content-Type"), fast, c.routes || streams)
		}
		// In a batch: the fast path's whole when it routes, the SDK's
		// otherwise; never accepted and then not sent.
		status, h, out := postBatch(t, old, nil, old.protocol(), "["+req+"]")
		if fast := status == http.StatusOK && h.Get("Content-Type") == "application/json"; fast != c.routes || len(out) != 1 {
			t.Errorf("%s %s in a batch: %d %q %s: on the fast path: %v, want %v", c.method, c.params, status, h.Get("Content-Type"), out, fast, c.routes)
		} else if bytes.Contains(out[0], []byte("nothing was sent")) {
			t.Errorf("%s %s in a batch: %s: accepted, then not sent", c.method, c.params, out[0])
		}
	}
}

// TestBatchOfAnswers: the agent's answer to a server's request made during
// a fast-path call (sampling, on the call's own stream) may come in a
// batch: it is taken (202) and reaches the server, which ends the call.
func TestBatchOfAnswers(t *testing.T) {
	url, token, _ := inProcessGatewayOf(t, testSettings(t, 16), io.Discard, fixtureSpec("fx", fixture.Options{Tools: []string{"sample"}}))
	s := newRawSessionAt(t, url, token, "2025-03-26", `{"sampling":{}}`)
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(callBody(3, "sample", `{"prompt":"hello"}`, "")))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json",
		"Accept": "application/json, text/event-stream", "Mcp-Session-Id": s.id, "Mcp-Protocol-Version": "2025-03-26"} {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("sample: %s %q, want 200 and an SSE stream", resp.Status, ct)
	}
	br := bufio.NewReader(resp.Body)
	next := func() string {
		t.Helper()
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("read the call's stream: %v", err)
			}
			if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
				return data
			}
		}
	}
	var ask struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err := json.Unmarshal([]byte(next()), &ask); err != nil || ask.Method != "sampling/createMessage" {
		t.Fatalf("first event: %+v %v, want the server's sampling request", ask, err)
	}
	status, _, out := postBatch(t, s, nil, "2025-03-26", `[{"jsonrpc":"2.0","id":`+string(ask.ID)+`,"result":{"role":"assistant","content":{"type":"text","text":"hi there"},"model":"m"}}]`)
	if status != http.StatusAccepted || len(out) != 0 {
		t.Fatalf("the agent's answer in a batch: %d %s, want 202", status, out)
	}
	var res rpcReply
	if err := json.Unmarshal([]byte(next()), &res); err != nil || res.Error != nil || replyText(t, res) != "model said: hi there" {
		t.Fatalf("the call's result: %+v %v", res, err)
	}
}

// TestBatchOfTaskRequests: task requests (a task-augmented tools/call and
// tasks/*) in a batch are answered by the fast path, each as alone.
func TestBatchOfTaskRequests(t *testing.T) {
	url, token, _ := inProcessGatewayOf(t, testSettings(t, 0), io.Discard, fixtureSpec("a", fixture.Options{Name: "a", Tasks: true}))
	s := newRawSessionAt(t, url, token, "2025-03-26", `{}`)
	status, h, out := postBatch(t, s, nil, "2025-03-26", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"task_echo","arguments":{"n":7},"task":{"ttl":60000}}},`+
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"task_echo","arguments":{"n":8},"task":{"ttl":60000}}}]`)
	if status != http.StatusOK || h.Get("Content-Type") != "application/json" || len(out) != 2 {
		t.Fatalf("batch of two task-augmented calls: %d %q %s, want a JSON array of 2", status, h.Get("Content-Type"), out)
	}
	var ids []string
	for _, raw := range out {
		var created struct {
			Task struct {
				TaskID string `json:"taskId"`
			} `json:"task"`
		}
		if err := json.Unmarshal([]byte(rawMember(t, raw, "result")), &created); err != nil || created.Task.TaskID == "" {
			t.Fatalf("task created: %s", raw)
		}
		ids = append(ids, created.Task.TaskID)
	}
	status, h, out = postBatch(t, s, nil, "2025-03-26", `[{"jsonrpc":"2.0","id":"r1","method":"tasks/result","params":{"taskId":"`+ids[0]+`"}},`+
		`{"jsonrpc":"2.0","id":"r2","method":"tasks/result","params":{"taskId":"`+ids[1]+`"}},`+
		`{"jsonrpc":"2.0","id":"l","method":"tasks/list","params":{}}]`)
	if status != http.StatusOK || h.Get("Content-Type") != "application/json" || len(out) != 3 {
		t.Fatalf("batch of tasks/result and tasks/list: %d %q %s, want a JSON array of 3", status, h.Get("Content-Type"), out)
	}
	for i, want := range []string{`task result of a: {\"n\":7}`, `task result of a: {\"n\":8}`, `"taskId":"` + ids[1] + `"`} {
		if got := rawMember(t, out[i], "result"); !strings.Contains(got, want) {
			t.Errorf("answer %d: %s, want it to hold %s", i, out[i], want)
		}
	}
}

// TestBatchCallsRunTogether: the calls of a batch run at once, not one
// after another: a call that runs until it is cancelled (the verbatim
// prompt with "wait") does not hold up the call after it in the batch,
// whose server answers (its audit line is written) while the first is
// still in flight. An agent may well send such a pair and cancel the
// first once it has the second's answer in mind; run in order, the
// second would never start. The batch is the fast path's: it is answered
// as one JSON array.
func TestBatchCallsRunTogether(t *testing.T) {
	logs := &syncBuffer{}
	url, token, g := inProcessGatewayOf(t, testSettings(t, 16), logs,
		fixtureSpec("a", fixture.Options{Name: "a", Verbatim: true, ExtraTools: []string{"who"}}))
	s := newRawSessionAt(t, url, token, "2025-03-26", `{}`)
	if status, _, r := s.post(`{"jsonrpc":"2.0","id":"l","method":"prompts/list"}`); status != http.StatusOK || len(r) != 1 || r[0].Error != nil {
		t.Fatalf("prompts/list: %d %+v", status, r)
	}
	done := make(chan batchAnswer, 1)
	go func() {
		status, h, out, err := postBatchE(s, &http.Client{Timeout: 60 * time.Second}, "2025-03-26",
			`[{"jsonrpc":"2.0","id":"w","method":"prompts/get","params":{"name":"verbatim","arguments":{"wait":"yes"}}},`+
				`{"jsonrpc":"2.0","id":"who","method":"tools/call","params":{"name":"who","arguments":{}}}]`)
		done <- batchAnswer{status, h, out, err}
	}()
	waitFor(t, 10*time.Second, "the batch's second call answered while the first waits", func() bool {
		return strings.Contains(logs.String(), `"tool":"who"`)
	})
	g.fast.mu.Lock()
	_, waiting := g.fast.calls[fastCallKey{s.id, `"w"`}]
	g.fast.mu.Unlock()
	if !waiting {
		t.Fatal("the batch's first call is not in flight on the fast path")
	}
	cancelLeavesWho(t, s, done, "w", "the batch")
}
