package intercept

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// failingToolsHook writes an exec interceptor whose tools hook fails as
// body does (a shell fragment run after it read its input and left a mark
// that it ran), scoped to the tools echo and env, and returns the config
// and the mark's path.
func failingToolsHook(t *testing.T, body, extra string) (doc, ran string) {
	t.Helper()
	dir := t.TempDir()
	ran = filepath.Join(dir, "ran")
	script := filepath.Join(dir, "tools.sh")
	src := "#!/bin/sh\ncat >/dev/null\n: > " + shellQuote(ran) + "\n" + body + "\n"
	if err := os.WriteFile(script, []byte(src), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd, _ := json.Marshal(script)
	return `{"interceptors":[{"name":"th","type":"exec","command":` + string(cmd) +
		`,"hooks":["tools"],"tools":["echo","env"]` + extra + `}]}`, ran
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// toolsHookFailures are the ways a tools hook fails, each with the timeout
// it runs under: the hook that never answers a short one, the others one no
// loaded machine reaches (answerTimeout), so that each shows its own
// failure.
var toolsHookFailures = []struct{ name, body, timeout string }{
	{"non-zero exit", "echo 'failing on purpose' >&2; exit 3", answerTimeout},
	{"timeout", "while :; do sleep 1; done", hangTimeout},
	{"garbage", "echo 'this is not json'", answerTimeout},
	{"wrong action", `echo '{"action":"deny"}'`, answerTimeout},
}

// TestFailingToolsHookHidesAskedTools: a tools hook that fails, without
// failOpen, hides every tool it was asked about (fail-closed: a policy
// that cannot say what is allowed allows nothing), and only those: a tool
// outside its scope stays offered.
func TestFailingToolsHookHidesAskedTools(t *testing.T) {
	for _, c := range toolsHookFailures {
		t.Run(c.name, func(t *testing.T) {
			doc, ran := failingToolsHook(t, c.body, ","+c.timeout)
			e := engine(t, doc, nil)
			got := names(e.Visible(context.Background(), "srv", []*mcp.Tool{{Name: "echo"}, {Name: "other"}, {Name: "env"}}))
			checkRan(t, c.timeout, ran)
			if got != "other" {
				t.Errorf("visible %q, want only the tool the hook was not asked about (other)", got)
			}
		})
	}
}

// TestFailingToolsHookFailOpen: the same failures with failOpen hide
// nothing.
func TestFailingToolsHookFailOpen(t *testing.T) {
	for _, c := range toolsHookFailures {
		t.Run(c.name, func(t *testing.T) {
			doc, ran := failingToolsHook(t, c.body, ","+c.timeout+`,"failOpen":true`)
			e := engine(t, doc, nil)
			got := names(e.Visible(context.Background(), "srv", []*mcp.Tool{{Name: "echo"}, {Name: "other"}, {Name: "env"}}))
			checkRan(t, c.timeout, ran)
			if got != "echo,other,env" {
				t.Errorf("visible %q, want every tool (failOpen)", got)
			}
		})
	}
}

// checkRan fails the test when the hook's command did not run. The one
// that never answers may time out before a loaded machine starts its
// shell, so its run is not required.
func checkRan(t *testing.T, timeout, ran string) {
	t.Helper()
	if timeout == hangTimeout {
		return
	}
	if _, err := os.Stat(ran); err != nil {
		t.Fatalf("the tools hook never ran: %v", err)
	}
}

// TestHungHookKilledWhole: a hook that never answers is killed at its
// timeout with every process it started (its process group), not only the
// shell the gateway ran: a child left behind would run on forever.
func TestHungHookKilledWhole(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	doc, _ := failingToolsHook(t, "sleep 600 & echo $! > "+shellQuote(pidFile)+"; wait", ","+hangTimeout)
	e := engine(t, doc, nil)
	deadline := time.Now().Add(60 * time.Second)
	var pid int
	for pid == 0 && time.Now().Before(deadline) {
		// The hook may time out before a loaded machine started its
		// child: ask again until one did.
		e.Visible(context.Background(), "srv", []*mcp.Tool{{Name: "echo"}})
		if b, err := os.ReadFile(pidFile); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
	}
	if pid == 0 {
		t.Fatal("the hook never started its child")
	}
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the hook's child %d outlived the hook's timeout", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
