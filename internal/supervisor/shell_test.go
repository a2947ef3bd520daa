package supervisor

import (
	"os/exec"
	"strings"
	"testing"
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
