package endpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/intercept"
)

// gatewayToken is how a progress token the gateway minted looks.
var gatewayToken = regexp.MustCompile(`"mcp-gateway-\d+"`)

// TestForwardsParamsAsSent: the requests the gateway forwards (prompts/get,
// resources/read, completion/complete, tools/call, resources/subscribe and
// unsubscribe, all on the fast path) reach the server with
// the params the agent sent, byte for byte: members the SDK's types do not
// know stay, and so does every member's order. Only what routing needs
// changes: a renamed prompt's or tool's name, a rewritten URI, and the
// progress token, which becomes one of the gateway's. Two fixtures that
// publish the same names make the second one's renamed (b_...) and its
// resource rewritten (mcp-gateway://b/...); each records the params it read
// off its stdin (fixture.ParamsSeenTool).
func TestForwardsParamsAsSent(t *testing.T) {
	url, token, _ := inProcessGatewayOf(t, testSettings(t, 16), io.Discard,
		fixtureSpec("a", fixture.Options{Name: "a", Verbatim: true}),
		fixtureSpec("b", fixture.Options{Name: "b", Verbatim: true}))
	s := newRawSession(t, url, token)
	// Until every server's prompts are named, requests about them wait on
	// the SDK's path.
	if status, _, r := s.post(`{"jsonrpc":"2.0","id":"l","method":"prompts/list"}`); status != http.StatusOK || len(r) != 1 || r[0].Error != nil {
		t.Fatalf("prompts/list: %d %+v", status, r)
	}
	shared := aggregate.RewritePrefix + "b/" + fixture.SharedResourceURI
	cases := []struct {
		method, sent, want string
		fast               bool // answered on the fast path (plain JSON)
	}{
		{"prompts/get",
			`{"zeta":[3,1],"name":"b_greet","arguments":{"name":"x"},"_meta":{"z":1,"progressToken":"p-1"},"alpha":{"b":1,"a":2}}`,
			`{"zeta":[3,1],"name":"greet","arguments":{"name":"x"},"_meta":{"z":1,"progressToken":<token>},"alpha":{"b":1,"a":2}}`, true},
		{"resources/read",
			`{"uri":"` + shared + `","x-extra":{"b":true,"a":null}}`,
			`{"uri":"` + fixture.SharedResourceURI + `","x-extra":{"b":true,"a":null}}`, true},
		{"completion/complete",
			`{"ref":{"type":"ref/prompt","z":0,"name":"b_greet"},"argument":{"value":"a","name":"name"},"unknown":0}`,
			`{"ref":{"type":"ref/prompt","z":0,"name":"greet"},"argument":{"value":"a","name":"name"},"unknown":0}`, true},
		{"resources/subscribe",
			`{"uri":"` + shared + `","extra":"kept"}`,
			`{"uri":"` + fixture.SharedResourceURI + `","extra":"kept"}`, true},
		{"resources/unsubscribe",
			`{"extra":"first","uri":"` + shared + `"}`,
			`{"extra":"first","uri":"` + fixture.SharedResourceURI + `"}`, true},
		// A progress token of null is no token: the params go on as sent.
		{"tools/call",
			`{"_meta":{"progressToken":null,"z":true},"name":"b_echo","arguments":{"text":"hi"},"extra":[1]}`,
			`{"_meta":{"progressToken":null,"z":true},"name":"echo","arguments":{"text":"hi"},"extra":[1]}`, true},
	}
	for i, c := range cases {
		status, h, replies := s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, 100+i, c.method, c.sent))
		if status != http.StatusOK || len(replies) != 1 || replies[0].Error != nil {
			t.Fatalf("%s: %d %+v", c.method, status, replies)
		}
		if fast := h.Get("Content-Type") == "application/json"; fast != c.fast {
			t.Errorf("%s: Content-Type %q, want the fast path: %v", c.method, h.Get("Content-Type"), c.fast)
		}
		seen := paramsSeen(t, s, "b_"+fixture.ParamsSeenTool, c.method)
		if len(seen) == 0 {
			t.Fatalf("%s: server b read no such request", c.method)
		}
		got := gatewayToken.ReplaceAllString(string(seen[len(seen)-1]), "<token>")
		if c.method == "tools/call" {
			got = gatewayToken.ReplaceAllString(string(seen[len(seen)-2]), "<token>") // the last is params_seen's own
		}
		if got != c.want {
			t.Errorf("%s: the agent sent\n%s\nthe server read\n%s\nwant\n%s", c.method, c.sent, got, c.want)
		}
	}
}

