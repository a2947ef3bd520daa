package catalog

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// envOf is a LookupEnv over a fixed map.
func envOf(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

func TestResolveRemote(t *testing.T) {
	cat := embeddedCatalog(t)
	opts := ResolveOptions{LookPath: allFound, LookupEnv: envOf(map[string]string{"API_KEY": secret, "EMPTY": ""})}
	r := resolveOK(t, cat, opts, `{
		"weather": {"url": "https://mcp.example.com/mcp?region=eu", "headers": {
			"authorization": "Bearer ${API_KEY}", "X-Team": "a-${API_KEY}-b-${API_KEY}", "X-Empty": "${EMPTY}", "X-Plain": "cost $5"}},
		"open": {"url": "http://127.0.0.1:8080/mcp"},
		"time": {"url": "http://10.0.0.1/mcp", "envs": {"A": "b"}}
	}`)
	if len(r.Servers) != 3 {
		t.Fatalf("servers %+v", r.Servers)
	}
	open, timeSrv, weather := r.Servers[0], r.Servers[1], r.Servers[2]
	want := ServerSpec{Name: "weather", Kind: KindRemote, URL: "https://mcp.example.com/mcp?region=eu", Headers: map[string]string{
		"Authorization": "Bearer " + secret,
		"X-Team":        "a-" + secret + "-b-" + secret,
		"X-Empty":       "",
		"X-Plain":       "cost $5",
	}}
	if !reflect.DeepEqual(weather, want) {
		t.Errorf("weather spec\n got %+v\nwant %+v", weather, want)
	}
	if open.Kind != KindRemote || open.URL != "http://127.0.0.1:8080/mcp" || open.Headers != nil || open.Command != nil || open.Shell != "" {
		t.Errorf("open spec %+v", open)
	}
	// url wins over the catalog entry of the same name, with a warning; other fields are ignored
	// with a warning, and never reach the spec.
	if timeSrv.Kind != KindRemote || timeSrv.Env != nil || len(timeSrv.Command) != 0 {
		t.Errorf("time spec %+v", timeSrv)
	}
	joined := strings.Join(r.Warnings, "\n")
	for _, w := range []string{`server "time": url given, so the catalog entry`, `server "time": field "envs" ignored`} {
		if !strings.Contains(joined, w) {
			t.Errorf("warnings %q lack %q", r.Warnings, w)
		}
	}
	if strings.Contains(joined, secret) {
		t.Errorf("warnings leak a value: %q", joined)
	}
	checkResolved(t, r)
}

// TestResolveRemoteDefaultEnv: with no LookupEnv, ${VAR} comes from the process environment.
func TestResolveRemoteDefaultEnv(t *testing.T) {
	t.Setenv("MCP_GATEWAY_TEST_REMOTE_KEY", "k-"+secret)
	r := resolveOK(t, nil, ResolveOptions{}, `{"r": {"url": "https://x.example/mcp", "headers": {"X-Key": "${MCP_GATEWAY_TEST_REMOTE_KEY}"}}}`)
	if got := r.Servers[0].Headers["X-Key"]; got != "k-"+secret {
		t.Errorf("X-Key = %q", got)
	}
}

func TestResolveRemoteRejects(t *testing.T) {
	cat := embeddedCatalog(t)
	// The token variable is set, so that refusing ${GATEWAY_ACCESS_TOKEN} cannot pass by it being unset.
	env := envOf(map[string]string{"GOOD": secret, "MULTILINE": secret + "\r\nX-Injected: 1", tokenEnv: secret})
	tests := []struct {
		name   string
		config string
		want   []string
	}{
		{"url number", `{"r": {"url": 5}}`, []string{`server "r": url: must be a string, got number`}},
		{"url null", `{"r": {"url": null}}`, []string{`server "r": url: must be a string, got null`}},
		{"url empty", `{"r": {"url": " "}}`, []string{`server "r": url: is empty`}},
		{"url relative", `{"r": {"url": "/mcp?k=` + secret + `"}}`, []string{`server "r": url: must be an absolute http:// or https:// URL`}},
		{"url ftp", `{"r": {"url": "ftp://h/` + secret + `"}}`, []string{`server "r": url: must be an absolute http`}},
		{"url no scheme", `{"r": {"url": "mcp.example.com/` + secret + `"}}`, []string{`server "r": url: must be an absolute`}},
		{"url no host", `{"r": {"url": "http:///mcp?k=` + secret + `"}}`, []string{`server "r": url: has no host`}},
		{"url unparsable", `{"r": {"url": "http://h/%zz` + secret + `"}}`, []string{`server "r": url: is not a valid URL`}},
		{"url control char", `{"r": {"url": "http://h/\u0001` + secret + `"}}`, []string{`server "r": url: is not a valid URL`}},
		{"url credentials", `{"r": {"url": "https://me:` + secret + `@h/mcp"}}`, []string{`server "r": url: must not contain credentials`}},
		{"url and runCmd", `{"r": {"url": "https://h/mcp", "runCmd": "` + secret + `"}}`, []string{`server "r": url: cannot be given with runCmd`}},
		{"url and run_cmd", `{"r": {"url": "https://h/mcp", "run_cmd": "x"}}`, []string{`server "r": url: cannot be given with run_cmd`}},
		{"url on github key", `{"github/a/b": {"url": "https://h/mcp"}}`, []string{`server "github/a/b": url:`, "GitHub"}},

		{"headers array", `{"r": {"url": "https://h/mcp", "headers": ["` + secret + `"]}}`, []string{`server "r": headers: must be an object`, "got array"}},
		{"headers string", `{"r": {"url": "https://h/mcp", "headers": "` + secret + `"}}`, []string{`server "r": headers: must be an object`, "got string"}},
		{"header bad name", `{"r": {"url": "https://h/mcp", "headers": {"X Key": "` + secret + `"}}}`, []string{`server "r": headers: header "X Key": invalid name`}},
		{"header empty name", `{"r": {"url": "https://h/mcp", "headers": {"": "` + secret + `"}}}`, []string{`server "r": headers: header "": invalid name`}},
		{"header colon", `{"r": {"url": "https://h/mcp", "headers": {"X:Y": "v"}}}`, []string{`header "X:Y": invalid name`}},
		{"header transport", `{"r": {"url": "https://h/mcp", "headers": {"mcp-session-id": "` + secret + `"}}}`, []string{`server "r": headers: header "mcp-session-id" is set by the MCP transport`}},
		{"header host", `{"r": {"url": "https://h/mcp", "headers": {"Host": "x"}}}`, []string{`header "Host" is set by the MCP transport`}},
		{"header twice", `{"r": {"url": "https://h/mcp", "headers": {"X-Key": "` + secret + `", "x-key": "` + secret + `"}}}`, []string{`server "r": headers: header "X-Key" given twice`}},
		{"header duplicate key", `{"r": {"url": "https://h/mcp", "headers": {"A": "1", "A": "2"}}}`, []string{`server "r": headers: duplicate key "A"`}},
		{"header number", `{"r": {"url": "https://h/mcp", "headers": {"X-Key": 12345}}}`, []string{`server "r": headers: header "X-Key": value must be a string, got number`}},
		{"header null", `{"r": {"url": "https://h/mcp", "headers": {"X-Key": null}}}`, []string{`header "X-Key": value must be a string, got null`}},
		{"header newline", `{"r": {"url": "https://h/mcp", "headers": {"X-Key": "` + secret + `\r\nX-Evil: 1"}}}`, []string{`server "r": headers: header "X-Key": value contains a line break`}},
		{"header var newline", `{"r": {"url": "https://h/mcp", "headers": {"X-Key": "${MULTILINE}"}}}`, []string{`header "X-Key": value contains a line break`}},
		{"header var missing", `{"r": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${REMOTE_API_KEY}"}}}`, []string{`server "r": headers: header "Authorization": environment variable REMOTE_API_KEY is not set`}},
		{"header var unterminated", `{"r": {"url": "https://h/mcp", "headers": {"A": "${GOOD"}}}`, []string{`header "A": "${" without a closing "}"`}},
		{"header var bad name", `{"r": {"url": "https://h/mcp", "headers": {"A": "${1X}"}}}`, []string{`header "A": "${...}" must hold a variable name`}},
		{"header var empty name", `{"r": {"url": "https://h/mcp", "headers": {"A": "${}"}}}`, []string{`header "A": "${...}" must hold a variable name`}},
		{"header var token", `{"r": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${GATEWAY_ACCESS_TOKEN}"}}}`, []string{`header "Authorization": ${GATEWAY_ACCESS_TOKEN} is the gateway's own token`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Resolve([]byte(tt.config), cat, ResolveOptions{LookPath: allFound, LookupEnv: env})
			if err == nil {
				t.Fatalf("Resolve succeeded with %+v, want an error", r)
			}
			var ce *ConfigError
			if !errors.Is(err, ErrInvalidConfig) || !errors.As(err, &ce) {
				t.Errorf("%v: want a *ConfigError matching ErrInvalidConfig", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error leaks a config value: %q", err)
			}
		})
	}
}

func TestSpecSecrets(t *testing.T) {
	s := ServerSpec{
		Env:     map[string]string{"K": "env-value"},
		Headers: map[string]string{"Authorization": "Bearer tok-123", "X-Key": "plain-key"},
	}
	got := s.Secrets()
	for _, want := range []string{"env-value", "Bearer tok-123", "tok-123", "plain-key"} {
		if !slices.Contains(got, want) {
			t.Errorf("Secrets() = %q, lacks %q", got, want)
		}
	}
	s = ServerSpec{Env: map[string]string{"MODE": "stdio", "KEY": "k-value"}, PublicEnv: []string{"MODE"}, ArgSecrets: []string{"arg-value"}}
	if got := s.Secrets(); !slices.Contains(got, "k-value") || !slices.Contains(got, "arg-value") || slices.Contains(got, "stdio") {
		t.Errorf("Secrets() = %q: want env and argument values, not public env", got)
	}
	if n := len(ServerSpec{}.Secrets()); n != 0 {
		t.Errorf("empty spec has %d secrets", n)
	}
}
