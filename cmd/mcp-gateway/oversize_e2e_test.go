package main

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// procKB reads a kB field (VmRSS, VmHWM) of /proc/<pid>/status.
func procKB(t *testing.T, pid int, key string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatalf("%s: %q", key, v)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", key, pid)
	return 0
}

// TestOversizedResultMemory: a 100 MB result from a stdio server is refused
// with the limit in words; while it is
// read the gateway holds at most the 64 MiB limit of it (its peak RSS grows
// by less than 64 MiB + 32 MiB; growing the line by append peaked at 147
// MB), and the memory is given back (RSS within 32 MiB of where it was;
// it stayed 147 MB up).
func TestOversizedResultMemory(t *testing.T) {
	sb := newTestbox(t)
	r := sb.launch(mcpConfig(t, map[string]any{
		"a": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "a", Tools: []string{"big", "echo"}})},
	}))
	if r.code != 0 {
		t.Fatalf("launch exited %d: %s", r.code, r.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := sb.connect(ctx, nil)
	pid := sb.pid()
	if _, err := fixture.CallText(ctx, cs, "echo", map[string]any{"text": "warm"}); err != nil {
		t.Fatal(err)
	}
	rss0, hwm0 := procKB(t, pid, "VmRSS"), procKB(t, pid, "VmHWM")
	const mib = 1024 // in kB
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"bytes": 100_000_000}})
	if err == nil || !strings.Contains(err.Error(), "result too large: 100000092 bytes exceeds the gateway's 67108864-byte limit") {
		t.Fatalf("a 100 MB result ended with %v; want it refused with the limit", err)
	}
	hwm := procKB(t, pid, "VmHWM")
	t.Logf("RSS before %d MiB, peak %d MiB (peak before %d MiB)", rss0/mib, hwm/mib, hwm0/mib)
	if grew := hwm - rss0; grew > 96*mib {
		t.Errorf("peak RSS grew by %d MiB reading a 100 MB result; want under 64 + 32 MiB", grew/mib)
	}
	waitFor(t, 20*time.Second, "the gateway to give the memory back", func() bool {
		return procKB(t, pid, "VmRSS") < rss0+32*mib
	})
	t.Logf("RSS after %d MiB", procKB(t, pid, "VmRSS")/mib)
}
