package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestUsageOfEveryCommand: each command's -h begins with a "Usage:" line
// that shows its arguments (pull's <name>...), `version -h` is help and
// not the version, and `help` is in the usage text.
func TestUsageOfEveryCommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"pull", "-h"}, "Usage: mcp-gateway pull [--catalog FILE] [--timeout D] <name>..."},
		{[]string{"catalog", "-h"}, "Usage: mcp-gateway catalog [--json]"},
		{[]string{"version", "-h"}, "Usage: mcp-gateway version"},
		{[]string{"builtin", "-h"}, "Usage: mcp-gateway builtin sandbox"},
	} {
		var out, errb bytes.Buffer
		if err := run(context.Background(), c.args, &out, &errb); err != nil {
			t.Errorf("%v: %v", c.args, err)
		}
		if got := out.String() + errb.String(); !strings.HasPrefix(got, c.want) {
			t.Errorf("%v prints\n%s\nwant it to start with %q", c.args, got, c.want)
		}
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"help"}, &out, &out); err != nil || !strings.Contains(out.String(), "mcp-gateway help ") {
		t.Errorf("help: %v; usage text does not list `mcp-gateway help`:\n%s", err, out.String())
	}
}

// TestConfigFileMissingIsABadInput: a --config-file that cannot be read
// exits 2, as every other bad input does, naming the file.
func TestConfigFileMissingIsABadInput(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nonexistent.json")
	for _, args := range [][]string{{"--config-file", missing}, {"serve", "--config-file", missing}, {"stdio", "--config-file", missing}} {
		var errb bytes.Buffer
		err := run(context.Background(), args, &errb, &errb)
		if code := exitCode(err, &errb); code != 2 || !strings.Contains(errb.String(), missing) {
			t.Errorf("%v: exit %d, want 2, naming the file:\n%s", args, code, errb.String())
		}
	}
}

// TestAlreadyRunningDoesNotStutter: the message for a held pid file reads
// once as "mcp-gateway: ...", not "mcp-gateway: mcp-gateway is ...".
func TestAlreadyRunningDoesNotStutter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gw.pid")
	held, err := lockPIDFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	_, err = lockPIDFile(path)
	var errb bytes.Buffer
	exitCode(err, &errb)
	if msg := errb.String(); !strings.Contains(msg, "already running") || strings.Contains(msg, "mcp-gateway: mcp-gateway") {
		t.Errorf("second lock: %q", msg)
	}
}

// TestConfigProblemsAllAtOnce: a config with several problems names every
// one of them in one message (every server, every missing property), and
// exits 2.
func TestConfigProblemsAllAtOnce(t *testing.T) {
	var errb bytes.Buffer
	err := run(context.Background(), []string{"--config", `{"brave":{},"airtable":{}}`, "--catalog", filepath.Join(t.TempDir(), "none.json")}, &errb, &errb)
	code := exitCode(err, &errb)
	msg := errb.String()
	for _, want := range []string{"3 problems in the mcp config", `server "brave": apiKey: is required`,
		`server "airtable": airtableApiKey: is required`, `server "airtable": nodeenv: is required`} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
}

// TestMissingPackageToolsSayWhatToInstall: with neither uv nor npx on PATH,
// pull and a launch name the package to install, not only the program.
func TestMissingPackageToolsSayWhatToInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	none := filepath.Join(t.TempDir(), "none.json")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"pull", "--catalog", none, "time"}, "install uv, which provides uv and uvx"},
		{[]string{"--config", `{"time":{}}`, "--catalog", none}, "install uv, which provides uv and uvx"},
		{[]string{"--config", `{"memory":{}}`, "--catalog", none}, "install Node.js with npm, which provides npx"},
	} {
		var out, errb bytes.Buffer
		err := run(context.Background(), c.args, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v; want it to say %q", c.args, err, c.want)
		}
	}
}
