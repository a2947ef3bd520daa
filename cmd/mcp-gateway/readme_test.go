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

// readmeBlocks returns the bodies of the fenced blocks of lang in the README
// section that starts with heading and ends at the next heading of the same
// level, in order, so that the documented commands are the tested ones. It
// fails the test when the section has fewer than want such blocks.
func readmeBlocks(t *testing.T, heading, lang string, want int) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no heading %q", heading)
	}
	level := heading[:strings.Index(heading, " ")+1]
	section, _, _ = strings.Cut(section, "\n"+level)
	var blocks []string
	for {
		var block string
		var found bool
		if _, section, found = strings.Cut(section, "```"+lang+"\n"); !found {
			break
		}
		if block, section, found = strings.Cut(section, "```"); !found {
			t.Fatalf("README.md: an unclosed ```%s block under %q", lang, heading)
		}
		blocks = append(blocks, block)
	}
	if len(blocks) < want {
		t.Fatalf("README.md has %d ```%s blocks under %q, want %d", len(blocks), lang, heading, want)
	}
	return blocks
}

// startReadmeServe starts `serve` as `make run` does (the token in
// .mcp-gateway/token, relative to the directory the README's commands run
// in), with extra arguments and environment, and waits until it is ready.
// It returns the first stdout line and a function that rewrites the
// README's address and scratch file to the test's own.
func startReadmeServe(t *testing.T, sb *testbox, env []string, args ...string) (string, func(string) string) {
	t.Helper()
	sb.tokenFile = filepath.Join(sb.dir, ".mcp-gateway", "token")
	cmd := newCmd(gatewayBin, append(append([]string{"serve"}, sb.flags()...), args...)...)
	cmd.Dir = sb.dir
	cmd.Env = append(append(os.Environ(), "TMPDIR="+sb.dir), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	lines := startLines(t, cmd)
	var ready string
	select {
	case ready = <-lines:
		if !strings.HasPrefix(ready, "mcp-gateway ready on") {
			t.Fatalf("first stdout line %q", ready)
		}
	case <-time.After(150 * time.Second):
		t.Fatal("serve never became ready")
	}
	t.Cleanup(func() { stopServe(t, cmd, 20*time.Second) })
	addr := strings.TrimPrefix(sb.url(), "http://")
	return ready, func(s string) string {
		s = strings.ReplaceAll(s, "127.0.0.1:50005", addr)
		return strings.ReplaceAll(s, "/tmp/mcp-init", filepath.Join(sb.dir, "mcp-init"))
	}
}

// runReadmeShell runs README shell text in dir with sh -e and returns what
// it printed, carriage returns dropped.
func runReadmeShell(t *testing.T, dir, script string) string {
	t.Helper()
	sh := exec.Command("/bin/sh", "-e", "-c", script)
	sh.Dir = dir
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("README commands: %v\n%s", err, out)
	}
	return strings.ReplaceAll(string(out), "\r\n", "\n")
}

// inOrder fails the test unless every want occurs in got, each after the
// one before.
func inOrder(t *testing.T, got string, wants ...string) {
	t.Helper()
	rest := got
	for _, want := range wants {
		i := strings.Index(rest, want)
		if i < 0 {
			t.Fatalf("output lacks %q after what came before:\n%s", want, got)
		}
		rest = rest[i+len(want):]
	}
}

