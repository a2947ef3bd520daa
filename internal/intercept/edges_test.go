package intercept

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
)

// The edges of the built-in interceptors and of the config's checks: each
// case is one a mutation tester (docs/mutation.md) found no test for.

// TestSizeGuardEdges: a size exactly at a bound passes; a bound left zero
// bounds nothing (a guard of results alone lets any arguments through, and
// the reverse).
func TestSizeGuardEdges(t *testing.T) {
	const n = 61 // len(`{"text":"` + 50 bytes + `"}`)
	args := strings.Repeat("a", 50)
	atBound := engine(t, `{"interceptors":[{"name":"size","type":"sizeGuard","maxArgumentBytes":61,"maxResultBytes":94}]}`, nil)
	res, _, _, err := atBound.Call(context.Background(), call(args), (&upstream{}).next)
	if got, isErr := resultText(t, res); err != nil || isErr || got != "echo:"+args {
		t.Errorf("arguments of exactly maxArgumentBytes (%d), a result of exactly maxResultBytes: %q (isError %v), %v", n, got, isErr, err)
	}
	resultsOnly := engine(t, `{"interceptors":[{"name":"size","type":"sizeGuard","maxResultBytes":1000}]}`, nil)
	if res, _, _, err := resultsOnly.Call(context.Background(), call(args), (&upstream{}).next); err != nil {
		t.Fatal(err)
	} else if got, isErr := resultText(t, res); isErr {
		t.Errorf("a guard of results alone refused arguments: %q", got)
	}
	argsOnly := engine(t, `{"interceptors":[{"name":"size","type":"sizeGuard","maxArgumentBytes":1000}]}`, nil)
	if res, _, _, err := argsOnly.Call(context.Background(), call(args), (&upstream{}).next); err != nil {
		t.Fatal(err)
	} else if got, isErr := resultText(t, res); isErr {
		t.Errorf("a guard of arguments alone replaced the result: %q", got)
	}
}

// TestToolFilterDenyOnly: a filter with deny globs and no allow list
// offers every tool it does not deny.
func TestToolFilterDenyOnly(t *testing.T) {
	e := engine(t, `{"interceptors":[{"name":"no-writes","type":"toolFilter","deny":["write_*"]}]}`, nil)
	if got := names(e.Visible(context.Background(), "fs", []*mcp.Tool{{Name: "read_file"}, {Name: "write_file"}})); got != "read_file" {
		t.Errorf("visible %s, want read_file", got)
	}
}

// TestSecretGuardEdges: a configured value of exactly the shortest secret
// length is masked; a secret that contains another is masked whole; a
// secret in a member name is masked, the name replaced; a guard of values
// alone, and one of patterns alone, each scan.
func TestSecretGuardEdges(t *testing.T) {
	servers := []catalog.ServerSpec{{Name: "s", Env: map[string]string{
		"SHORT": "8-chars!", // minSecretLen exactly
		"INNER": "inner-secret",
		"OUTER": "outer-inner-secret-x",
	}}}
	e := engine(t, `{"interceptors":[{"name":"g","type":"secretGuard","patterns":false}]}`, servers)
	for _, c := range []struct{ text, want string }{
		{"a 8-chars! b", "echo:a [REDACTED] b"},
		{"a outer-inner-secret-x b", "echo:a [REDACTED] b"},
	} {
		res, _, _, err := e.Call(context.Background(), call(c.text), (&upstream{}).next)
		if got, _ := resultText(t, res); err != nil || got != c.want {
			t.Errorf("%q: %q, %v; want %q", c.text, got, err, c.want)
		}
	}
	// In a member name of the arguments, where nothing else is secret.
	var sent json.RawMessage
	next := func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
		sent = args
		return json.RawMessage(`{"content":[]}`), nil
	}
	c := call("x")
	c.Arguments = json.RawMessage(`{"inner-secret":1}`)
	if _, trace, _, err := e.Call(context.Background(), c, next); err != nil || strings.Join(trace, ",") != "g:rewrite" {
		t.Fatalf("a secret in a member name: trace %v, %v", trace, err)
	}
	if string(sent) != `{"[REDACTED]":1}` {
		t.Errorf("a secret in a member name: the server got %s", sent)
	}
	// Patterns alone: no configured values at all.
	p := engine(t, `{"interceptors":[{"name":"g","type":"secretGuard"}]}`, nil)
	res, _, _, err := p.Call(context.Background(), call("AKIAIOSFODNN7EXAMPLE"), (&upstream{}).next)
	if got, _ := resultText(t, res); err != nil || got != "echo:[REDACTED]" {
		t.Errorf("a guard of patterns alone: %q, %v", got, err)
	}
}

// TestParseEdges: the config's bounds, at the bound.
func TestParseEdges(t *testing.T) {
	name := strings.Repeat("n", 64)
	for _, doc := range []string{
		`{"interceptors": [{"name": "` + name + `", "type": "sizeGuard", "maxResultBytes": 5}]}`,
		`{"interceptors": [{"name": "azAZ09-_.", "type": "sizeGuard", "maxResultBytes": 5}]}`,
		`{"interceptors": [{"name": "a", "type": "sizeGuard", "maxArgumentBytes": 5}]}`,
		`{"interceptors": [{"name": "a", "type": "exec", "command": "true", "hooks": ["before"], "timeout": "1ns"}]}`,
	} {
		if _, err := Parse([]byte(doc)); err != nil {
			t.Errorf("%s: %v", doc, err)
		}
	}
	for _, c := range []struct{ doc, want string }{
		{`{"interceptors": [{"name": "` + name + `n", "type": "sizeGuard", "maxResultBytes": 5}]}`, "name: is required"},
		{`{"interceptors": [{"name": "a", "type": "exec", "command": "true", "hooks": ["before"], "timeout": "0s"}]}`, "timeout: must be a positive duration"},
	} {
		if _, err := Parse([]byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.doc, err, c.want)
		}
	}
	// A file that cannot be read is named, with no interceptor index.
	missing := filepath.Join(t.TempDir(), "none.json")
	if _, err := Load(missing, false); err == nil || !strings.HasPrefix(err.Error(), "interceptor config "+missing+": ") || strings.Contains(err.Error(), "interceptors[") {
		t.Errorf("unreadable file: %v", err)
	}
}

// TestAfterHookInvalidDecision: an after hook that answers a decision of
// the before hook fails the call closed.
func TestAfterHookInvalidDecision(t *testing.T) {
	doc, _ := failingToolsHook(t, `echo '{"action":"deny"}'`, ","+answerTimeout)
	doc = strings.Replace(doc, `"hooks":["tools"],"tools":["echo","env"]`, `"hooks":["after"]`, 1)
	e := engine(t, doc, nil)
	u := &upstream{}
	_, _, _, err := e.Call(context.Background(), call("x"), u.next)
	if err == nil || !strings.Contains(err.Error(), `answered action "deny" to an after hook`) || u.calls.Load() != 1 {
		t.Errorf("after hook answering deny: %v (server calls %d)", err, u.calls.Load())
	}
}
