package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// stdioLine is one message the stdio client read, with its bytes.
type stdioLine struct {
	raw    []byte
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// TestServeStdioRawPath drives ServeStdio over pipes with a hand-written
// line client against a real fixture server whose messages hold spaces
// after ':' and ',' (valid JSON an encoder would compact): the forwarded
// requests are answered with the server's bytes, notifications of a call
// come before its result as the server wrote them, a server's request
// during a call (elicitation) reaches the client and its answer gets back,
// and a cancelled call gets no answer.
func TestServeStdioRawPath(t *testing.T) {
	logs := &fixture.Log{}
	cfg := testConfig(t)
	cfg.Logger = zerolog.New(logs)
	g := New([]catalog.ServerSpec{fixtureSpec("fx", fixture.Options{Tools: []string{"echo", "progress", "sleep"}, Verbatim: true, Spaced: true})}, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := g.Start(ctx); err != nil {
		t.Fatalf("start: %v\nlog:\n%s", err, logs)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- g.ServeStdio(ctx, inR, outW)
		outW.Close()
	}()
	lines := make(chan stdioLine, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			l := stdioLine{raw: bytes.Clone(sc.Bytes())}
			if err := json.Unmarshal(l.raw, &l); err != nil {
				t.Errorf("stdout line is not JSON-RPC: %v: %s", err, l.raw)
				continue
			}
			lines <- l
		}
	}()
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next := func() stdioLine {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("stdout ended")
			}
			return l
		case <-ctx.Done():
			t.Fatal("no message from the gateway")
		}
		return stdioLine{}
	}
	// answer reads up to the response to id, returning the messages before it.
	answer := func(id string) (stdioLine, []stdioLine) {
		t.Helper()
		var before []stdioLine
		for {
			l := next()
			if string(l.ID) == id && l.Method == "" {
				return l, before
			}
			before = append(before, l)
		}
	}

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"line-client","version":"1"}}}`)
	if l, _ := answer("1"); l.Result == nil {
		t.Fatalf("initialize: %s", l.raw)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// The servers' prompts are named in the background after start; a
	// request before that is the SDK path's (it waits for them). Listing
	// them waits too.
	send(`{"jsonrpc":"2.0","id":10,"method":"prompts/list"}`)
	answer("10")

	// The result as the server wrote it (the SDK would compact it).
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"as sent"}}}`)
	l, _ := answer("2")
	if !bytes.Contains(l.Result, []byte(`"text": "as sent"`)) {
		t.Errorf("echo result not as the server wrote it: %s", l.raw)
	}
	// Params as sent: the verbatim tool answers with its arguments' bytes.
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"verbatim","arguments":{"zeta":"z","alpha":1,"x-extra":false}}}`)
	l, _ = answer("3")
	if !bytes.Contains(l.Result, []byte(`verbatim called with {\"zeta\":\"z\",\"alpha\":1,\"x-extra\":false}`)) {
		t.Errorf("verbatim tool saw other arguments: %s", l.raw)
	}
	// The other forwarded requests: the server's bytes too.
	send(`{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":"verbatim"}}`)
	if l, _ = answer("4"); string(l.Result) != spacedJSON(fixture.VerbatimGetPromptJSON) {
		t.Errorf("prompts/get result\n got %s\nwant %s", l.Result, spacedJSON(fixture.VerbatimGetPromptJSON))
	}
	send(`{"jsonrpc":"2.0","id":5,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"verbatim"},"argument":{"name":"topic","value":"a"}}}`)
	if l, _ = answer("5"); string(l.Result) != spacedJSON(fixture.VerbatimCompletionJSON) {
		t.Errorf("completion/complete result\n got %s\nwant %s", l.Result, spacedJSON(fixture.VerbatimCompletionJSON))
	}

	// Progress of a call, before its result, as the server wrote it (with
	// the client's token back).
	send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"progress","arguments":{"steps":3},"_meta":{"progressToken":"tok-6"}}}`)
	l, before := answer("6")
	if !bytes.Contains(l.Result, []byte(`"text": "done 3"`)) {
		t.Errorf("progress result: %s", l.raw)
	}
	var progress int
	for _, n := range before {
		if n.Method != "notifications/progress" {
			continue
		}
		progress++
		if !bytes.Contains(n.Params, []byte(`"progressToken":"tok-6"`)) && !bytes.Contains(n.Params, []byte(`"progressToken": "tok-6"`)) {
			t.Errorf("progress for another token: %s", n.raw)
		}
		if !bytes.Contains(n.Params, []byte(fmt.Sprintf(`"message": "step %d/3"`, progress))) {
			t.Errorf("progress %d not as the server wrote it: %s", progress, n.raw)
		}
	}
	if progress != 3 {
		t.Errorf("%d progress notifications before the result, want 3: %v", progress, before)
	}

	// A server's request during a call reaches the client; its answer
	// gets back to the server.
	send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"elicit_ordered","arguments":{}}}`)
	ask := next()
	for strings.HasSuffix(ask.Method, "/list_changed") { // the servers' prompts, named after start
		ask = next()
	}
	if ask.Method != "elicitation/create" || len(ask.ID) == 0 {
		t.Fatalf("expected the server's elicitation/create, got %s", ask.raw)
	}
	if !bytes.Contains(ask.Params, []byte(`"properties": {"zeta": `)) {
		t.Errorf("elicitation params not as the server wrote them: %s", ask.raw)
	}
	send(`{"jsonrpc":"2.0","id":` + string(ask.ID) + `,"result":{"action":"accept","content":{"zeta":"z"}}}`)
	if l, _ = answer("7"); !bytes.Contains(l.Result, []byte(`"text": "accept {`)) || !bytes.Contains(l.Result, []byte(`\"zeta\":\"z\"`)) {
		t.Errorf("elicit_ordered result: %s", l.raw)
	}

	// A cancelled call gets no answer; the call after it does.
	send(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":20000}}}`)
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8,"reason":"test"}}`)
	send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"text":"after"}}}`)
	if l, before = answer("9"); !bytes.Contains(l.Result, []byte(`"text": "after"`)) {
		t.Errorf("echo after the cancel: %s", l.raw)
	}
	inW.Close() // EOF: everything still pending is answered, then ServeStdio returns
	rest := before
	for l := range lines {
		rest = append(rest, l)
	}
	for _, l := range rest {
		if string(l.ID) == "8" {
			t.Errorf("the cancelled call was answered: %s", l.raw)
		}
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("serve stdio: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("ServeStdio did not return after EOF")
	}
	if err := g.Wait(); err != nil {
		t.Errorf("wait: %v", err)
	}
}

