package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPullUnreachableRegistry runs `mcp-gateway pull` as a template build would, with npm's
// registry unreachable and an npm that never finishes (as a real one retrying): the command says
// which registry cannot be reached, ends the install at --timeout, and exits 1 naming the server.
func TestPullUnreachableRegistry(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "npm"), []byte("#!/bin/sh\nexec sleep 300\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cat := filepath.Join(dir, "catalog.json")
	if err := os.WriteFile(cat, []byte(`{"servers": {"slowpkg": {"package": {"manager": "npm", "name": "@x/slowpkg", "bin": "slowpkg"}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	registry := "http://" + ln.Addr().String() + "/"
	ln.Close()

	cmd := exec.Command(gatewayBin, "pull", "--catalog", cat, "--timeout", "1500ms", "slowpkg")
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "npm_config_registry="+registry)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("pull: %v, want exit 1\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "pull slowpkg: running npm install -g @x/slowpkg (timeout 1.5s)") {
		t.Errorf("stdout lacks the start line:\n%s", stdout.String())
	}
	for _, want := range []string{
		"pull slowpkg: registry cannot be reached: " + registry + ": dial tcp",
		"pull slowpkg: failed: npm install -g @x/slowpkg: timed out after 1.5s (registry cannot be reached: " + registry,
		"mcp-gateway: pull failed for slowpkg",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

// TestPullTimeoutFlag: a timeout that is not positive is a usage error.
func TestPullTimeoutFlag(t *testing.T) {
	out, err := exec.Command(gatewayBin, "pull", "--timeout", "0s", "time").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "--timeout must be positive") {
		t.Errorf("pull --timeout 0s: %v\n%s", err, out)
	}
}
