package aggregate_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// startStatelessGateway is startGatewayG with the merged server served a
// second time through the SDK's streamable handler in its stateless mode,
// as the endpoint serves 2026-era requests that take the SDK path; it
// returns both URLs (the stateful one first).
func startStatelessGateway(t *testing.T, servers map[string]fixture.Options) (url, stateless string) {
	t.Helper()
	url, _, g := startGatewayG(t, servers)
	sl := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.Server() },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(sl.Close)
	return url, sl.URL
}

// envelope is the _meta of a 2026-era request whose client declares the
// tasks extension, with extra members (each starting with a comma).
func envelope(extra string) string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"agent","version":"1"}` + extra + `}`
}

// post2026 posts one 2026-era request (no session; the revision's
// headers) and returns the body as sent: an SSE stream or plain JSON.
func post2026(t *testing.T, url, method, name, params string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDiscoverOfTheMergedServer: server/discover, whether it reaches the
// stateless handler or, as a 2026 client's probe, the stateful one, answers
// with the merged capabilities in the revision's terms (the tasks
// extension, not the 2025 tasks capability) and a result stamped for the
// revision (resultType, the cache hints a discover result must carry).
func TestDiscoverOfTheMergedServer(t *testing.T) {
	url, stateless := startStatelessGateway(t, map[string]fixture.Options{"a": {Name: "a", Tasks: true}})
	for _, u := range []struct{ name, url string }{{"stateless", stateless}, {"probe of the stateful handler", url}} {
		got := post2026(t, u.url, "server/discover", "", `{`+envelope("")+`}`)
		for _, want := range []string{`"extensions":{"io.modelcontextprotocol/tasks":{}}`, `"resultType":"complete"`, `"ttlMs":0`, `"cacheScope":"public"`} {
			if !strings.Contains(got, want) {
				t.Errorf("%s: discover answered %s, want %s in it", u.name, got, want)
			}
		}
		if strings.Contains(got, `"tasks":{`) {
			t.Errorf("%s: discover shows the 2025 tasks capability: %s", u.name, got)
		}
	}
}

// TestStatelessRequestOnTheSDKPath: a 2026-era request served by the SDK
// (no session) gets its result stamped (resultType, the gateway's
// serverInfo); the server's log messages during it reach it at the level
// its _meta asks for, and none reach a request that asks for none; and
// the tasks extension's methods are served for it (an unknown task is
// refused as one, not as an unknown method).
func TestStatelessRequestOnTheSDKPath(t *testing.T) {
	url, stateless := startStatelessGateway(t, map[string]fixture.Options{"a": {Name: "a", Tasks: true}})
	// The server logs only once a level is set on it: a 2025 agent's.
	if err := connect(t, url, nil).SetLoggingLevel(ctxT(t), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}

	got := post2026(t, stateless, "tools/call", "echo", `{"name":"echo","arguments":{"text":"hi"},`+envelope("")+`}`)
	if !strings.Contains(got, `"text":"hi"`) || !strings.Contains(got, `"resultType":"complete"`) ||
		!strings.Contains(got, `"io.modelcontextprotocol/serverInfo":{"name":"mcp-gateway"`) {
		t.Errorf("echo answered %s, want its result stamped for the revision", got)
	}

	logCall := func(level string) string {
		extra := ""
		if level != "" {
			extra = `,"io.modelcontextprotocol/logLevel":"` + level + `"`
		}
		return post2026(t, stateless, "tools/call", "log", `{"name":"log","arguments":{"message":"hello","level":"info"},`+envelope(extra)+`}`)
	}
	if got := logCall("info"); !strings.Contains(got, `"method":"notifications/message"`) || !strings.Contains(got, `"hello"`) {
		t.Errorf("a call asking for info logs got no log message: %s", got)
	}
	if got := logCall("warning"); strings.Contains(got, "notifications/message") {
		t.Errorf("a call asking for warnings got an info message: %s", got)
	}
	if got := logCall(""); strings.Contains(got, "notifications/message") {
		t.Errorf("a call asking for no logs got a log message: %s", got)
	}

	got = post2026(t, stateless, "tasks/get", "", `{"taskId":"nope",`+envelope("")+`}`)
	if !strings.Contains(got, `unknown task \"nope\"`) {
		t.Errorf("tasks/get of an unknown task: %s, want it refused as an unknown task", got)
	}
}
