package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readmeBlock returns the body of the first fenced block of lang after the
// heading in README.md, so that the documented session is the tested one.
func readmeBlock(t *testing.T, heading, lang string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n"+heading+"\n")
	_, block, ok2 := strings.Cut(after, "```"+lang+"\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatalf("README.md has no ```%s block after %q", lang, heading)
	}
	return block
}

// TestReadmeTryIt runs the README's "Try it" session (the sh block, then
// the TypeScript SDK client) against `serve` as `make run` starts it, with
// only the port and the scratch file moved into the test's directory.
func TestReadmeTryIt(t *testing.T) {
	sb := newTestbox(t)
	// make run's layout: the token in .mcp-gateway/token, relative to the
	// directory the commands run in.
	sb.tokenFile = filepath.Join(sb.dir, ".mcp-gateway", "token")
	cmd := newCmd(gatewayBin, append([]string{"serve"}, sb.flags()...)...)
	cmd.Dir = sb.dir
	cmd.Env = append(os.Environ(), "TMPDIR="+sb.dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	lines := startLines(t, cmd)
	select {
	case l := <-lines:
		if !strings.HasPrefix(l, "mcp-gateway ready on") {
			t.Fatalf("first stdout line %q", l)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve never became ready")
	}
	defer stopServe(t, cmd, 20*time.Second)
	addr := strings.TrimPrefix(sb.url(), "http://")
	localize := func(s string) string {
		s = strings.ReplaceAll(s, "127.0.0.1:50005", addr)
		return strings.ReplaceAll(s, "/tmp/mcp-init", filepath.Join(sb.dir, "mcp-init"))
	}

	sh := exec.Command("/bin/sh", "-e", "-c", localize(readmeBlock(t, "### Try it", "sh")))
	sh.Dir = sb.dir
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("Try it: %v\n%s", err, out)
	}
	// The answers in order, each with what the README says about it.
	got := strings.ReplaceAll(string(out), "\r\n", "\n")
	for _, want := range []string{
		`"status": "ok"`,
		"HTTP/1.1 200 OK\n", "Content-Type: text/event-stream\n", "Mcp-Session-Id: ", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":",
		"\nsession ",
		"HTTP/1.1 202 Accepted\n",
		"HTTP/1.1 200 OK\nContent-Type: application/json\n", `{"jsonrpc":"2.0","id":2,"result":{`, `"name":"run_command"`,
		"HTTP/1.1 200 OK\nContent-Type: application/json\n", `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"exit_code: 0\n--- stdout ---\nhello from the sandbox\n"}]`,
	} {
		i := strings.Index(got, want)
		if i < 0 {
			t.Fatalf("Try it output lacks %q after what came before:\n%s", want, out)
		}
		got = got[i+len(want):]
	}
	if regexp.MustCompile(`session \n`).Match(out) {
		t.Errorf("no session id captured:\n%s", out)
	}

	// The TypeScript example, with test/ts's node_modules.
	ts := tsHarness(t)
	js := filepath.Join(sb.dir, "try-it.mjs")
	if err := os.WriteFile(js, []byte(localize(readmeBlock(t, "### Try it", "js"))), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(ts, "node_modules"), filepath.Join(sb.dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	node := exec.Command("node", js)
	node.Dir = sb.dir
	out, err = node.CombinedOutput()
	if err != nil {
		t.Fatalf("try-it.mjs: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "'run_command'") || !strings.Contains(string(out), "exit_code: 0\n--- stdout ---\nhello\n") {
		t.Errorf("try-it.mjs printed:\n%s", out)
	}
}
