package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sandboxTools are the built-in sandbox server's tools, sorted.
var sandboxTools = []string{"edit_file", "list_directory", "read_file", "run_command", "write_file"}

// sandboxClient calls the built-in sandbox server's tools through a gateway.
type sandboxClient struct {
	t   *testing.T
	ctx context.Context
	cs  *mcp.ClientSession
}

// call calls tool and fails the test on a protocol error; a tool error
// (IsError) is returned for the test to check.
func (c sandboxClient) call(tool string, args map[string]any) *mcp.CallToolResult {
	c.t.Helper()
	res, err := c.cs.CallTool(c.ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		c.t.Fatalf("%s: %v", tool, err)
	}
	return res
}

// ok calls tool, requires success, and decodes its structured result.
func (c sandboxClient) ok(tool string, args map[string]any, out any) *mcp.CallToolResult {
	c.t.Helper()
	res := c.call(tool, args)
	if res.IsError {
		c.t.Fatalf("%s(%v) failed: %s", tool, args, text(c.t, res))
	}
	if out != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			c.t.Fatalf("%s structured result %s: %v", tool, b, err)
		}
	}
	return res
}

// toolError calls tool, requires a tool error, and returns its text.
func (c sandboxClient) toolError(tool string, args map[string]any) string {
	c.t.Helper()
	res := c.call(tool, args)
	if !res.IsError {
		c.t.Fatalf("%s(%v) succeeded, want a tool error: %s", tool, args, text(c.t, res))
	}
	return text(c.t, res)
}

