package intercept

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
)

// upstream stands in for the server behind the chain: it answers with the
// arguments it received, so a test sees what the chain sent on.
type upstream struct{ calls atomic.Int32 }

func (u *upstream) next(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
	u.calls.Add(1)
	var a struct{ Text string }
	_ = json.Unmarshal(args, &a)
	return json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": "echo:" + a.Text}}})
}

// engine builds and starts an engine from a config document.
func engine(t *testing.T, doc string, servers []catalog.ServerSpec, env ...string) *Engine {
	t.Helper()
	cfg, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	e := New(cfg, servers, Options{Environ: append(os.Environ(), env...)})
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func pluginConfig(bin string, extra string) string {
	b, _ := json.Marshal(bin)
	return `{"interceptors":[{"name":"tp","type":"plugin","path":` + string(b) + `,"hooks":["before","after","tools"]` + extra + `}]}`
}

func call(text string) *Call {
	return &Call{Server: "srv", Tool: "echo", ExportedTool: "srv_echo", Session: "s1", Arguments: json.RawMessage(`{"text":"` + text + `"}`)}
}

// resultText is the text of a CallToolResult document, and its isError.
func resultText(t *testing.T, res json.RawMessage) (string, bool) {
	t.Helper()
	var r mcp.CallToolResult
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatalf("result %s: %v", res, err)
	}
	var parts []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "|"), r.IsError
}

func TestPluginDecisions(t *testing.T) {
	e := engine(t, pluginConfig(testPluginBin(t), ""), nil)
	cases := []struct {
		text, want, trace string
		isError, upstream bool
	}{
		{"hello", "echo:hello", "", false, true},
		{"deny", `denied by interceptor "tp": no echo for srv_echo on srv`, "tp:deny", true, false},
		{"rewrite", "echo:rewritten by plugin", "tp:rewrite", false, true},
		{"respond", "responded by plugin", "tp:respond", false, false},
		{"replace-me", "replaced by plugin", "tp:replace", false, true},
	}
	for _, c := range cases {
		t.Run(c.text, func(t *testing.T) {
			u := &upstream{}
			res, trace, _, err := e.Call(context.Background(), call(c.text), u.next)
			if err != nil {
				t.Fatal(err)
			}
			got, isErr := resultText(t, res)
			if got != c.want || isErr != c.isError {
				t.Errorf("result %q (isError %v), want %q (%v)", got, isErr, c.want, c.isError)
			}
			if strings.Join(trace, ",") != c.trace {
				t.Errorf("trace %q, want %q", trace, c.trace)
			}
			if (u.calls.Load() == 1) != c.upstream {
				t.Errorf("upstream called %d times; want called: %v", u.calls.Load(), c.upstream)
			}
		})
	}
}

func TestPluginHidesTools(t *testing.T) {
	e := engine(t, pluginConfig(testPluginBin(t), ""), nil, "TESTPLUGIN_HIDE=env,crash")
	tools := []*mcp.Tool{{Name: "echo"}, {Name: "env"}, {Name: "crash"}, {Name: "big"}}
	got := names(e.Visible(context.Background(), "srv", tools))
	if got != "echo,big" {
		t.Errorf("visible %s, want echo,big", got)
	}
}

func names(tools []*mcp.Tool) string {
	var n []string
	for _, t := range tools {
		n = append(n, t.Name)
	}
	return strings.Join(n, ",")
}

func TestPluginNeverGetsGatewayToken(t *testing.T) {
	e := engine(t, pluginConfig(testPluginBin(t), ""), nil, "GATEWAY_ACCESS_TOKEN=secret-gateway-token")
	res, _, _, err := e.Call(context.Background(), call("token"), (&upstream{}).next)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := resultText(t, res); got != "token=" {
		t.Errorf("plugin saw %q, want no token", got)
	}
}

// interceptorError asserts that err is an interceptor failure naming tp.
func interceptorError(t *testing.T, err error, want string) {
	t.Helper()
	var ie *Error
	if !errors.As(err, &ie) || ie.Interceptor != "tp" || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want an interceptor error of \"tp\" containing %q", err, want)
	}
	if !strings.HasPrefix(err.Error(), `interceptor "tp": `) {
		t.Errorf("message %q does not name the interceptor first", err)
	}
}

func pid(t *testing.T, e *Engine) string {
	t.Helper()
	res, _, _, err := e.Call(context.Background(), call("pid"), (&upstream{}).next)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := resultText(t, res)
	return p
}

func TestPluginCrashFailsClosedAndRestarts(t *testing.T) {
	e := engine(t, pluginConfig(testPluginBin(t), ""), nil)
	before := pid(t, e)
	u := &upstream{}
	_, trace, _, err := e.Call(context.Background(), call("crash"), u.next)
	interceptorError(t, err, "plugin failed")
	if u.calls.Load() != 0 || strings.Join(trace, ",") != "tp:failed" {
		t.Errorf("upstream calls %d, trace %v: a failed-closed call must not reach the server", u.calls.Load(), trace)
	}
	// The first crash restarts at once (the next hook).
	after := pid(t, e)
	if after == before || after == "" {
		t.Errorf("pid before crash %s, after %s: want a new process", before, after)
	}
}