// TestNullProgressTokenOnFastPath: a tools/call whose _meta has a null
// progress token (as the Go SDK's client sends Meta{"progressToken": nil})
// is taken by the fast path: the server reads the params as the agent sent
// them (on one line, as every request to a stdio server goes: compacted),
// only the routed name set, no token added, and the agent gets the
// server's result as the server wrote it, as plain JSON.
func TestNullProgressTokenOnFastPath(t *testing.T) {
	url, token, e := inProcessGatewayOf(t, testSettings(t, 16), io.Discard,
		fixtureSpec("a", fixture.Options{Name: "a", Verbatim: true}),
		fixtureSpec("b", fixture.Options{Name: "b", Verbatim: true}))
	s := newRawSession(t, url, token)
	args := `{ "zeta" : "z", "alpha":1.50 }`
	for i, c := range []struct{ sent, want string }{
		{`{"name":"b_verbatim","_meta":{"progressToken":null},"arguments":` + args + `}`,
			`{"name":"verbatim","_meta":{"progressToken":null},"arguments":` + args + `}`},
		{`{"_meta": { "z":[{"}":"{"}], "progressToken" : null } ,"arguments":` + args + `,"name":"b_verbatim","x":"\"é\u00e9"}`,
			`{"_meta": { "z":[{"}":"{"}], "progressToken" : null } ,"arguments":` + args + `,"name":"verbatim","x":"\"é\u00e9"}`},
		// Not renamed: a's tool keeps its name, and the params every byte.
		{`{"arguments":` + args + `,"name":"verbatim","_meta":{"progressToken":null,"progressToken2":"x"}}`,
			`{"arguments":` + args + `,"name":"verbatim","_meta":{"progressToken":null,"progressToken2":"x"}}`},
	} {
		before := e.fast.forwarded.Load()
		id := 200 + i
		status, h, msgs := s.postEvents(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, id, c.sent))
		if ct := h.Get("Content-Type"); status != http.StatusOK || ct != "application/json" || e.fast.forwarded.Load() != before+1 {
			t.Errorf("%s: status %d, Content-Type %q, fast-path answers %d -> %d; want the fast path's plain JSON",
				c.sent, status, ct, before, e.fast.forwarded.Load())
		}
		// The fixture (a Go SDK server) encodes its CallToolResult so.
		res, err := json.Marshal(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "verbatim called with " + compact(t, args)}}})
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%s}`, id, res)
		if len(msgs) != 1 || msgs[0] != want {
			t.Errorf("%s: answered\n%q\nwant the server's result as it wrote it\n%s", c.sent, msgs, want)
		}
		server := "b_"
		if i == 2 {
			server = ""
		}
		seen := paramsSeen(t, s, server+fixture.ParamsSeenTool, "tools/call")
		if len(seen) < 2 || string(seen[len(seen)-2]) != compact(t, c.want) {
			t.Errorf("the agent sent\n%s\nthe server read %s\nwant\n%s", c.sent, seen, c.want)
		}
	}
}

// compact is s without insignificant whitespace, as the gateway writes a
// request to a stdio server (on one line).
func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("compact %s: %v", s, err)
	}
	return b.String()
}

// paramsSeen returns the params of every request of method the fixture
// behind tool read, in order.
func paramsSeen(t *testing.T, s *rawSession, tool, method string) []json.RawMessage {
	t.Helper()
	status, _, replies := s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":"seen","method":"tools/call","params":{"name":%q,"arguments":{"method":%q}}}`, tool, method))
	if status != http.StatusOK || len(replies) != 1 {
		t.Fatalf("%s: %d %+v", tool, status, replies)
	}
	var seen []json.RawMessage
	if err := json.Unmarshal([]byte(strings.TrimSpace(replyText(t, replies[0]))), &seen); err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return seen
}

// TestInterceptedCallKeepsParams: a call that interceptors apply to goes on
// with the params the agent sent, on the fast path and the SDK's alike:
// the chain only sees and may change the arguments (and a renamed tool's
// name is routed), so no other member is rebuilt or dropped.
func TestInterceptedCallKeepsParams(t *testing.T) {
	set := testSettings(t, 16)
	set.Interceptors = func(specs []catalog.ServerSpec) *intercept.Engine {
		cfg, err := intercept.Parse([]byte(`{"interceptors":[{"name":"size","type":"sizeGuard","maxArgumentBytes":100000}]}`))
		if err != nil {
			t.Fatal(err)
		}
		return intercept.New(cfg, specs, intercept.Options{})
	}
	url, token, _ := inProcessGatewayOf(t, set, io.Discard,
		fixtureSpec("a", fixture.Options{Name: "a", Verbatim: true}),
		fixtureSpec("b", fixture.Options{Name: "b", Verbatim: true}))
	s := newRawSession(t, url, token)
	for _, c := range []struct{ sent, want string }{
		// The fast path.
		{`{"extra":{"z":1,"a":2},"name":"b_echo","arguments":{"text":"hooked"},"_meta":{"trace":"t-1"}}`,
			`{"extra":{"z":1,"a":2},"name":"echo","arguments":{"text":"hooked"},"_meta":{"trace":"t-1"}}`},
		// A progress token on an intercepted tool: the gateway's own
		// token, on the fast path too.
		{`{"extra":{"z":1,"a":2},"name":"b_echo","arguments":{"text":"hooked"},"_meta":{"trace":"t-1","progressToken":"p"}}`,
			`{"extra":{"z":1,"a":2},"name":"echo","arguments":{"text":"hooked"},"_meta":{"trace":"t-1","progressToken":<token>}}`},
	} {
		status, h, replies := s.post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + c.sent + `}`)
		if status != http.StatusOK || len(replies) != 1 || !strings.Contains(replyText(t, replies[0]), "hooked") {
			t.Fatalf("echo %s: %d %+v", c.sent, status, replies)
		}
		if ct := h.Get("Content-Type"); ct != "application/json" {
			t.Errorf("echo %s: Content-Type %q, want the fast path's plain JSON (no progress came)", c.sent, ct)
		}
		seen := paramsSeen(t, s, "b_"+fixture.ParamsSeenTool, "tools/call")
		if len(seen) < 2 || gatewayToken.ReplaceAllString(string(seen[len(seen)-2]), "<token>") != c.want {
			t.Errorf("the agent sent\n%s\nthe server read %s\nwant it as sent, renamed:\n%s", c.sent, seen, c.want)
		}
	}
}

