package endpoint

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestListingKeepsTheSDKClientsToolFilter: the gateway lists its servers'
// tools with raw requests (schemas served as sent), but a server's tool whose
// x-mcp-header annotation is invalid is still left out, as the go-sdk client
// leaves it out; pages are followed. The merged list is read as bytes: a Go SDK client would drop the
// tool on its own side and hide a gateway that did not.
func TestListingKeepsTheSDKClientsToolFilter(t *testing.T) {
	url, token, _ := inProcessGatewayOf(t, testSettings(t, DefaultMaxSessions), io.Discard,
		fixtureSpec("hdr", fixture.Options{Tools: []string{"echo"}, HeaderTools: true}),
		fixtureSpec("paged", fixture.Options{Tools: []string{"sleep", "fail", "pid"}, ExtraTools: []string{"x1", "x2"}, PageSize: 2}))
	status, _, replies := newRawSession(t, url, token).post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if status != http.StatusOK || len(replies) != 1 || replies[0].Error != nil {
		t.Fatalf("tools/list: HTTP %d, %+v", status, replies)
	}
	body := replies[0].Result
	var page struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatalf("tools/list result: %v: %s", err, body)
	}
	got := map[string]bool{}
	for _, tool := range page.Tools {
		got[tool.Name] = true
		// Listed raw, a schema is served as the server wrote it (the go-sdk
		// writes "type" first); decoded into maps on the way, as the hdr
		// server's are, its keys come out sorted.
		raw := strings.HasPrefix(string(tool.InputSchema), `{"type":"object",`)
		if tool.Name == "sleep" && !raw {
			t.Errorf("sleep's input schema is served as %s, want it as the server sent it (type first)", tool.InputSchema)
		}
		if tool.Name == "echo" && raw {
			t.Errorf("echo's input schema is served as %s: listed raw, though its server's listing mentions x-mcp-header", tool.InputSchema)
		}
	}
	for _, want := range []string{"echo", fixture.HeaderOKTool, "sleep", "fail", "pid", "x1", "x2"} {
		if !got[want] {
			t.Errorf("merged list lacks %s: %s", want, body)
		}
	}
	if got[fixture.HeaderBadTool] {
		t.Errorf("merged list has %s, which the SDK client drops: %s", fixture.HeaderBadTool, body)
	}
}
