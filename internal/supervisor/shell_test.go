package supervisor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

func TestShellLine(t *testing.T) {
	cases := map[string]string{
		"node dist/index.js":          "exec node dist/index.js",
		"  python -m server --stdio ": "exec python -m server --stdio",
		"'/opt/my server/bin' --x 1":  "exec '/opt/my server/bin' --x 1",
		"npm ci && node x.js":         "npm ci && node x.js",
		"FOO=1 node x.js":             "FOO=1 node x.js",
		"node x.js > /tmp/log":        "node x.js > /tmp/log",
		"cd dir; ./run":               "cd dir; ./run",
		"node $HOME/x.js":             "node $HOME/x.js",
		"exec node x.js":              "exec node x.js",
		"a | b":                       "a | b",
		"sleep 1 &":                   "sleep 1 &",
	}
	for in, want := range cases {
		if got := shellLine(in); got != want {
			t.Errorf("shellLine(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestShellLineExecReplacesShell checks with a real /bin/sh that the server
// becomes the shell's process: its pid is the one the supervisor started.
func TestShellLineExecReplacesShell(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", shellLine("cat /proc/self/stat"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.Fields(string(out))[0]
	if want := strings.TrimSpace(itoa(cmd.Process.Pid)); pid != want {
		t.Errorf("server ran as pid %s, want the shell's own pid %s (exec)", pid, want)
	}
}

func TestDirectCommand(t *testing.T) {
	cases := []struct {
		in      string
		argv    []string
		assigns []string
		ok      bool
	}{
		{in: "node dist/index.js", argv: []string{"node", "dist/index.js"}, ok: true},
		{in: "  python -m server\t--stdio ", argv: []string{"python", "-m", "server", "--stdio"}, ok: true},
		{in: "'/opt/my server/bin' --x \"a b\" c'd'e", argv: []string{"/opt/my server/bin", "--x", "a b", "cde"}, ok: true},
		{in: "FOO=1 BAR='x y' node x.js", argv: []string{"node", "x.js"}, assigns: []string{"FOO=1", "BAR=x y"}, ok: true},
		{in: "node --opt=1 X=2", argv: []string{"node", "--opt=1", "X=2"}, ok: true},
		{in: "'FOO'=1 node", argv: []string{"FOO=1", "node"}, ok: true}, // a quoted name is no assignment
		{in: "1X=2 node", argv: []string{"1X=2", "node"}, ok: true},
		{in: "FOO=1", ok: false},
		{in: "exec node x.js", ok: false},
		{in: "npm ci && node x.js", ok: false},
		{in: "node $HOME/x.js", ok: false},
		{in: "node 'unterminated", ok: false},
		{in: "node x.js > log", ok: false},
		{in: "it\\'s", ok: false},
		{in: "", ok: false},
		{in: "''", ok: false},
		{in: "node '-run=^$' 'a;b' '\\'", argv: []string{"node", "-run=^$", "a;b", "\\"}, ok: true}, // literal in single quotes
		{in: `node "$HOME"`, ok: false},
		{in: `node "a;b"`, argv: []string{"node", "a;b"}, ok: true},
	}
	for _, c := range cases {
		argv, assigns, ok := directCommand(c.in)
		if ok != c.ok || strings.Join(argv, "|") != strings.Join(c.argv, "|") || strings.Join(assigns, "|") != strings.Join(c.assigns, "|") {
			t.Errorf("directCommand(%q) = %q, %q, %v; want %q, %q, %v", c.in, argv, assigns, ok, c.argv, c.assigns, c.ok)
		}
	}
}

func TestFindProgram(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("script", "#!/bin/sh\necho hi\n", 0o755)
	write("bare", "echo hi\n", 0o755)   // no #!: only a shell runs it
	write("data", "#!/bin/sh\n", 0o644) // not executable
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	// Earlier in PATH than dir: a script without #! shadows dir's "script"
	// (the shell would run it), a non-executable "data" does not.
	shadow := t.TempDir()
	if err := os.WriteFile(filepath.Join(shadow, "shadowed"), []byte("echo from shadow\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("shadowed", "#!/bin/sh\necho from dir\n", 0o755)
	env := []string{"PATH=/nonexistent", "PATH=" + shadow + ":" + dir + ":" + filepath.Dir(sh)}
	cases := map[string]struct {
		want string
		ok   bool
	}{
		"script":   {filepath.Join(dir, "script"), true}, // the last PATH wins
		"./script": {filepath.Join(dir, "script"), true}, // relative to dir
		"sh":       {filepath.Join(filepath.Dir(sh), "sh"), true},
		"bare":     {"", false},
		"data":     {"", false},
		"missing":  {"", false},
		"./bare":   {"", false},
		"shadowed": {"", false}, // the first match is no binary: the shell runs it
	}
	for name, c := range cases {
		got, ok := findProgram(name, dir, env)
		if ok != c.ok || got != c.want {
			t.Errorf("findProgram(%q) = %q, %v; want %q, %v", name, got, ok, c.want, c.ok)
		}
	}
}

// TestDirectCommandStartsWithoutShell starts a real server whose runCmd has
// VAR=value assignments in front (as fixture.ShellCommand writes it) through
// the supervisor: the process it reports is the server itself, not a shell,
// and the assignments reached it.
func TestDirectCommandStartsWithoutShell(t *testing.T) {
	shell := "GREETING='hello there' " + fixture.ShellCommand(fixture.Options{Tools: []string{"env"}})
	s, _ := runSpec(t, catalog.ServerSpec{Name: "direct", Kind: catalog.KindLocal, Shell: shell}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", s.Status().PID))
	if err != nil {
		t.Fatal(err)
	}
	if self, _ := os.Executable(); exe != self {
		t.Errorf("the supervised process runs %s, want the server %s itself", exe, self)
	}
	var text string
	err = s.Do(ctx, func(cs *mcp.ClientSession) error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "env", Arguments: map[string]any{"name": "GREETING"}})
		if err == nil && len(res.Content) > 0 {
			text = res.Content[0].(*mcp.TextContent).Text
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if text != "hello there" {
		t.Errorf("GREETING = %q in the server, want %q", text, "hello there")
	}
}