// spacedJSON is compact JSON as the Spaced fixture writes it.
func spacedJSON(s string) string {
	var b strings.Builder
	inString, escaped := false, false
	for _, c := range []byte(s) {
		b.WriteByte(c)
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == ':' || c == ','):
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// TestServeStdioDeclinedAtEOF: requests the raw path leaves to the SDK (an
// unknown tool, whose error is the SDK's) are still answered when stdin
// ends right after them, in one write as `printf ... | mcp-gateway stdio`
// sends them.
func TestServeStdioDeclinedAtEOF(t *testing.T) {
	cfg := testConfig(t)
	g := New([]catalog.ServerSpec{fixtureSpec("fx", fixture.Options{Tools: []string{"echo"}})}, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := g.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"last"}}}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	if err := g.ServeStdio(ctx, strings.NewReader(in), &out); err != nil {
		t.Fatalf("serve stdio: %v", err)
	}
	if err := g.Wait(); err != nil {
		t.Errorf("wait: %v", err)
	}
	got := map[string]stdioLine{}
	for _, raw := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n")) {
		var l stdioLine
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatalf("stdout line is not JSON-RPC: %s", raw)
		}
		l.raw = raw
		got[string(l.ID)] = l
	}
	if l, ok := got["2"]; !ok || (l.Error == nil && !bytes.Contains(l.Result, []byte(`"isError":true`))) {
		t.Errorf("unknown tool: answer %q, want an error\nstdout:\n%s", l.raw, out.String())
	}
	if l, ok := got["3"]; !ok || !bytes.Contains(l.Result, []byte(`"text":"last"`)) {
		t.Errorf("echo: answer %q\nstdout:\n%s", l.raw, out.String())
	}
	if len(got) != 3 {
		t.Errorf("%d answers, want 3:\n%s", len(got), out.String())
	}
}

