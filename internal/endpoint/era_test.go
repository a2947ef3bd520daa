package endpoint

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// statelessPost sends one sessionless POST with the given headers (the
// token, JSON and the Accept the revision asks for are added) and returns
// the status and the JSON-RPC message of the body (JSON or the last SSE
// event).
func statelessPost(t *testing.T, url, token, body string, header map[string]string) (int, map[string]json.RawMessage) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("POST %.60s: %v", body, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		t.Errorf("POST %.60s: a 2026-era answer named a session %q", body, sid)
	}
	data := strings.TrimSpace(string(b))
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		data = ""
		for _, line := range strings.Split(string(b), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(d, `"id"`) {
				data = d
			}
		}
	}
	var msg map[string]json.RawMessage
	if data != "" {
		if err := json.Unmarshal([]byte(data), &msg); err != nil {
			t.Fatalf("POST %.60s: %d, body %q: %v", body, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode, msg
}

// envelope is the _meta of a 2026-era request declaring no capabilities,
// with version as its protocol version.
func envelope(version string) string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + version + `","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"era-test","version":"1"}}`
}

// TestEraEdge sends one sessionless request per rule of the 2026-07-28
// revision to the gateway over real HTTP, with a real stdio fixture behind
// it, and checks the HTTP status and the JSON-RPC answer of each.
func TestEraEdge(t *testing.T) {
	url, token, _ := inProcessGateway(t, testSettings(t, 0), io.Discard)
	v := aggregate.StatelessRevision
	h := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	type check func(t *testing.T, result map[string]json.RawMessage)
	stamped := func(t *testing.T, res map[string]json.RawMessage) {
		t.Helper()
		if string(res["resultType"]) != `"complete"` {
			t.Errorf("resultType = %s, want \"complete\"", res["resultType"])
		}
		var meta map[string]struct {
			Name string `json:"name"`
		}
		// The gateway's, not the fixture's: a server that saw the
		// agent's envelope would take the call for a 2026 one and name
		// itself (the Go SDK's servers do).
		if err := json.Unmarshal(res["_meta"], &meta); err != nil || meta["io.modelcontextprotocol/serverInfo"].Name != "mcp-gateway" {
			t.Errorf("_meta = %s, want the gateway's serverInfo", res["_meta"])
		}
	}
	cacheable := func(t *testing.T, res map[string]json.RawMessage) {
		t.Helper()
		stamped(t, res)
		if string(res["ttlMs"]) != "0" || string(res["cacheScope"]) != `"private"` {
			t.Errorf("ttlMs, cacheScope = %s, %s; want 0, \"private\" (a 2025 server's list)", res["ttlMs"], res["cacheScope"])
		}
	}
	rows := []struct {
		name   string
		body   string
		header map[string]string
		status int
		code   int64 // 0: a result
		check  check
	}{
		{name: "discover lists both eras", status: 200,
			body:   `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + envelope(v) + `}}`,
			header: h("Mcp-Protocol-Version", v, "Mcp-Method", "server/discover"),
			check: func(t *testing.T, res map[string]json.RawMessage) {
				stamped(t, res)
				var versions []string
				_ = json.Unmarshal(res["supportedVersions"], &versions)
				if !slices.Contains(versions, v) || !slices.Contains(versions, "2025-11-25") {
					t.Errorf("supportedVersions = %s, want 2026-07-28 and 2025-11-25", res["supportedVersions"])
				}
				if !strings.Contains(string(res["capabilities"]), `"tools"`) {
					t.Errorf("capabilities = %s, want tools (the fixture's)", res["capabilities"])
				}
			}},
		{name: "tools/list", status: 200,
			body:   `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + envelope(v) + `}}`,
			header: h("Mcp-Protocol-Version", v, "Mcp-Method", "tools/list"),
			check: func(t *testing.T, res map[string]json.RawMessage) {
				cacheable(t, res)
				if !strings.Contains(string(res["tools"]), `"echo"`) {
					t.Errorf("tools = %.200s, want echo", res["tools"])
				}
			}},
		{name: "tools/call of a 2025 server", status: 200,
			body:   `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` + envelope(v) + `}}`,
			header: h("Mcp-Protocol-Version", v, "Mcp-Method", "tools/call", "Mcp-Name", "echo"),
			check: func(t *testing.T, res map[string]json.RawMessage) {
				stamped(t, res)
				if !strings.Contains(string(res["content"]), "hi") {
					t.Errorf("content = %s, want the echo", res["content"])
				}
			}},
		{name: "no version header", status: 400, code: mcp.CodeHeaderMismatch,
			body:   `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{` + envelope(v) + `}}`,
			header: h("Mcp-Method", "tools/list")},
		{name: "version header disagrees with _meta", status: 400, code: mcp.CodeHeaderMismatch,
			body:   `{"jsonrpc":"2.0","id":5,"method":"server/discover","params":{` + envelope("v999.0.0") + `}}`,
			header: h("Mcp-Protocol-Version", v, "Mcp-Method", "server/discover")},
		{name: "Mcp-Method disagrees with the body", status: 400, code: mcp.CodeHeaderMismatch,
			body:   `{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{` + envelope(v) + `}}`,
			header: h("Mcp-Protocol-Version", v, "Mcp-Method", "prompts/list")},
		{name: "unknown version", status: 400, code: mcp.CodeUnsupportedProtocolVersion,
			body:   `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{` + envelope("1900-01-01") + `}}`,
			header: h("Mcp-Protocol-Version", "1900-01-01", "Mcp-Method", "tools/list")},
		{name: "no clientCapabilities", status: 400, code: -32602,
			body:   `{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + v + `"}}}`,
			header: h("Mcp-Protocol-Version", v, "Mcp-Method", "tools/list")},
		{name: "ping removed", status: 404, code: -32601,
			body:   `{"jsonrpc":"2.0","id":9,"method":"ping","params":{` + envelope(v) + `}}`,
			header: h("Mcp-Protocol-Version", v, "Mcp-Method", "ping")},
		{name: "logging/setLevel removed", status: 404, code: -32601,
			body:   `{"jsonrpc":"2.0","id":10,"method":"logging/setLevel","params":{"level":"loud",` + envelope(v) + `}}`,
			header: h("Mcp-Protocol-Version", v, "Mcp-Method", "logging/setLevel")},
		{name: "resources/subscribe removed", status: 404, code: -32601,
			body:   `{"jsonrpc":"2.0","id":11,"method":"resources/subscribe","params":{"uri":"x:y",` + envelope(v) + `}}`,
			header: h("Mcp-Protocol-Version", v, "Mcp-Method", "resources/subscribe")},
		{name: "2025 request without a session still refused", status: 400, code: codeNoSession,
			body: `{"jsonrpc":"2.0","id":12,"method":"tools/list"}`},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			status, msg := statelessPost(t, url, token, row.body, row.header)
			if status != row.status {
				t.Errorf("status %d, want %d (%s %s)", status, row.status, msg["error"], msg["result"])
			}
			if row.code == 0 {
				var res map[string]json.RawMessage
				if err := json.Unmarshal(msg["result"], &res); err != nil {
					t.Fatalf("no result: %s", msg["error"])
				}
				row.check(t, res)
				return
			}
			var e struct {
				Code int64           `json:"code"`
				Data json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(msg["error"], &e); err != nil || e.Code != row.code {
				t.Fatalf("error %s, want code %d", msg["error"], row.code)
			}
			// An error names the request it answers: the agent matches
			// answers to requests by id.
			var sent struct {
				ID json.RawMessage `json:"id"`
			}
			if err := json.Unmarshal([]byte(row.body), &sent); err != nil || string(msg["id"]) != string(sent.ID) {
				t.Errorf("error answer's id %s, want the request's %s", msg["id"], sent.ID)
			}
			if row.code == mcp.CodeUnsupportedProtocolVersion {
				var d mcp.UnsupportedProtocolVersionData
				_ = json.Unmarshal(e.Data, &d)
				if !slices.Contains(d.Supported, v) || !slices.Contains(d.Supported, "2025-11-25") || d.Requested != "1900-01-01" {
					t.Errorf("data %s, want both eras' versions and the requested one", e.Data)
				}
			}
		})
	}
	// The version header alone, without the _meta envelope and without a
	// session, makes a request of the revision (of exactly the revision's
	// version): a notification, which carries no _meta, is accepted; a
	// call gets the SDK's -32602 for the missing _meta, not the 2025 era's
	// "session required".
	t.Run("notification with the version header alone", func(t *testing.T) {
		status, msg := statelessPost(t, url, token, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
			h("Mcp-Protocol-Version", v, "Mcp-Method", "notifications/cancelled"))
		if status != http.StatusAccepted || msg != nil {
			t.Errorf("%d, id %s, error %s; want 202 and no body", status, msg["id"], msg["error"])
		}
	})
	t.Run("call with the version header alone", func(t *testing.T) {
		status, msg := statelessPost(t, url, token, `{"jsonrpc":"2.0","id":13,"method":"tools/list"}`,
			h("Mcp-Protocol-Version", v, "Mcp-Method", "tools/list"))
		var e struct {
			Code int64 `json:"code"`
		}
		if status != http.StatusBadRequest || json.Unmarshal(msg["error"], &e) != nil || e.Code != -32602 || string(msg["id"]) != "13" {
			t.Errorf("%d, id %s, error %s; want 400 and the SDK's -32602 for request 13", status, msg["id"], msg["error"])
		}
	})
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		t.Run(method+" without a session", func(t *testing.T) {
			req, _ := http.NewRequest(method, url, nil)
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", v)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed {
				t.Errorf("status %d, want 405", resp.StatusCode)
			}
		})
	}
}

