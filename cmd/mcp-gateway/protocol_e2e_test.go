package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestTypeScriptClientProtocol: the official TypeScript SDK client receives
// forwarded progress (all of it, before the result), reads a resource and
// gets a prompt through the gateway.
func TestTypeScriptClientProtocol(t *testing.T) {
	ts := tsHarness(t)
	sb := newTestbox(t)
	sb.mustLaunch(mcpConfig(t, map[string]any{
		"a": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "a"})},
		"b": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "b"})},
	}))
	cmd := exec.Command("node", filepath.Join(ts, "client.mjs"), sb.url()+"/mcp", sb.token, "b_progress", `{"steps":4}`,
		"--progress", "--read-resource=mcp-gateway://b/"+fixture.SharedResourceURI, "--get-prompt=b_greet", `--prompt-args={"name":"Ada"}`)
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("client.mjs: %v: %s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var got struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
		Progress []struct {
			Progress float64 `json:"progress"`
			Total    float64 `json:"total"`
		} `json:"progress"`
		Resource struct {
			Contents []struct{ URI, Text string } `json:"contents"`
		} `json:"resource"`
		Prompt struct {
			Description string `json:"description"`
			Messages    []struct {
				Content struct{ Text string } `json:"content"`
			} `json:"messages"`
		} `json:"prompt"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("output %s: %v", out, err)
	}
	if len(got.Result.Content) != 1 || got.Result.Content[0].Text != "done 4" {
		t.Errorf("call result %+v", got.Result)
	}
	if len(got.Progress) != 4 || got.Progress[3].Progress != 4 || got.Progress[3].Total != 4 {
		t.Errorf("progress seen by the TS client before the result: %+v, want 4 updates", got.Progress)
	}
	if len(got.Resource.Contents) != 1 || got.Resource.Contents[0].Text != "readme of b" {
		t.Errorf("resource %+v", got.Resource)
	}
	if got.Prompt.Description != "greeting from b" || len(got.Prompt.Messages) != 1 || got.Prompt.Messages[0].Content.Text != "Hello, Ada!" {
		t.Errorf("prompt %+v", got.Prompt)
	}
}

// TestToolsListFastPath: tools/list on a live session is answered from the
// encoded pages as plain JSON, with the request's id, and pages chain; an
// unknown session still gets the SDK's 404, and a bad cursor a JSON-RPC error.
func TestToolsListFastPath(t *testing.T) {
	sb := newTestbox(t)
	var extra []string
	for i := range 1500 {
		extra = append(extra, fmt.Sprintf("t%04d", i))
	}
	sb.mustLaunch(mcpConfig(t, map[string]any{
		"a": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "a", Tools: []string{"echo"}, ExtraTools: extra})},
	}))
	s := newRawSession(t, sb.url()+"/mcp", sb.token)
	var names []string
	cursor := ""
	for page := 0; ; page++ {
		params := `{}`
		if cursor != "" {
			params = fmt.Sprintf(`{"cursor":%q}`, cursor)
		}
		status, h, replies := s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":"list-%d","method":"tools/list","params":%s}`, page, params))
		if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "application/json") || len(replies) != 1 ||
			string(replies[0].ID) != fmt.Sprintf(`"list-%d"`, page) || replies[0].Error != nil {
			t.Fatalf("page %d: %d %q %+v", page, status, h.Get("Content-Type"), replies)
		}
		var res struct {
			Tools      []struct{ Name string } `json:"tools"`
			NextCursor string                  `json:"nextCursor"`
		}
		if err := json.Unmarshal(replies[0].Result, &res); err != nil {
			t.Fatal(err)
		}
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	if len(names) != 1501 || names[0] != "echo" || names[1500] != "t1499" {
		t.Errorf("listed %d tools (first %q, last %q), want 1501 from echo to t1499", len(names), names[0], names[len(names)-1])
	}
	if status, _, replies := s.post(`{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"cursor":"!!"}}`); len(replies) != 1 || replies[0].Error == nil || replies[0].Error.Code != -32602 {
		t.Errorf("bad cursor: %d %+v, want a -32602 error", status, replies)
	}
	gone := &rawSession{t: t, url: s.url, token: s.token, id: "no-such-session", client: s.client}
	if status, _, _ := gone.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); status != http.StatusNotFound {
		t.Errorf("tools/list on an unknown session: %d, want 404", status)
	}
}