// TestServeStdioBatch: on a session of a protocol version that allows
// JSON-RPC batches (before 2025-06-18), a batch's requests are all answered,
// in one array as the SDK's stdio connection writes a batch's answers: a
// tools/call in a batch is not taken by the raw path (whose lone answer
// would leave the SDK's batch forever incomplete). A batch whose call the
// client cancels is answered too, and stdin's EOF after it ends the session.
func TestServeStdioBatch(t *testing.T) {
	cfg := testConfig(t)
	g := New([]catalog.ServerSpec{fixtureSpec("fx", fixture.Options{Tools: []string{"echo", "sleep"}})}, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := g.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- g.ServeStdio(ctx, inR, outW)
		outW.Close()
	}()
	lines := make(chan []byte, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- bytes.Clone(sc.Bytes())
		}
	}()
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next := func() []byte {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("stdout ended")
			}
			return l
		case <-ctx.Done():
			t.Fatal("no message from the gateway")
		}
		return nil
	}
	// batch reads the next line as a batch's answers, by id.
	batch := func() map[string]stdioLine {
		t.Helper()
		raw := next()
		for {
			var n stdioLine // a notification (a list_changed) may come first
			if json.Unmarshal(raw, &n) != nil || n.Method == "" || n.ID != nil {
				break
			}
			raw = next()
		}
		var msgs []stdioLine
		if err := json.Unmarshal(raw, &msgs); err != nil {
			t.Fatalf("expected a batch's answers as one array, got %s", raw)
		}
		got := map[string]stdioLine{}
		for _, m := range msgs {
			got[string(m.ID)] = m
		}
		return got
	}

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"batcher","version":"1"}}}`)
	if l := next(); !bytes.Contains(l, []byte(`"protocolVersion":"2025-03-26"`)) {
		t.Fatalf("initialize: %s", l)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":10,"method":"prompts/list"}`) // the servers' names are known after this
	next()

	send(`[{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"in a batch"}}},{"jsonrpc":"2.0","id":3,"method":"ping"}]`)
	got := batch()
	if l, ok := got["2"]; !ok || !bytes.Contains(l.Result, []byte(`in a batch`)) {
		t.Errorf("tools/call in the batch: %+v", got)
	}
	if l, ok := got["3"]; !ok || l.Result == nil {
		t.Errorf("ping in the batch: %+v", got)
	}
	if len(got) != 2 {
		t.Errorf("%d answers in the batch, want 2", len(got))
	}

	// A cancelled call in a batch still gets an answer, or the batch's
	// answers would never be written.
	send(`[{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":20000}}},{"jsonrpc":"2.0","id":5,"method":"ping"}]`)
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4,"reason":"test"}}`)
	if got = batch(); len(got) != 2 || got["5"].Result == nil {
		t.Errorf("batch with a cancelled call: %+v", got)
	}

	// A last batch right before EOF is answered too.
	send(`[{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","arguments":{"text":"last"}}},{"jsonrpc":"2.0","id":7,"method":"ping"}]`)
	inW.Close()
	if got = batch(); len(got) != 2 || !bytes.Contains(got["6"].Result, []byte(`last`)) {
		t.Errorf("batch before EOF: %+v", got)
	}
	for l := range lines {
		// The prompts/list above registers the merged prompts, whose
		// list_changed the SDK sends after a debounce: under load it can
		// come this late. Anything else is an answer too many.
		var n stdioLine
		if json.Unmarshal(l, &n) == nil && n.ID == nil && strings.HasSuffix(n.Method, "/list_changed") {
			continue
		}
		t.Errorf("unexpected message after the last batch: %s", l)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("serve stdio: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("ServeStdio did not return after EOF")
	}
	if err := g.Wait(); err != nil {
		t.Errorf("wait: %v", err)
	}
}
