package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveEnv, when set in the environment, turns the test binary into a
// sandbox server: TestMain decodes Options from it and runs Run on stdio.
const serveEnv = "SANDBOX_TEST_SERVE_OPTIONS"

func TestMain(m *testing.M) {
	if raw, ok := os.LookupEnv(serveEnv); ok {
		var opts Options
		if err := json.Unmarshal([]byte(raw), &opts); err != nil {
			fmt.Fprintln(os.Stderr, "decode options:", err)
			os.Exit(2)
		}
		if err := Run(context.Background(), os.Stdin, os.Stdout, opts); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// harness is one sandbox server child process and a client session to it.
type harness struct {
	t       *testing.T
	cs      *mcp.ClientSession
	cmd     *exec.Cmd
	stderr  *lockedBuffer
	workdir string
	bgdir   string
	once    sync.Once
}

// startServer re-executes the test binary as a sandbox server with opts,
// filling Workdir and BackgroundDir with fresh temporary directories when
// empty. The child is stopped and reaped when the test ends, and must exit
// cleanly: a data race in it (under -race) makes it exit non-zero.
func startServer(t *testing.T, opts Options) *harness {
	t.Helper()
	if opts.Workdir == "" {
		opts.Workdir = t.TempDir()
	}
	if opts.BackgroundDir == "" {
		opts.BackgroundDir = t.TempDir()
	}
	raw, err := json.Marshal(opts)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, stderr: &lockedBuffer{}, workdir: opts.Workdir, bgdir: opts.BackgroundDir}
	h.cmd = exec.Command(exe)
	// A race-enabled binary sleeps 1 s on exit by default; every test
	// stops a server, so skip that wait in the child.
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	h.cmd.Env = append(os.Environ(), serveEnv+"="+string(raw), "GORACE="+gorace)
	h.cmd.Stderr = h.stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "sandbox-test", Version: "0"}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	h.cs, err = client.Connect(ctx, &mcp.CommandTransport{Command: h.cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		if h.cmd.Process != nil {
			_ = h.cmd.Process.Kill()
			_ = h.cmd.Wait()
		}
		t.Fatalf("connect to sandbox server: %v; stderr: %s", err, h.stderr)
	}
	t.Cleanup(h.close)
	return h
}

// close closes the session, which closes the child's stdin and waits for it
// to exit, and checks that it exited cleanly. It is idempotent.
func (h *harness) close() {
	h.once.Do(func() {
		if err := h.cs.Close(); err != nil {
			h.t.Errorf("close session: %v; server stderr: %s", err, h.stderr)
		}
		if ps := h.cmd.ProcessState; ps == nil || !ps.Success() {
			h.t.Errorf("sandbox server did not exit cleanly: %v; stderr: %s", ps, h.stderr)
		}
	})
}

// call calls a tool and fails the test on a protocol error: every user
// mistake must come back as a tool result.
func (h *harness) call(name string, args any) *mcp.CallToolResult {
	h.t.Helper()
	res, err := h.cs.CallTool(h.t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		h.t.Fatalf("%s: protocol error: %v", name, err)
	}
	return res
}

// ok calls a tool that must succeed and decodes its structured content.
func ok[T any](h *harness, name string, args any) (T, string) {
	h.t.Helper()
	var out T
	res := h.call(name, args)
	if res.IsError {
		h.t.Fatalf("%s(%v): unexpected tool error: %s", name, args, textOf(res))
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		h.t.Fatalf("%s: decode structured content %s: %v", name, raw, err)
	}
	return out, textOf(res)
}

// toolError calls a tool that must fail and returns the error text.
func (h *harness) toolError(name string, args any) string {
	h.t.Helper()
	res := h.call(name, args)
	if !res.IsError {
		h.t.Fatalf("%s(%v): want a tool error, got %s", name, args, textOf(res))
	}
	return textOf(res)
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// processGone reports whether pid has exited: it no longer exists or is a
// zombie waiting for a parent that is not ours to reap it.
func processGone(pid int) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	i := bytes.LastIndexByte(raw, ')')
	if err != nil || i < 0 || i+2 >= len(raw) {
		return false
	}
	state := raw[i+2]
	return state == 'Z' || state == 'X'
}

// eventually polls cond until it holds. The bound is generous: it is there
// so that a broken build fails with a message instead of hanging, not to
// measure speed.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestToolsAreListed(t *testing.T) {
	t.Parallel()
	h := startServer(t, Options{})
	if got := h.cs.InitializeResult().ServerInfo.Name; got != "sandbox" {
		t.Errorf("server name = %q, want sandbox", got)
	}
	var names []string
	for tool, err := range h.cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
		if tool.Description == "" {
			t.Errorf("tool %s has no description", tool.Name)
		}
	}
	slices.Sort(names)
	want := []string{"edit_file", "list_directory", "read_file", "run_command", "write_file"}
	if !slices.Equal(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}
}

func TestBadArgumentsAreToolErrors(t *testing.T) {
	t.Parallel()
	h := startServer(t, Options{})
	// Missing required field and wrong type: the SDK's schema validation
	// must answer with a tool error, not a protocol error.
	if msg := h.toolError("read_file", map[string]any{}); !strings.Contains(msg, "path") {
		t.Errorf("missing path: error %q does not mention path", msg)
	}
	if msg := h.toolError("run_command", map[string]any{"command": 5}); !strings.Contains(msg, "command") {
		t.Errorf("wrong type: error %q does not mention command", msg)
	}
}