// TestReadmeTryIt runs the README's "Try it" session (the first sh block,
// then the TypeScript SDK client) against `serve` as `make run` starts it,
// with only the port and the scratch file moved into the test's directory.
func TestReadmeTryIt(t *testing.T) {
	sb := newTestbox(t)
	_, localize := startReadmeServe(t, sb, nil)
	sh := readmeBlocks(t, "## Try it", "sh", 1)[0]
	out := runReadmeShell(t, sb.dir, localize(sh))
	// The answers in order, each with what the README says about it.
	inOrder(t, out,
		`"status": "ok"`,
		"HTTP/1.1 200 OK\n", "Content-Type: text/event-stream\n", "Mcp-Session-Id: ", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":",
		`"serverInfo":{"name":"mcp-gateway"`,
		"\nsession ",
		"HTTP/1.1 202 Accepted\n",
		"HTTP/1.1 200 OK\nContent-Type: application/json\n", `{"jsonrpc":"2.0","id":2,"result":{`, `"name":"run_command"`,
		"HTTP/1.1 200 OK\nContent-Type: application/json\n", `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"exit_code: 0\n--- stdout ---\nhello from the sandbox\n"}]`,
		`"structuredContent":{"exit_code":0,"stdout":"hello from the sandbox\n",`,
	)
	if regexp.MustCompile(`session \n`).MatchString(out) {
		t.Errorf("no session id captured:\n%s", out)
	}

	// The TypeScript example, with test/ts's node_modules.
	ts := tsHarness(t)
	js := filepath.Join(sb.dir, "try-it.mjs")
	if err := os.WriteFile(js, []byte(localize(readmeBlocks(t, "## Try it", "js", 1)[0])), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(ts, "node_modules"), filepath.Join(sb.dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	node := exec.Command("node", js)
	node.Dir = sb.dir
	nodeOut, err := node.CombinedOutput()
	if err != nil {
		t.Fatalf("try-it.mjs: %v\n%s", err, nodeOut)
	}
	if !strings.Contains(string(nodeOut), "'run_command'") || !strings.Contains(string(nodeOut), "exit_code: 0\n--- stdout ---\nhello\n") {
		t.Errorf("try-it.mjs printed:\n%s", nodeOut)
	}
}

// TestReadmeNodeOnly runs the README's catalog example that needs Node alone:
// `make run CONFIG=...` with test/ts's bin directory on PATH (so the gateway
// starts the pinned packages `make test-deps` installed, as it would ones
// `mcp-gateway pull` installed), then the first Try it block and the new
// session's block in one shell, as a user at one terminal runs them.
func TestReadmeNodeOnly(t *testing.T) {
	ts := tsHarness(t)
	blocks := readmeBlocks(t, "## Try it", "sh", 3)
	start, session := blocks[1], blocks[2]
	const pathLine = `PATH="$PWD/test/ts/node_modules/.bin:$PATH" \`
	if !strings.HasPrefix(start, "make test-deps\n"+pathLine+"\n") {
		t.Fatalf("the Node-only start block is not `make test-deps` then %s:\n%s", pathLine, start)
	}
	m := regexp.MustCompile(`(?m)^  make run CONFIG='([^']*)'$`).FindStringSubmatch(start)
	if m == nil {
		t.Fatalf("no `make run CONFIG='...'` line in:\n%s", start)
	}
	// make run passes CONFIG on as --config; the test does the same.
	mk, err := os.ReadFile(filepath.Join(repoRoot(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), "$(if $(CONFIG),--config '$(CONFIG)')") {
		t.Fatal("the Makefile's run target does not pass CONFIG as --config")
	}
	sb := newTestbox(t)
	path := "PATH=" + filepath.Join(ts, "node_modules", ".bin") + ":" + os.Getenv("PATH")
	ready, localize := startReadmeServe(t, sb, []string{path}, "--config", m[1])
	if !strings.Contains(ready, "(3 servers, 42 tools)") {
		t.Errorf("ready line %q; the README says (3 servers, 42 tools)", ready)
	}
	out := runReadmeShell(t, sb.dir, localize(readmeBlocks(t, "## Try it", "sh", 1)[0]+"\n"+session))
	inOrder(t, out,
		// The first block against this gateway: memory's tools are listed.
		`{"jsonrpc":"2.0","id":2,"result":{`, `"name":"read_graph"`,
		// The new session.
		"Mcp-Session-Id: ", "\nsession ", "HTTP/1.1 202 Accepted\n",
		`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"Echo: hello from Node"}]}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"Allowed directories:\n/tmp"}]`,
	)
}
