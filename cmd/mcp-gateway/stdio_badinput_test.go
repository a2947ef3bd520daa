package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/stdioserve"
)

// TestStdioBadLinesAnswered: in stdio mode a line that is not JSON, one
// longer than the limit and one that is not UTF-8 each get a parse error
// (-32700) with a null id, and valid JSON that is no JSON-RPC message an
// invalid request error (-32600), before initialize and after it; the
// session goes on: every request around them is answered, a call through a
// server included, and the gateway exits 0 at EOF.
func TestStdioBadLinesAnswered(t *testing.T) {
	dir := t.TempDir()
	cfg := mcpConfig(t, map[string]any{
		"a": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "a", Tools: []string{"echo"}})},
	})
	// A session that stopped reading would wait for ever: bounded.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gatewayBin, "stdio", "--config", cfg, "--log-file", filepath.Join(dir, "stdio.log"),
		"--catalog", filepath.Join(dir, "catalog.json"), "--servers-dir", filepath.Join(dir, "servers"))
	p := startPiped(t, cmd)
	in, out := p.in, p.out

	huge := `{"jsonrpc":"2.0","id":90,"method":"ping","params":{"pad":"` + strings.Repeat("a", stdioserve.MaxLineBytes) + `"}}`
	input := []string{
		`not json`, // before initialize
		"{\"jsonrpc\":\"2.0\",\"id\":91,\"method\":\"ping\",\"params\":{\"s\":\"\xff\xfe\"}}",
		huge,
		`42`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":`, // after initialize
		"\xc3\x28",
		huge,
		`{"jsonrpc":"1.0","id":92,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}  `,
		`{"jsonrpc":"2.0","id":4,"method":"ping"}`,
	}
	go func() {
		for _, l := range input {
			if _, err := io.WriteString(in, l+"\n"); err != nil {
				break
			}
		}
		in.Close()
	}()
	var lines []string
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("gateway: %v\nstderr: %s\nstdout:\n%s", err, p.stderr.String(), strings.Join(lines, "\n"))
	}

	codes := map[int]int{} // error code -> answers with a null id
	answered := map[string]string{}
	for _, l := range lines {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stdout line %q: %v", l, err)
		}
		switch {
		case m.Method != "":
		case string(m.ID) == "null" && m.Error != nil:
			codes[m.Error.Code]++
			if m.Error.Code == -32700 && !strings.HasPrefix(m.Error.Message, "parse error: ") {
				t.Errorf("parse error message %q", m.Error.Message)
			}
		default:
			answered[string(m.ID)] = l
		}
	}
	// not json, not UTF-8 (twice), too long (twice), a cut-off object.
	if codes[-32700] != 6 || codes[-32600] != 2 || len(codes) != 2 {
		t.Errorf("null-id errors by code: %v; want 6 parse errors (-32700) and 2 invalid requests (-32600)\n%s", codes, strings.Join(lines, "\n"))
	}
	for _, id := range []string{"1", "2", "3", "4"} {
		if answered[id] == "" || strings.Contains(answered[id], `"error"`) {
			t.Errorf("request %s: answer %q", id, answered[id])
		}
	}
	if !strings.Contains(answered["3"], "still here") {
		t.Errorf("tools/call answer %q", answered["3"])
	}
	for _, id := range []string{"90", "91", "92"} {
		if answered[id] != "" {
			t.Errorf("a bad line was answered as request %s: %s", id, answered[id])
		}
	}
}
