package catalog

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestResolveE2BKeys resolves E2B configs of each start kind against the embedded catalog.
func TestResolveE2BKeys(t *testing.T) {
	cat := embeddedCatalog(t)
	opts := ResolveOptions{LookPath: lookIn("npx", "uvx")}

	t.Run("npm with an env property and a constant env", func(t *testing.T) {
		s := resolveOK(t, cat, opts, `{"brave": {"apiKey": "`+secret+`"}}`).Servers[0]
		if want := []string{"npx", "-y", "@brave/brave-search-mcp-server@2.1.4"}; !slices.Equal(s.Command, want) {
			t.Errorf("Command = %q, want %q", s.Command, want)
		}
		if want := map[string]string{"BRAVE_API_KEY": secret, "BRAVE_MCP_TRANSPORT": "stdio"}; !maps.Equal(s.Env, want) {
			t.Errorf("Env = %v, want %v", s.Env, want)
		}
		if got := s.Secrets(); !slices.Contains(got, secret) || slices.Contains(got, "stdio") {
			t.Errorf("Secrets() = %q: want the key, not the constant", got)
		}
	})

	t.Run("env template embeds a property", func(t *testing.T) {
		s := resolveOK(t, cat, opts, `{"notion": {"internalIntegrationToken": "`+secret+`"}}`).Servers[0]
		h := s.Env["OPENAPI_MCP_HEADERS"]
		if !strings.Contains(h, `"Authorization": "Bearer `+secret+`"`) || s.Env["INTERNAL_INTEGRATION_TOKEN"] != secret {
			t.Errorf("Env = %v", s.Env)
		}
		if !slices.Contains(s.Secrets(), h) {
			t.Error("a templated env value is not a secret")
		}
	})

	t.Run("url property is not a remote", func(t *testing.T) {
		r := resolveOK(t, cat, opts, `{"circleci": {"token": "`+secret+`", "url": "https://circleci.example.com"}}`)
		s := r.Servers[0]
		if s.Kind != KindCatalog || s.URL != "" || s.Env["CIRCLECI_BASE_URL"] != "https://circleci.example.com" || s.Env["CIRCLECI_TOKEN"] != secret {
			t.Errorf("spec = %+v", s)
		}
		if len(r.Warnings) != 0 {
			t.Errorf("warnings = %q", r.Warnings)
		}
		// A key without a url property still takes url as a remote MCP server.
		if s := resolveOK(t, cat, opts, `{"brave": {"url": "https://mcp.example.com/mcp"}}`).Servers[0]; s.Kind != KindRemote {
			t.Errorf("brave with url: %+v", s)
		}
	})

	t.Run("remote entry fills its header", func(t *testing.T) {
		s := resolveOK(t, cat, opts, `{"close": {"apiKey": "`+secret+`"}}`).Servers[0]
		if s.Kind != KindRemote || s.URL != "https://mcp.close.com/mcp" || s.Headers["Authorization"] != "Bearer "+secret || len(s.Command) != 0 {
			t.Errorf("spec = %+v", s)
		}
		if !slices.Contains(s.Secrets(), secret) {
			t.Errorf("Secrets() = %q", s.Secrets())
		}
		s = resolveOK(t, cat, opts, `{"context7": {"apiKey": "`+secret+`"}}`).Servers[0]
		if s.Headers["Context7_api_key"] != secret {
			t.Errorf("context7 headers = %v", s.Headers)
		}
		if _, err := Resolve([]byte(`{"close": {}}`), cat, opts); err == nil || !strings.Contains(err.Error(), `server "close": apiKey: is required`) {
			t.Errorf("close without apiKey: %v", err)
		}
	})

	t.Run("argument property is a secret", func(t *testing.T) {
		s := resolveOK(t, cat, opts, `{"sentry": {"authToken": "`+secret+`"}}`).Servers[0]
		if want := []string{"uvx", "mcp-server-sentry@2025.1.14", "--auth-token", secret}; !slices.Equal(s.Command, want) {
			t.Errorf("Command = %q, want %q", s.Command, want)
		}
		if !slices.Contains(s.Secrets(), secret) {
			t.Errorf("Secrets() = %q", s.Secrets())
		}
	})

	t.Run("path and port properties are public, secrets stay secret", func(t *testing.T) {
		// A server's "Cannot access directory /nonexistent-dir" must reach the user unmasked.
		s := resolveOK(t, cat, opts, `{"filesystem": {"paths": ["/nonexistent-dir"]}}`).Servers[0]
		if !slices.Contains(s.Command, "/nonexistent-dir") {
			t.Fatalf("Command = %q", s.Command)
		}
		if got := s.Secrets(); slices.Contains(got, "/nonexistent-dir") {
			t.Errorf("Secrets() = %q: a directory to serve is no secret", got)
		}
		s = resolveOK(t, cat, opts, `{"kubectl": {"kubeconfig": "/home/u/.kube"}}`).Servers[0]
		if got := s.Secrets(); slices.Contains(got, "/home/u/.kube/config") {
			t.Errorf("Secrets() = %q: a kubeconfig path set in the env is no secret", got)
		}
		s = resolveOK(t, cat, opts, `{"glif": {"apiToken": "`+secret+`", "ids": "g1", "ignoredSaved": true}}`).Servers[0]
		if got := s.Secrets(); slices.Contains(got, "true") || !slices.Contains(got, secret) || !slices.Contains(got, "g1") {
			t.Errorf("Secrets() = %q: want the token and the ids, not the switch", got)
		}
		s = resolveOK(t, cat, opts, `{"sentry": {"authToken": "`+secret+`"}}`).Servers[0]
		if got := s.Secrets(); !slices.Contains(got, secret) {
			t.Errorf("Secrets() = %q: an argument token must stay secret", got)
		}
	})

	t.Run("docker mount becomes the variable the image set", func(t *testing.T) {
		s := resolveOK(t, cat, opts, `{"cloudRun": {"credentialsPath": "/home/user/adc.json"}}`).Servers[0]
		if s.Env["GOOGLE_APPLICATION_CREDENTIALS"] != "/home/user/adc.json" {
			t.Errorf("Env = %v", s.Env)
		}
	})

	t.Run("mount-only property is accepted with a warning", func(t *testing.T) {
		r := resolveOK(t, cat, opts, `{"desktopCommander": {"paths": ["/srv/`+secret+`"]}}`)
		if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], `property "paths" accepted but not passed on`) || strings.Contains(r.Warnings[0], secret) {
			t.Errorf("warnings = %q", r.Warnings)
		}
		if slices.ContainsFunc(r.Servers[0].Command, func(a string) bool { return strings.Contains(a, secret) }) {
			t.Errorf("Command = %q", r.Servers[0].Command)
		}
	})

	t.Run("contract and E2B spellings of existing names", func(t *testing.T) {
		// arxiv: E2B always sends storagePath; the contract lets it out.
		for _, cfg := range []string{`{"arxiv": {"storagePath": "/papers"}}`, `{"arxiv": {}}`} {
			resolveOK(t, cat, opts, cfg)
		}
		s := resolveOK(t, cat, opts, `{"filesystem": {"paths": ["/data"]}}`).Servers[0]
		if want := []string{"npx", "-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "/data"}; !slices.Equal(s.Command, want) {
			t.Errorf("Command = %q", s.Command)
		}
		for _, k := range []string{"duckduckgo", "fetch", "time", "memory", "sequentialthinking"} {
			resolveOK(t, cat, opts, `{"`+k+`": {}}`)
		}
	})
}

