package intercept

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Plugin binaries built once for the package's tests: the test plugin
// (every outcome and failure) and the README's example.
var testPluginBin, examplePluginBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "intercept-plugins-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testPluginBin = filepath.Join(dir, "testplugin")
	examplePluginBin = filepath.Join(dir, "example")
	for bin, pkg := range map[string]string{testPluginBin: "./testplugin", examplePluginBin: "../../examples/interceptor-plugin"} {
		build := exec.Command("go", "build", "-o", bin, pkg)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build", pkg+":", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