type runResult struct {
	ExitCode  int    `json:"exit_code"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	TimedOut  bool   `json:"timed_out"`
	Truncated bool   `json:"truncated"`
}

type readResult struct {
	Content  string `json:"content"`
	Encoding string `json:"encoding"`
	Length   int64  `json:"length"`
	EOF      bool   `json:"eof"`
}

// TestBuiltinSandboxThroughGateway exercises every tool of the built-in
// sandbox server as an agent reaches it: through a launched gateway, which
// runs it as `mcp-gateway builtin sandbox`.
func TestBuiltinSandboxThroughGateway(t *testing.T) {
	sb := newTestbox(t)
	work := filepath.Join(sb.dir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	// Background output files land in TMPDIR: keep them in the test's dir.
	sb.env = append(sb.env, "TMPDIR="+sb.dir)
	r := sb.mustLaunch(`{"sandbox": {}}`)
	if !strings.Contains(r.stdout, "(1 server, 5 tools)") {
		t.Errorf("launch said %q", r.stdout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := sandboxClient{t: t, ctx: ctx, cs: sb.connect(ctx, nil)}
	names := toolNames(t, ctx, c.cs)
	slices.Sort(names)
	if !slices.Equal(names, sandboxTools) {
		t.Fatalf("tools %v, want %v", names, sandboxTools)
	}

	t.Run("run_command", func(t *testing.T) {
		c.t = t
		var out runResult
		res := c.ok("run_command", map[string]any{"command": "pwd; echo to-stderr >&2; exit 3", "workdir": work}, &out)
		if out.ExitCode != 3 || out.Stdout != work+"\n" || out.Stderr != "to-stderr\n" || out.TimedOut || out.Truncated {
			t.Errorf("result %+v", out)
		}
		if s := text(t, res); !strings.HasPrefix(s, "exit_code: 3\n") {
			t.Errorf("text %q", s)
		}
		if s := c.toolError("run_command", map[string]any{"command": "true", "workdir": filepath.Join(work, "missing")}); !strings.Contains(s, filepath.Join(work, "missing")) || !strings.Contains(s, "no such file or directory") {
			t.Errorf("missing workdir: %q", s)
		}
	})

	t.Run("run_command timeout", func(t *testing.T) {
		c.t = t
		// The shell starts a grandchild and waits: the timeout must kill the
		// whole process group, not only the shell.
		var out runResult
		c.ok("run_command", map[string]any{"command": "sleep 300 & echo $!; wait", "timeout_ms": 500}, &out)
		if !out.TimedOut || out.ExitCode != 128+9 {
			t.Fatalf("result %+v, want timed_out and exit 137", out)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(out.Stdout))
		if err != nil {
			t.Fatalf("stdout %q: %v", out.Stdout, err)
		}
		for alive(pid) {
			select {
			case <-ctx.Done():
				t.Fatalf("the command's child %d survived the timeout", pid)
			case <-time.After(20 * time.Millisecond):
			}
		}
		if s := c.toolError("run_command", map[string]any{"command": "true", "timeout_ms": 24 * 3600 * 1000}); !strings.Contains(s, "exceeds the maximum") {
			t.Errorf("huge timeout: %q", s)
		}
	})

	t.Run("run_command truncation", func(t *testing.T) {
		c.t = t
		const total, limit = 200000, 64 << 10
		var out runResult
		c.ok("run_command", map[string]any{"command": fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x", total)}, &out)
		wantTail := fmt.Sprintf("\n[... truncated %d bytes]", total-limit)
		if !out.Truncated || !strings.HasSuffix(out.Stdout, wantTail) || strings.Count(out.Stdout, "x") != limit {
			t.Errorf("truncated=%v, %d x's, tail %q; want %d x's and %q", out.Truncated, strings.Count(out.Stdout, "x"), out.Stdout[max(0, len(out.Stdout)-40):], limit, wantTail)
		}
		if out.Stderr != "" || out.ExitCode != 0 {
			t.Errorf("stderr %q exit %d", out.Stderr, out.ExitCode)
		}
	})

	t.Run("run_command background", func(t *testing.T) {
		c.t = t
		var out struct {
			PID        int    `json:"pid"`
			OutputPath string `json:"output_path"`
		}
		c.ok("run_command", map[string]any{"command": "echo started; sleep 0.2; echo finished", "background": true}, &out)
		if out.PID <= 0 || !strings.HasPrefix(out.OutputPath, sb.dir) {
			t.Fatalf("background result %+v (want an output file under %s)", out, sb.dir)
		}
		for {
			var rd readResult
			c.ok("read_file", map[string]any{"path": out.OutputPath}, &rd)
			if rd.Content == "started\nfinished\n" {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("background output never completed: %q", rd.Content)
			case <-time.After(50 * time.Millisecond):
			}
		}
	})

	t.Run("write_file and read_file", func(t *testing.T) {
		c.t = t
		path := filepath.Join(work, "new", "deeper", "notes.txt")
		c.ok("write_file", map[string]any{"path": path, "content": "line1\nline2\n", "mode": "0600"}, nil)
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("written file: %v %v", fi, err)
		}
		var rd readResult
		res := c.ok("read_file", map[string]any{"path": path, "offset": 6, "limit": 5}, &rd)
		if rd.Content != "line2" || rd.Encoding != "utf-8" || rd.EOF {
			t.Errorf("partial read %+v", rd)
		}
		if s := text(t, res); !strings.Contains(s, "read again with offset 11") {
			t.Errorf("partial read text %q", s)
		}
	})

	t.Run("binary file", func(t *testing.T) {
		c.t = t
		data := []byte{0x89, 'P', 'N', 'G', 0x00, 0xff, 0xfe, 0x01, 0x80}
		made := filepath.Join(work, "image.png")
		if err := os.WriteFile(made, data, 0o644); err != nil {
			t.Fatal(err)
		}
		var rd readResult
		c.ok("read_file", map[string]any{"path": made}, &rd)
		if got, err := base64.StdEncoding.DecodeString(rd.Content); rd.Encoding != "base64" || err != nil || !bytes.Equal(got, data) || rd.Length != int64(len(data)) || !rd.EOF {
			t.Errorf("binary read %+v", rd)
		}
		// And the other way: base64 in, exact bytes on disk.
		written := filepath.Join(work, "copy.bin")
		c.ok("write_file", map[string]any{"path": written, "content": base64.StdEncoding.EncodeToString(data), "encoding": "base64"}, nil)
		if got, err := os.ReadFile(written); err != nil || !bytes.Equal(got, data) {
			t.Errorf("base64 write produced %v %v", got, err)
		}
	})

	t.Run("missing path", func(t *testing.T) {
		c.t = t
		missing := filepath.Join(work, "no-such-file.txt")
		for tool, args := range map[string]map[string]any{
			"read_file":      {"path": missing},
			"list_directory": {"path": missing},
			"edit_file":      {"path": missing, "old_text": "a", "new_text": "b"},
		} {
			s := c.toolError(tool, args)
			if !strings.HasPrefix(s, tool+": "+missing+": ") || !strings.Contains(s, "no such file or directory") {
				t.Errorf("%s of a missing path: %q", tool, s)
			}
		}
		if s := c.toolError("read_file", map[string]any{"path": work}); !strings.Contains(s, "is a directory") {
			t.Errorf("read_file of a directory: %q", s)
		}
	})

	t.Run("list_directory", func(t *testing.T) {
		c.t = t
		var out struct {
			Entries []struct {
				Name string `json:"name"`
				Type string `json:"type"`
				Size int64  `json:"size"`
			} `json:"entries"`
		}
		c.ok("list_directory", map[string]any{"path": work}, &out)
		got := map[string]string{}
		for _, e := range out.Entries {
			got[e.Name] = e.Type
		}
		for name, typ := range map[string]string{"new": "dir", "image.png": "file", "copy.bin": "file"} {
			if got[name] != typ {
				t.Errorf("entry %s: type %q, want %q (all: %v)", name, got[name], typ, got)
			}
		}
	})

	t.Run("edit_file", func(t *testing.T) {
		c.t = t
		path := filepath.Join(work, "edit.txt")
		if err := os.WriteFile(path, []byte("a = 1\nb = 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if s := c.toolError("edit_file", map[string]any{"path": path, "old_text": "= 1", "new_text": "= 2"}); !strings.Contains(s, "found 2 occurrences") {
			t.Errorf("ambiguous edit: %q", s)
		}
		if s := c.toolError("edit_file", map[string]any{"path": path, "old_text": "c = 1", "new_text": "c = 2"}); !strings.Contains(s, "old_text not found") {
			t.Errorf("edit of absent text: %q", s)
		}
		if b, _ := os.ReadFile(path); string(b) != "a = 1\nb = 1\n" {
			t.Fatalf("a refused edit changed the file: %q", b)
		}
		var out struct {
			Replacements int `json:"replacements"`
		}
		c.ok("edit_file", map[string]any{"path": path, "old_text": "= 1", "new_text": "= 2", "expected_replacements": 2}, &out)
		if b, _ := os.ReadFile(path); string(b) != "a = 2\nb = 2\n" || out.Replacements != 2 {
			t.Errorf("after edit: %q, %d replacements", b, out.Replacements)
		}
	})
}

// TestServeWithoutConfig: `mcp-gateway serve` with no config serves the
// built-in sandbox server, which needs nothing installed, and stops cleanly.
func TestServeWithoutConfig(t *testing.T) {
	sb := newTestbox(t)
	cmd := newCmd(gatewayBin, append([]string{"serve"}, sb.flags()...)...)
	cmd.Dir = sb.dir
	cmd.Env = append(os.Environ(), "GATEWAY_ACCESS_TOKEN="+sb.token, "TMPDIR="+sb.dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	lines := startLines(t, cmd)
	select {
	case l := <-lines:
		if !strings.HasPrefix(l, "mcp-gateway ready on") || !strings.Contains(l, "(1 server, 5 tools)") {
			t.Fatalf("first stdout line %q", l)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve never became ready")
	}
	code, h := sb.health()
	if code != 200 || h.Status != "ok" || len(h.Servers) != 1 || h.Servers[0].Name != "sandbox" || h.Servers[0].State != "ready" || h.Servers[0].Tools != 5 {
		t.Fatalf("health %d %+v", code, h)
	}
	// A request without the token is told where this gateway's token is
	// (make run's .mcp-gateway/token, not the sandbox's path).
	resp, err := http.Post(sb.url()+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "(the token is in "+sb.tokenFile+")") {
		t.Errorf("without a token: HTTP %d %s; want 401 naming %s", resp.StatusCode, body, sb.tokenFile)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := sb.connect(ctx, nil)
	names := toolNames(t, ctx, cs)
	slices.Sort(names)
	if !slices.Equal(names, sandboxTools) {
		t.Fatalf("tools %v", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "echo from-the-default-server"}})
	if err != nil || !strings.Contains(text(t, res), "from-the-default-server") {
		t.Fatalf("run_command: %v %v", res, err)
	}
	cs.Close()
	stopServe(t, cmd, 20*time.Second)
	if pid := h.Servers[0].PID; alive(pid) {
		t.Errorf("sandbox server pid %d still alive", pid)
	}
}
