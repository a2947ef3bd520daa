package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// helpFlags runs `mcp-gateway <args> -h` in-process and returns the flags
// its help documents, with the text after each flag's name.
func helpFlags(t *testing.T, args ...string) (names []string, help string) {
	t.Helper()
	var out, errb bytes.Buffer
	if err := run(context.Background(), append(args, "-h"), &out, &errb); err != nil {
		t.Fatalf("%v -h: %v", args, err)
	}
	help = out.String() + errb.String()
	if !strings.HasPrefix(help, "Usage: mcp-gateway") {
		t.Errorf("%v -h does not start with a usage line:\n%s", args, help)
	}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z-]+)`).FindAllStringSubmatch(help, -1) {
		names = append(names, m[1])
	}
	return names, help
}

// TestHelpListsWhatEachCommandAccepts: `stdio -h` documents exactly the
// flags stdio accepts, with the log on stderr by default; `serve -h` hides
// the internal -daemon; every flag serve documents that stdio does not is
// refused by stdio.
func TestHelpListsWhatEachCommandAccepts(t *testing.T) {
	stdio, stdioHelp := helpFlags(t, "stdio")
	slices.Sort(stdio)
	want := slices.Clone(stdioFlags())
	slices.Sort(want)
	if !slices.Equal(stdio, want) {
		t.Errorf("stdio -h documents %v, want the flags stdio accepts %v", stdio, want)
	}
	if !strings.Contains(stdioHelp, `(default "stderr")`) || strings.Contains(stdioHelp, defaultLogFile) {
		t.Errorf("stdio -h should show --log-file defaulting to stderr:\n%s", stdioHelp)
	}

	serve, serveHelp := helpFlags(t, "serve")
	if slices.Contains(serve, "daemon") || strings.Contains(serveHelp, "internal") {
		t.Errorf("serve -h shows the internal -daemon flag:\n%s", serveHelp)
	}
	for _, f := range []string{"listen", "token-file", "pid-file", "max-body-bytes"} {
		if !slices.Contains(serve, f) {
			t.Errorf("serve -h lacks --%s", f)
		}
	}
	_, serveSet, err := parseFlags(command{name: "serve"}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range serve {
		if slices.Contains(stdio, f) {
			continue
		}
		// A valid value (the default), so that only the flag is at fault.
		err := run(context.Background(), []string{"stdio", "--" + f + "=" + serveSet.Lookup(f).DefValue}, io.Discard, io.Discard)
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--"+f+" does not apply to stdio") {
			t.Errorf("stdio --%s: %v, want a usage error naming the flag", f, err)
		}
	}

	launch, launchHelp := helpFlags(t, "--config", "{}")
	if slices.Contains(launch, "daemon") || !slices.Contains(launch, "log-file") || !strings.Contains(launchHelp, defaultLogFile) {
		t.Errorf("launch -h: want --log-file defaulting to %s and no -daemon:\n%s", defaultLogFile, launchHelp)
	}
}

// TestEveryCommandHasHelp: -h of every command prints its usage and
// exits 0, not an error.
func TestEveryCommandHasHelp(t *testing.T) {
	for _, args := range [][]string{{"serve"}, {"stdio"}, {"--config", "{}"}, {"catalog"}, {"pull"}, {"builtin"}, {}} {
		var out, errb bytes.Buffer
		err := run(context.Background(), append(args, "-h"), &out, &errb)
		if err != nil || !strings.Contains(out.String()+errb.String(), "sage") {
			t.Errorf("mcp-gateway %v -h: %v\n%s%s", args, err, out.String(), errb.String())
		}
	}
}

// TestVersionFromBuildInfo: the version line carries the module version,
// the VCS revision and the toolchain from the build info.
func TestVersionFromBuildInfo(t *testing.T) {
	info := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-12-01T10:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		}}, true
	}
	b := readBuildInfo(info)
	if got, want := b.String(), "mcp-gateway v1.4.0 (rev 0123456789abcdef0123456789abcdef01234567, 2026-12-01T10:00:00Z, modified; go1.26.8)"; got != want {
		t.Errorf("version line\n got %s\nwant %s", got, want)
	}
	if b.serverVersion() != "v1.4.0" {
		t.Errorf("serverInfo version %q, want v1.4.0", b.serverVersion())
	}
	devel := readBuildInfo(func() (*debug.BuildInfo, bool) { return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true })
	if devel.serverVersion() != "dev" || !strings.Contains(devel.String(), "(devel)") {
		t.Errorf("devel build: %q, serverInfo %q", devel.String(), devel.serverVersion())
	}

	// The real binary says what `go version -m` reads from it.
	out, err := exec.Command(gatewayBin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	meta, err := exec.Command("go", "version", "-m", gatewayBin).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(meta), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 3 && f[0] == "mod" && f[1] == "github.com/mcp-gateway/mcp-gateway" && !strings.Contains(string(out), " "+f[2]+" "):
			t.Errorf("version %q lacks the module version %s", out, f[2])
		case len(f) == 2 && strings.HasPrefix(f[1], "vcs.revision=") && !strings.Contains(string(out), strings.TrimPrefix(f[1], "vcs.revision=")):
			t.Errorf("version %q lacks the revision: %s", out, f[1])
		case len(f) == 2 && strings.HasPrefix(f[0], "/") && !strings.Contains(string(out), f[1]):
			t.Errorf("version %q lacks the toolchain %s", out, f[1])
		}
	}
}

// TestLaunchNamesEveryFailedServer: with several servers that cannot start
// (one whose install fails, two that exit), the launch names all of them,
// each with its own reason, not only the first.
func TestLaunchNamesEveryFailedServer(t *testing.T) {
	sb := newTestbox(t)
	r := sb.launch(mcpConfig(t, map[string]any{
		"good":      map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{})},
		"broken":    map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{ExitAtStart: 3})},
		"crashing":  map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{ExitAtStart: 4})},
		"noinstall": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{}), "installCmd": "echo no-such-package >&2; exit 7", "cwd": sb.dir},
	}))
	if r.code != 1 {
		t.Fatalf("launch exited %d, want 1\nstderr: %s", r.code, r.stderr)
	}
	for _, w := range []string{"3 of 4 servers failed to start", `"broken"`, "exit status 3", `"crashing"`, "exit status 4", `"noinstall"`, "no-such-package"} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
		}
	}
	if strings.Contains(r.stderr, `"good"`) {
		t.Errorf("stderr names the server that started:\n%s", r.stderr)
	}
}