func TestPluginCrashLoopBacksOff(t *testing.T) {
	e := engine(t, pluginConfig(testPluginBin(t), ""), nil)
	for range 2 {
		_, _, _, err := e.Call(context.Background(), call("crash"), (&upstream{}).next)
		interceptorError(t, err, "plugin failed")
	}
	// Two crashes in a row: the plugin stays down for the backoff, and
	// hooks fail fast meanwhile.
	_, _, _, err := e.Call(context.Background(), call("hello"), (&upstream{}).next)
	interceptorError(t, err, "plugin is down; next restart in")
}

// A plugin that does not answer within the hook's timeout is killed and
// replaced. Only the call that hangs has the short timeout: the pid calls
// around it must answer, on a loaded machine too.
func TestPluginHangTimesOutAndRestarts(t *testing.T) {
	e := engine(t, pluginConfig(testPluginBin(t), `,"timeout":"60s"`), nil)
	before := pid(t, e)
	e.chain[0].spec.Timeout = 300 * time.Millisecond // between calls: no call reads it now
	_, _, _, err := e.Call(context.Background(), call("hang"), (&upstream{}).next)
	e.chain[0].spec.Timeout = time.Minute
	interceptorError(t, err, "no answer within 300ms")
	if after := pid(t, e); after == before {
		t.Errorf("a hung plugin was not replaced (pid %s)", after)
	}
}

func TestPluginGarbageFailsClosed(t *testing.T) {
	e := engine(t, pluginConfig(testPluginBin(t), ""), nil)
	_, _, _, err := e.Call(context.Background(), call("garbage"), (&upstream{}).next)
	interceptorError(t, err, `answered action "explode" to a before hook`)
	_, _, _, err = e.Call(context.Background(), call("error"), (&upstream{}).next)
	interceptorError(t, err, "plugin refuses to decide")
}

func TestPluginFailOpen(t *testing.T) {
	e := engine(t, pluginConfig(testPluginBin(t), `,"failOpen":true,"timeout":"300ms"`), nil)
	for _, text := range []string{"garbage", "error", "crash", "hang"} {
		u := &upstream{}
		res, trace, _, err := e.Call(context.Background(), call(text), u.next)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if got, _ := resultText(t, res); got != "echo:"+text || u.calls.Load() != 1 {
			t.Errorf("%s: result %q, upstream calls %d: want the call let through", text, got, u.calls.Load())
		}
		// The after hook may fail open too: a plugin killed at the before
		// hook restarts within the after hook's timeout only on a machine
		// that is not busy.
		if len(trace) == 0 || slices.ContainsFunc(trace, func(s string) bool { return s != "tp:failed-open" }) {
			t.Errorf("%s: trace %v", text, trace)
		}
	}
}

// A plugin whose first line is not a handshake fails the start on that
// line: its process never ends, so a start that waited for more (its exit,
// or the handshake's timeout) would fail otherwise, and much later.
func TestPluginThatIsNotAPluginFailsStart(t *testing.T) {
	buildPlugins(t) // the host
	script := filepath.Join(t.TempDir(), "garbage.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho 'hello, I am not a plugin'\nwhile :; do sleep 1; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse([]byte(pluginConfig(script, "")))
	if err != nil {
		t.Fatal(err)
	}
	e := New(cfg, nil, Options{})
	t.Cleanup(e.Close) // waits until the killed process is reaped
	err = e.Start(context.Background())
	var ie *Error
	if !errors.As(err, &ie) || ie.Interceptor != "tp" {
		t.Fatalf("start: %v, want an error naming the interceptor", err)
	}
	if !strings.Contains(err.Error(), "Unrecognized remote plugin message: hello, I am not a plugin") {
		t.Errorf("start: %v, want the garbage handshake named", err)
	}
}

func TestExamplePlugin(t *testing.T) {
	b, _ := json.Marshal(examplePluginBin(t))
	e := engine(t, `{"interceptors":[{"name":"policy","type":"plugin","path":`+string(b)+`,"hooks":["before","after","tools"]}]}`, nil)
	tools := []*mcp.Tool{{Name: "read_file"}, {Name: "delete_file"}, {Name: "deleteAll"}}
	if got := names(e.Visible(context.Background(), "fs", tools)); got != "read_file" {
		t.Errorf("visible %s, want read_file", got)
	}
	res, _, _, err := e.Call(context.Background(), call("rm -rf /"), (&upstream{}).next)
	if err != nil {
		t.Fatal(err)
	}
	if got, isErr := resultText(t, res); !isErr || !strings.Contains(got, "destructive commands are not allowed") {
		t.Errorf("rm -rf: %q (isError %v)", got, isErr)
	}
	res, _, _, err = e.Call(context.Background(), call("ls"), (&upstream{}).next)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := resultText(t, res); got != "echo:ls|(checked by policy)" {
		t.Errorf("ls: %q", got)
	}
}
