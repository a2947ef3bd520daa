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
// workers never build them): the test plugin (every outcome and failure)
// and the README's example.
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
		for _, b := range []struct{ out, pkg string }{{"testplugin", "./testplugin"}, {"example", "../../examples/interceptor-plugin"}} {
			if out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, b.out), b.pkg).CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("build %s: %v\n%s", b.pkg, err, out)
				return
			}
		}
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