// TestResolveUnavailable: a Docker-only key fails validation naming the key, why, and how to
// run it anyway, and nothing else in the config is resolved into a spec.
func TestResolveUnavailable(t *testing.T) {
	cat := embeddedCatalog(t)
	_, err := Resolve([]byte(`{"time": {}, "githubOfficial": {"githubPersonalAccessToken": "`+secret+`"}}`), cat, ResolveOptions{LookPath: allFound})
	var ue *UnavailableError
	if !errors.As(err, &ue) || !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("err = %v, want an UnavailableError", err)
	}
	msg := err.Error()
	for _, want := range []string{`server "githubOfficial" cannot start here`, "Docker", "Go binary", `"github/github/github-mcp-server"`, "runCmd"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, secret) {
		t.Error("error leaks a value")
	}
	// The how-to works: a runCmd on the same key makes it a local server.
	r := resolveOK(t, cat, ResolveOptions{}, `{"githubOfficial": {"runCmd": "github-mcp-server stdio", "envs": {"GITHUB_PERSONAL_ACCESS_TOKEN": "x"}}}`)
	if r.Servers[0].Kind != KindLocal {
		t.Errorf("with runCmd: %+v", r.Servers[0])
	}
	// An SSE-only hosted server is unavailable too, for its own reason.
	if _, err := Resolve([]byte(`{"deepwiki": {}}`), cat, ResolveOptions{}); !errors.As(err, &ue) || !strings.Contains(err.Error(), "SSE") {
		t.Errorf("deepwiki: %v", err)
	}
}
