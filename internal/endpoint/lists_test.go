package endpoint

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// sdkLine is a session of the gateway's merged server held by the SDK
// alone, over a pipe: every request on it takes the SDK path (the
// gateway's middleware, the SDK's encoding), and its answers are read as
// the bytes the SDK wrote. It shows what the SDK path answers for the
// gateway's state at that moment.
type sdkLine struct {
	t     *testing.T
	in    io.WriteCloser
	lines chan string
}

// newSDKLine connects a session to e's merged server and initializes it.
func newSDKLine(t *testing.T, e *Endpoint) *sdkLine {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ss, err := e.agg.Server().Connect(context.Background(), &mcp.IOTransport{Reader: inR, Writer: outW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := &sdkLine{t: t, in: inW, lines: make(chan string, 64)}
	go func() {
		defer close(l.lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			l.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		ss.Close()
		outR.Close()
	})
	l.call(`"init"`, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sdk-line","version":"1"}}`)
	l.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return l
}

func (l *sdkLine) send(msg string) {
	l.t.Helper()
	if _, err := io.WriteString(l.in, msg+"\n"); err != nil {
		l.t.Fatal(err)
	}
}

// call sends a request and returns the response to it as the SDK wrote
// it; notifications before it are skipped.
func (l *sdkLine) call(id, method, params string) string {
	l.t.Helper()
	msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q`, id, method)
	if params != "" {
		msg += `,"params":` + params
	}
	l.send(msg + "}")
	prefix := `{"jsonrpc":"2.0","id":` + id + `,`
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-l.lines:
			if !ok {
				l.t.Fatalf("%s: the SDK session ended", method)
			}
			if strings.HasPrefix(line, prefix) {
				return line
			}
		case <-timeout:
			l.t.Fatalf("%s: no answer from the SDK session", method)
		}
	}
}

// all returns every page of a list on the SDK session, joined.
func (l *sdkLine) all(method string) string {
	l.t.Helper()
	var out strings.Builder
	cursor := ""
	for range 50 {
		params := `{}`
		if cursor != "" {
			params = fmt.Sprintf(`{"cursor":%q}`, cursor)
		}
		line := l.call(`"all"`, method, params)
		out.WriteString(line)
		var res struct {
			Result struct {
				NextCursor string `json:"nextCursor"`
			} `json:"result"`
		}
		if json.Unmarshal([]byte(line), &res) != nil || res.Result.NextCursor == "" {
			break
		}
		cursor = res.Result.NextCursor
	}
	return out.String()
}

// fastAnswer posts a request on s and returns the response's body; it
// fails unless the fast path answered (plain JSON: the SDK answers SSE).
func fastAnswer(t *testing.T, s *rawSession, id, method, params string) string {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q`, id, method)
	if params != "" {
		body += `,"params":` + params
	}
	status, h, events := s.postEvents(body + "}")
	if ct := h.Get("Content-Type"); status != http.StatusOK || ct != "application/json" || len(events) != 1 {
		t.Fatalf("%s %s: status %d, Content-Type %q, %q: want the fast path's plain JSON", method, params, status, ct, events)
	}
	return events[0]
}

// comparePages walks every page of a list on the fast path, following its
// cursors, checks each page is the SDK path's answer byte for byte, and
// returns the items' names (or URIs) in order.
func comparePages(t *testing.T, s *rawSession, l *sdkLine, method, member, key string) []string {
	t.Helper()
	var names []string
	cursor := ""
	for page := 0; ; page++ {
		params := `{}`
		if cursor != "" {
			params = fmt.Sprintf(`{"cursor":%q}`, cursor)
		}
		id := fmt.Sprintf(`"%s-%d"`, method, page)
		fast := fastAnswer(t, s, id, method, params)
		if sdk := l.call(id, method, params); fast != sdk {
			t.Fatalf("%s page %d:\nfast path %s\nSDK path  %s", method, page, fast, sdk)
		}
		var res struct {
			Result map[string]json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(fast), &res); err != nil {
			t.Fatal(err)
		}
		var items []map[string]any
		if err := json.Unmarshal(res.Result[member], &items); err != nil || items == nil {
			t.Fatalf("%s page %d: %q is not a list: %s", method, page, member, fast)
		}
		for _, it := range items {
			names = append(names, fmt.Sprint(it[key]))
		}
		cursor = ""
		if c, ok := res.Result["nextCursor"]; ok {
			if err := json.Unmarshal(c, &cursor); err != nil || cursor == "" {
				t.Fatalf("%s page %d: bad nextCursor %s", method, page, c)
			}
		}
		if cursor == "" {
			return names
		}
		if page > 20 {
			t.Fatalf("%s: cursors never end", method)
		}
	}
}

// TestListsFastPathAnswerAsTheSDKPath: prompts/list, resources/list,
// resources/templates/list, tools/list and ping are answered on the fast
// path (plain JSON) with the bytes the SDK path gives for the same state:
// every page, with the gateway's page size cutting the lists into several;
// an empty list; a cursor past the end; and again after the servers add
// items (list_changed), with names and URIs that collide renamed. An
// invalid cursor or params the SDK refuses are left to the SDK, whose
// error stands.
func TestListsFastPathAnswerAsTheSDKPath(t *testing.T) {
	set := testSettings(t, 16)
	set.PageSize = 2
	url, token, e := inProcessGatewayOf(t, set, io.Discard,
		fixtureSpec("a", fixture.Options{Name: "a", Tools: []string{"echo"}, Verbatim: true, AddItems: true}),
		fixtureSpec("b", fixture.Options{Name: "b", Tools: []string{"echo"}, AddItems: true}))
	s := newRawSession(t, url, token)
	l := newSDKLine(t, e)
	// The first request about prompts waits (on the SDK path) until every
	// server's are named; from then on the fast path answers.
	l.call("0", "prompts/list", "")

	lists := []struct{ method, member, key string }{
		{"prompts/list", "prompts", "name"},
		{"resources/list", "resources", "uri"},
		{"resources/templates/list", "resourceTemplates", "uriTemplate"},
		{"tools/list", "tools", "name"},
	}
	walk := func() map[string][]string {
		got := map[string][]string{}
		for _, c := range lists {
			got[c.method] = comparePages(t, s, l, c.method, c.member, c.key)
		}
		return got
	}
	before := walk()
	if p := before["prompts/list"]; strings.Join(p, " ") != "greet verbatim b_greet" {
		t.Errorf("prompts before: %q, want greet verbatim b_greet (three, over two pages)", p)
	}
	if r := before["resources/list"]; len(r) != 4 {
		t.Errorf("resources before: %q, want four", r)
	}
	if tpl := before["resources/templates/list"]; len(tpl) != 0 {
		t.Errorf("templates before: %q, want none", tpl)
	}

	// Requests that are not a page of a list, for both paths alike.
	for i, c := range []struct{ method, params string }{
		{"ping", ""},
		{"ping", `{}`},
		{"ping", `null`},
		{"prompts/list", ``},
		{"prompts/list", `{"cursor":"` + base64.RawURLEncoding.EncodeToString([]byte("100")) + `"}`}, // past the end
		{"resources/list", `{"cursor":"` + base64.RawURLEncoding.EncodeToString([]byte("1")) + `"}`}, // not a page start
		{"resources/list", `{"Cursor":"bm9wZQ"}`},                                                    // the SDK matches member names exactly
	} {
		id := fmt.Sprint(100 + i)
		if fast, sdk := fastAnswer(t, s, id, c.method, c.params), l.call(id, c.method, c.params); fast != sdk {
			t.Errorf("%s %s:\nfast path %s\nSDK path  %s", c.method, c.params, fast, sdk)
		}
	}
	for i, c := range []struct{ method, params string }{
		{"prompts/list", `{"cursor":"!!"}`},
		{"resources/templates/list", `{"cursor":7}`},
		{"ping", `[]`},
	} {
		id := fmt.Sprint(200 + i)
		status, h, events := s.postEvents(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, c.method, c.params))
		if ct := h.Get("Content-Type"); status != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") || len(events) != 1 || !strings.Contains(events[0], `"error":`) {
			t.Errorf("%s %s: status %d, Content-Type %q, %q: want the SDK's error on its stream", c.method, c.params, status, ct, events)
			continue
		}
		if sdk := l.call(id, c.method, c.params); events[0] != sdk {
			t.Errorf("%s %s:\nHTTP %s\nSDK  %s", c.method, c.params, events[0], sdk)
		}
	}

	// Both servers add "dup" (a first: names are sticky, the first to
	// appear keeps its own), b also "solo": b's dup is renamed, its URIs
	// rewritten.
	for _, c := range []struct{ tool, name string }{{"add_items", "dup"}, {"b_add_items", "dup"}, {"b_add_items", "solo"}} {
		status, _, r := s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":"add","method":"tools/call","params":{"name":%q,"arguments":{"name":%q}}}`, c.tool, c.name))
		if status != http.StatusOK || len(r) != 1 || r[0].Error != nil {
			t.Fatalf("%s %s: %d %+v", c.tool, c.name, status, r)
		}
		want := fmt.Sprintf(`"name":%q`, c.name)
		if c.tool == "b_add_items" && c.name == "dup" {
			want = `"name":"b_dup"`
		}
		uri := fixture.AddedResourceURI(c.name) + "/{part}"
		waitFor(t, 30*time.Second, c.tool+" "+c.name+" on the SDK path", func() bool {
			return strings.Contains(l.all("prompts/list"), want) && strings.Contains(l.all("resources/templates/list"), uri)
		})
	}
	soloTpl := fixture.AddedResourceURI("solo") + "/{part}"
	after := walk()
	if p := after["prompts/list"]; strings.Join(p, " ") != "dup greet verbatim b_dup b_greet solo" {
		t.Errorf("prompts after: %q", p)
	}
	rewritten := aggregate.RewritePrefix + "b/" + fixture.AddedResourceURI("dup")
	if r := strings.Join(after["resources/list"], " "); len(after["resources/list"]) != 7 || !strings.Contains(r, rewritten) {
		t.Errorf("resources after: %q, want seven, with %s", r, rewritten)
	}
	if tpl := after["resources/templates/list"]; len(tpl) != 3 || tpl[2] != soloTpl {
		t.Errorf("templates after: %q, want three, the last %s", tpl, soloTpl)
	}
}
