package intercept

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseRejects(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	notExec := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(notExec, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ doc, want string }{
		{`[]`, "interceptor config: must be a JSON object"},
		{`{"interceptors": [], "extra": 1}`, `unknown field "extra"`},
		{`{"interceptors": []} {}`, "data after the JSON object"},
		{`{"interceptors": [7]}`, "interceptors[0]: must be a JSON object"},
		{`{"interceptors": [{"type": "exec", "command": "true", "hooks": ["before"]}]}`, "interceptors[0]: name: is required"},
		{`{"interceptors": [{"name": "a b", "type": "exec"}]}`, "name: is required: letters"},
		{`{"interceptors": [{"name": "a", "type": "lua"}]}`, `interceptors[0] ("a"): type: "lua" is not one of`},
		{`{"interceptors": [{"name": "a", "type": "exec", "command": "true", "hooks": ["before"], "path": "/x"}]}`, `("a"): path: is not a field of a exec interceptor`},
		{`{"interceptors": [{"name": "a", "type": "exec", "command": "true"}]}`, "hooks: is required"},
		{`{"interceptors": [{"name": "a", "type": "exec", "command": "true", "hooks": ["around"]}]}`, `hooks: "around" is not one of`},
		{`{"interceptors": [{"name": "a", "type": "exec", "command": "true", "hooks": ["before", "before"]}]}`, `hooks: "before" is listed twice`},
		{`{"interceptors": [{"name": "a", "type": "exec", "command": " ", "hooks": ["before"]}]}`, "command: is required"},
		{`{"interceptors": [{"name": "a", "type": "exec", "command": "true", "hooks": ["before"], "timeout": "soon"}]}`, "timeout: must be a positive duration"},
		{`{"interceptors": [{"name": "a", "type": "exec", "command": "true", "hooks": ["before"], "timeout": 5}]}`, "timeout: must be string"},
		{`{"interceptors": [{"name": "a", "type": "exec", "command": "true", "hooks": ["before"], "servers": ["["]}]}`, `servers: glob "["`},
		{`{"interceptors": [{"name": "a", "type": "plugin", "hooks": ["before"]}]}`, "path: is required"},
		{`{"interceptors": [{"name": "a", "type": "plugin", "path": "rel/bin", "hooks": ["before"]}]}`, "path: is required: the plugin binary's absolute path"},
		{`{"interceptors": [{"name": "a", "type": "plugin", "path": "/nonexistent/plugin", "hooks": ["before"]}]}`, "path: cannot be used"},
		{`{"interceptors": [{"name": "a", "type": "plugin", "path": "` + notExec + `", "hooks": ["before"]}]}`, "path: is not an executable file"},
		{`{"interceptors": [{"name": "a", "type": "toolFilter"}]}`, "a toolFilter needs allow or deny"},
		{`{"interceptors": [{"name": "a", "type": "secretGuard", "mode": "shout"}]}`, `mode: "shout" is not redact or refuse`},
		{`{"interceptors": [{"name": "a", "type": "sizeGuard"}]}`, "a sizeGuard needs a positive"},
		{`{"interceptors": [{"name": "a", "type": "sizeGuard", "maxResultBytes": 5}, {"name": "a", "type": "sizeGuard", "maxResultBytes": 5}]}`, `interceptors[1] ("a"): name: is used by an earlier interceptor`},
		{`{"interceptors": [{"name": "a", "type": "plugin", "path": "` + exe + `", "hooks": ["before"], "command": "x"}]}`, "command: is not a field of a plugin interceptor"},
	} {
		_, err := Parse([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s:\n  error %v\n  want  %q", c.doc, err, c.want)
		}
	}
}

func TestParseDefaults(t *testing.T) {
	cfg, err := Parse([]byte(`{"interceptors": [
		{"name": "x", "type": "exec", "command": "true", "hooks": ["before"]},
		{"name": "s", "type": "secretGuard"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	x, s := cfg.Interceptors[0], cfg.Interceptors[1]
	if x.Timeout != DefaultTimeout || x.FailOpen || s.Mode != "redact" || !s.Patterns {
		t.Errorf("defaults: %+v %+v", x, s)
	}
	if x.Timeout != 5*time.Second {
		t.Errorf("default timeout %s", x.Timeout)
	}
}

func TestLoad(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "interceptors.json")
	if cfg, err := Load(missing, true); err != nil || len(cfg.Interceptors) != 0 {
		t.Errorf("optional missing file: %v, %v", cfg, err)
	}
	if _, err := Load(missing, false); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("named missing file: %v", err)
	}
	if err := os.WriteFile(missing, []byte(`{"interceptors": [{"name": "a"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(missing, true); err == nil || !strings.Contains(err.Error(), "interceptor config "+missing+": interceptors[0]") {
		t.Errorf("bad file: %v", err)
	}
}