// TestEraGoClientNegotiates2026 connects the Go SDK's default client (no
// protocol version chosen), which probes server/discover first: it must
// settle on 2026-07-28 and list and call through the gateway, while a
// client that asks for 2025-11-25 still gets a session of that version.
func TestEraGoClientNegotiates2026(t *testing.T) {
	url, token, _ := inProcessGatewayOf(t, testSettings(t, 0), io.Discard,
		fixtureSpec("fx", fixture.Options{Tools: []string{"echo"}}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, want := range []string{aggregate.StatelessRevision, "2025-11-25"} {
		t.Run(want, func(t *testing.T) {
			var opts *mcp.ClientSessionOptions
			if want != aggregate.StatelessRevision {
				opts = &mcp.ClientSessionOptions{ProtocolVersion: want}
			}
			client := mcp.NewClient(&mcp.Implementation{Name: "era-agent", Version: "1"}, nil)
			tr := &mcp.StreamableClientTransport{Endpoint: url,
				HTTPClient: &http.Client{Transport: fixture.Bearer(token, http.DefaultTransport)}}
			cs, err := client.Connect(ctx, tr, opts)
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != want {
				t.Fatalf("negotiated %q, want %q", got, want)
			}
			if id := cs.ID(); (id == "") != (want == aggregate.StatelessRevision) {
				t.Errorf("session id %q on %s", id, want)
			}
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) == 0 {
				t.Fatalf("tools/list: %v %v", tools, err)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "era " + want}})
			if err != nil {
				t.Fatalf("tools/call: %v", err)
			}
			if got := text(t, res); !strings.Contains(got, "era "+want) {
				t.Errorf("echo said %q", got)
			}
		})
	}
}

