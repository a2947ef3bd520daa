package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
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