// TestInterceptedCallStreamsProgress: a call with a progress token to a
// tool interceptors apply to is taken by the fast path: the server gets a
// token of the gateway's, and its progress notifications reach the agent
// on the call's stream, with the agent's token and otherwise as the server
// wrote them, before the result. The interceptor runs: a call over its
// size is refused without reaching the server.
func TestInterceptedCallStreamsProgress(t *testing.T) {
	set := testSettings(t, 16)
	set.Interceptors = func(specs []catalog.ServerSpec) *intercept.Engine {
		cfg, err := intercept.Parse([]byte(`{"interceptors":[{"name":"size","type":"sizeGuard","maxArgumentBytes":20}]}`))
		if err != nil {
			t.Fatal(err)
		}
		return intercept.New(cfg, specs, intercept.Options{})
	}
	url, token, e := inProcessGatewayOf(t, set, io.Discard,
		fixtureSpec("a", fixture.Options{Name: "a", Tools: []string{"progress"}}))
	s := newRawSession(t, url, token)
	for i, tok := range []string{`7`, `"p-1"`, `{"k":[1]}`} {
		id := 10 + i
		before := e.fast.forwarded.Load()
		_, h, events := s.postEvents(callBody(id, "progress", `{"steps":3}`, `{"progressToken":`+tok+`}`))
		if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") || len(events) != 4 {
			t.Fatalf("token %s: Content-Type %q, events %q", tok, ct, events)
		}
		if n := e.fast.forwarded.Load(); n != before+1 {
			t.Errorf("token %s: fast-path answers %d -> %d, want the fast path", tok, before, n)
		}
		for j, ev := range events[:3] {
			want := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":` + tok +
				`,"message":"step ` + strconv.Itoa(j+1) + `/3","progress":` + strconv.Itoa(j+1) + `,"total":3}}`
			if ev != want {
				t.Errorf("token %s: event %d\n got %s\nwant %s", tok, j, ev, want)
			}
		}
		if want := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"result":{"content":[{"type":"text","text":"done 3"}]}}`; events[3] != want {
			t.Errorf("token %s: last event\n got %s\nwant %s", tok, events[3], want)
		}
	}
	// Over the interceptor's size: refused, no progress, nothing upstream.
	_, _, events := s.postEvents(callBody(20, "progress", `{"steps":3,"pad":"0123456789"}`, `{"progressToken":8}`))
	if len(events) != 1 || !strings.Contains(events[0], "at most 20 are allowed") || strings.Contains(events[0], "done") {
		t.Errorf("a call over the interceptor's size: %q, want its refusal only", events)
	}
}

// TestServerErrorsAsSent: a server's own JSON-RPC error for a request the
// gateway routed to it reaches the agent as the server sent it, code and
// message, as connected directly. A resources/read of a URI that no list
// names, tried on several servers in turn, says whose error it is.
func TestServerErrorsAsSent(t *testing.T) {
	const uri = "fixture://no/such/resource"
	read := func(t *testing.T, url, token string) (int64, string) {
		t.Helper()
		s := newRawSession(t, url, token)
		status, _, replies := s.post(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"` + uri + `"}}`)
		if status != http.StatusOK || len(replies) != 1 || replies[0].Error == nil {
			t.Fatalf("resources/read %s: %d %+v, want an error", uri, status, replies)
		}
		return replies[0].Error.Code, replies[0].Error.Message
	}
	url, token, _ := inProcessGatewayOf(t, testSettings(t, 16), io.Discard, fixtureSpec("a", fixture.Options{Name: "a"}))
	// The Go SDK's servers (the fixture) answer an unknown resource so.
	const code, msg = -32602, "Resource not found"
	if c, m := read(t, url, token); c != code || m != msg {
		t.Errorf("one server: error %d %q, want the server's own: %d %q", c, m, code, msg)
	}
	url, token, _ = inProcessGatewayOf(t, testSettings(t, 16), io.Discard,
		fixtureSpec("a", fixture.Options{Name: "a"}), fixtureSpec("b", fixture.Options{Name: "b"}))
	if c, m := read(t, url, token); c != code || m != `server "a": `+msg {
		t.Errorf("two servers: error %d %q, want the first server's, naming it", c, m)
	}
}
