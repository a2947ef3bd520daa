package auth

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	tok, gen, err := Resolve("  abc-123\n")
	if err != nil || gen || tok != "abc-123" {
		t.Fatalf("Resolve(env) = %q, %v, %v; want abc-123 from env", tok, gen, err)
	}
	a, gen, err := Resolve("")
	if err != nil || !gen {
		t.Fatalf("Resolve(\"\") = %q, %v, %v; want a generated token", a, gen, err)
	}
	if len(a) != 64 { // 32 random bytes, hex
		t.Errorf("generated token has %d chars, want 64 (256 bits)", len(a))
	}
	b, _, _ := Resolve("")
	if a == b {
		t.Error("two generated tokens are equal")
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "etc", "mcp-gateway", ".token")
	if err := WriteFile(path, "tok-1"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	// Overwrite: content replaced, no temp files left behind.
	if err := WriteFile(path, "tok-2"); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil || got != "tok-2" {
		t.Fatalf("ReadFile = %q, %v; want tok-2", got, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("token dir holds %d entries, want only .token", len(entries))
	}
	if err := WriteFile(path, ""); !errors.Is(err, ErrEmptyToken) {
		t.Errorf("WriteFile(empty) = %v, want ErrEmptyToken", err)
	}
	os.WriteFile(path, []byte("\n"), 0o600)
	if _, err := ReadFile(path); !errors.Is(err, ErrEmptyToken) {
		t.Errorf("ReadFile(blank file) = %v, want ErrEmptyToken", err)
	}
}

func TestBearer(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "through")
	})
	srv := httptest.NewServer(Bearer("s3cret-token", "/some/dir/.token", ok))
	defer srv.Close()
	empty := httptest.NewServer(Bearer("", "", ok))
	defer empty.Close()

	cases := []struct {
		name   string
		url    string
		header string
		cookie bool
		want   int
	}{
		{"no header", srv.URL, "", false, 401},
		{"right token", srv.URL, "Bearer s3cret-token", false, 200},
		{"scheme is case-insensitive", srv.URL, "bearer s3cret-token", false, 200},
		{"wrong token", srv.URL, "Bearer s3cret-tokeX", false, 401},
		{"prefix of token", srv.URL, "Bearer s3cret", false, 401},
		{"basic scheme", srv.URL, "Basic s3cret-token", false, 401},
		{"token without scheme", srv.URL, "s3cret-token", false, 401},
		{"query parameter is not accepted", srv.URL + "?access_token=s3cret-token", "", false, 401},
		{"cookie is not accepted", srv.URL, "", true, 401},
		{"empty configured token refuses empty bearer", empty.URL, "Bearer ", false, 401},
		{"empty configured token refuses anything", empty.URL, "Bearer x", false, 401},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", c.url, strings.NewReader("{}"))
			if c.header != "" {
				req.Header.Set("Authorization", c.header)
			}
			if c.cookie {
				req.AddCookie(&http.Cookie{Name: "token", Value: "s3cret-token"})
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Fatalf("status %d, want %d (body %s)", resp.StatusCode, c.want, body)
			}
			if c.want == 401 {
				if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("WWW-Authenticate = %q, want a Bearer challenge", resp.Header.Get("WWW-Authenticate"))
				}
				if !strings.Contains(string(body), `"code":-32001`) {
					t.Errorf("401 body is not a JSON-RPC error: %s", body)
				}
				// The hint names the token file the gateway was given, and
				// none when it has none.
				named := strings.Contains(string(body), `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"unauthorized: send the gateway token as 'Authorization: Bearer <token>' (the token is in /some/dir/.token)"}}`)
				if wantNamed := strings.HasPrefix(c.url, srv.URL); named != wantNamed || !json.Valid(body) {
					t.Errorf("401 body %s: names the token file %v, want %v (and valid JSON)", body, named, wantNamed)
				}
			} else if string(body) != "through" {
				t.Errorf("body %q, want the wrapped handler's", body)
			}
		})
	}
}

func TestMatches(t *testing.T) {
	for _, c := range []struct {
		header, token string
		want          bool
	}{
		{"Bearer tok", "tok", true},
		{"bearer  tok ", "tok", true},
		{"Bearer tok2", "tok", false},
		{"Basic tok", "tok", false},
		{"tok", "tok", false},
		{"Bearer ", "", false}, // an empty token refuses all, as Bearer does
		{"", "", false},
	} {
		if got := Matches(c.header, c.token); got != c.want {
			t.Errorf("Matches(%q, %q) = %v, want %v", c.header, c.token, got, c.want)
		}
	}
}
