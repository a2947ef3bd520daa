package intercept

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Plugin binaries built once for the package's tests, on first use (fuzz
// workers never build them): the plugin host, the test plugin (every
// outcome and failure) and the README's example. The host is found on PATH,
// as an installed one may be: the test binary has none next to it.
var (
	binDir    string
	buildOnce sync.Once
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func buildPlugins(t testing.TB) {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "intercept-plugins-"); buildErr != nil {
			return
		}
		for _, b := range []struct{ out, pkg string }{{HostName, "../../cmd/mcp-gateway-plugin-host"}, {"testplugin", "./testplugin"}, {"example", "../../examples/interceptor-plugin"}} {
			if out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, b.out), b.pkg).CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("build %s: %v\n%s", b.pkg, err, out)
				return
			}
		}
		buildErr = os.Setenv("PATH", binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
}

// testPluginBin is the test plugin's path, built if need be.
func testPluginBin(t *testing.T) string {
	buildPlugins(t)
	return filepath.Join(binDir, "testplugin")
}

// examplePluginBin is the README example's path, built if need be.
func examplePluginBin(t *testing.T) string {
	buildPlugins(t)
	return filepath.Join(binDir, "example")
}