// TestEraReplicas: two gateways with the same server behind a round-robin
// reverse proxy, no affinity. A 2026-era client (the Go SDK's default)
// negotiates, lists and calls through the proxy, each request landing on
// the other replica than the one before; a 2025-era client's session lives
// on one replica, so its next request, on the other, fails (the documented
// need for affinity on Mcp-Session-Id).
func TestEraReplicas(t *testing.T) {
	spec := fixtureSpec("fx", fixture.Options{Tools: []string{"echo"}})
	urlA, token, _ := inProcessGatewayOf(t, testSettings(t, 0), io.Discard, spec)
	urlB, tokenB, _ := inProcessGatewayOf(t, testSettings(t, 0), io.Discard, spec)
	if token != tokenB {
		t.Fatalf("replicas with different tokens %q, %q", token, tokenB)
	}
	var backends []*neturl.URL
	for _, u := range []string{urlA, urlB} {
		p, err := neturl.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		backends = append(backends, p)
	}
	var n, served atomic.Int64
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(backends[n.Add(1)%2])
			r.Out.URL.Path = backends[0].Path
			r.Out.Host = r.Out.URL.Host
			served.Add(1)
		},
		FlushInterval: -1,
	}
	front := httptest.NewServer(proxy)
	defer front.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	hc := &http.Client{Transport: fixture.Bearer(token, http.DefaultTransport)}

	client := mcp.NewClient(&mcp.Implementation{Name: "replica-agent", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: front.URL + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("2026-era connect through the proxy: %v", err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != aggregate.StatelessRevision {
		t.Fatalf("negotiated %q through the proxy, want %s", v, aggregate.StatelessRevision)
	}
	for i := range 4 {
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatalf("tools/list %d: %v", i, err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "replica"}})
		if err != nil || !strings.Contains(text(t, res), "replica") {
			t.Fatalf("tools/call %d: %v %v", i, res, err)
		}
	}
	if served.Load() < 9 {
		t.Fatalf("the proxy passed %d requests, want discover + 8 across both replicas", served.Load())
	}

	legacy := mcp.NewClient(&mcp.Implementation{Name: "replica-agent", Version: "1"}, nil)
	ls, err := legacy.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: front.URL + "/mcp", HTTPClient: hc, MaxRetries: -1}, legacySession())
	if err == nil {
		defer ls.Close()
		_, err = ls.ListTools(ctx, nil)
	}
	if err == nil {
		t.Fatal("a 2025-era session worked across replicas without affinity: the test proves nothing about the proxy")
	}
}
