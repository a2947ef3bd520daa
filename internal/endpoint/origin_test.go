package endpoint

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestOriginChecked: a request whose Origin is neither the endpoint's own
// address (as its Host names it) nor an allowed origin gets 403, on a new
// connection and on one the lane serves; no Origin, the own address and an
// allowed origin are served (the own address by http or https, not by
// another scheme). MCP clients outside a browser send no Origin:
// every other test of the package is such a client.
func TestOriginChecked(t *testing.T) {
	set := testSettings(t, DefaultMaxSessions)
	set.AllowedOrigins = []string{"https://app.example"}
	url, token, _ := inProcessGateway(t, set, io.Discard)
	s := newRawSession(t, url, token)
	host := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
	post := func(client *http.Client, origin string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"o"}}}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	kept := &http.Client{Transport: &http.Transport{}}
	defer kept.CloseIdleConnections()
	for name, client := range map[string]*http.Client{"new connection": fresh, "lane connection": kept} {
		// On the kept-alive connection, the first call's answer hands the
		// connection to the lane, which reads the ones after it.
		// The own address over https too: a proxy in front may end TLS.
		for _, origin := range []string{"", "http://" + host, "https://app.example", "", "http://" + host, "https://" + host} {
			if code, body := post(client, origin); code != http.StatusOK || !strings.Contains(body, "o") {
				t.Errorf("%s, Origin %q: %d %s", name, origin, code, body)
			}
		}
		// The own host under a scheme no page is served by is not the
		// endpoint's address.
		for _, origin := range []string{"http://evil.example", "null", "https://app.example.evil", "http://" + host + ".evil", "ftp://" + host} {
			code, body := post(client, origin)
			if code != http.StatusForbidden || !strings.Contains(body, "not allowed") || !strings.Contains(body, `"jsonrpc":"2.0"`) {
				t.Errorf("%s, Origin %q: %d %s, want 403", name, origin, code, body)
			}
		}
	}
}
