package intercept

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// execScript is a real exec interceptor in the style of the README: plain
// sh and grep, deciding by the document on stdin.
const execScript = `#!/bin/sh
doc=$(cat)
case "$doc" in
  *'"hook":"tools"'*) echo '{"hide":["env"]}'; exit ;;
  *'"hook":"after"'*)
    case "$doc" in *'"result":'*'replace-me'*) echo '{"content":[{"type":"text","text":"replaced by exec"}]}' ;; esac
    exit ;;
esac
case "$doc" in
  *'"text":"deny"'*) echo '{"action":"deny","message":"not from exec"}' ;;
  *'"text":"rewrite"'*) echo '{"action":"rewrite","arguments":{"text":"rewritten by exec"}}' ;;
  *'"text":"bare"'*) echo '{"content":[{"type":"text","text":"bare result"}]}' ;;
  *'"text":"fail"'*) echo "failing on purpose" >&2; exit 7 ;;
  *'"text":"hang"'*) while :; do sleep 1; done ;;
  *'"text":"garbage"'*) echo 'this is not json' ;;
  *'"text":"typo"'*) echo '{"acton":"deny"}' ;;
  *'"text":"pretty"'*) printf '{\n  "action": "rewrite",\n  "arguments": {\n    "text": "was pretty"\n  }\n}\n' ;;
  *'"text":"token"'*) printf '{"action":"respond","result":{"content":[{"type":"text","text":"token=%s"}]}}' "$GATEWAY_ACCESS_TOKEN" ;;
  *'"text":"hello"'*) echo "$doc" > "$(dirname "$0")/last-before.json" ;;
esac
`

// Hook timeouts of the tests. answerTimeout bounds a hook that must answer:
// long enough for a shell to start on a machine under heavy load (tens of
// runnable processes per core), so that only a command that never answers
// ever reaches it, and a hook that answers ends the wait at once.
// hangTimeout bounds the hook of the command that never answers ("hang"):
// that one times out whatever the machine's speed, so it can be short.
const (
	answerTimeout = `"timeout":"60s"`
	hangTimeout   = `"timeout":"500ms"`
)

// execConfig writes execScript and returns a config with it as interceptor
// "tp" on hooks (a JSON array) with the members extra (",..."), and the
// script's directory.
func execConfig(t *testing.T, hooks, extra string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "policy.sh")
	if err := os.WriteFile(script, []byte(execScript), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd, _ := json.Marshal(script)
	return `{"interceptors":[{"name":"tp","type":"exec","command":` + string(cmd) + `,"hooks":` + hooks + extra + `}]}`, dir
}

const allHooks = `["before","after","tools"]`

func TestExecDecisions(t *testing.T) {
	doc, dir := execConfig(t, allHooks, ","+answerTimeout)
	e := engine(t, doc, nil, "GATEWAY_ACCESS_TOKEN=secret-gateway-token")
	cases := []struct {
		text, want, trace string
		isError, upstream bool
	}{
		{"hello", "echo:hello", "", false, true},
		{"deny", `denied by interceptor "tp": not from exec`, "tp:deny", true, false},
		{"rewrite", "echo:rewritten by exec", "tp:rewrite", false, true},
		{"bare", "bare result", "tp:respond", false, false}, // docker/mcp-gateway style
		{"replace-me", "replaced by exec", "tp:replace", false, true},
		{"token", "token=", "tp:respond", false, false},
		{"pretty", "echo:was pretty", "tp:rewrite", false, true},
	}
	for _, c := range cases {
		t.Run(c.text, func(t *testing.T) {
			u := &upstream{}
			var sent json.RawMessage
			next := func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
				sent = args
				return u.next(ctx, args)
			}
			res, trace, _, err := e.Call(context.Background(), call(c.text), next)
			if err != nil {
				t.Fatal(err)
			}
			// What goes on as bytes is one line (stdio framing).
			if strings.Contains(string(sent), "\n") || strings.Contains(string(res), "\n") {
				t.Errorf("not compacted: sent %q, result %q", sent, res)
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
	// What the script was given for "hello": the documented request.
	b, err := os.ReadFile(filepath.Join(dir, "last-before.json"))
	if err != nil {
		t.Fatal(err)
	}
	var req map[string]any
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	params, _ := req["params"].(map[string]any)
	args, _ := params["arguments"].(map[string]any)
	if req["hook"] != "before" || req["server"] != "srv" || req["tool"] != "echo" || req["exportedTool"] != "srv_echo" ||
		req["session"] != "s1" || params["name"] != "srv_echo" || args["text"] != "hello" {
		t.Errorf("request document %s", b)
	}
}

func TestExecHidesTools(t *testing.T) {
	doc, _ := execConfig(t, allHooks, ","+answerTimeout)
	e := engine(t, doc, nil)
	if got := names(e.Visible(context.Background(), "srv", []*mcp.Tool{{Name: "echo"}, {Name: "env"}})); got != "echo" {
		t.Errorf("visible %s, want echo", got)
	}
}

// Each failure fails the call closed. The commands that answer (wrongly)
// have a timeout no loaded machine reaches, so that each shows its own
// failure; the one that never answers has a short one.
func TestExecFailures(t *testing.T) {
	doc, _ := execConfig(t, allHooks, ","+answerTimeout)
	answers := engine(t, doc, nil)
	doc, _ = execConfig(t, allHooks, ","+hangTimeout)
	hangs := engine(t, doc, nil)
	for _, c := range []struct {
		e          *Engine
		text, want string
	}{
		{answers, "fail", "command exited with status 7"},
		{hangs, "hang", "no answer within 500ms"},
		{answers, "garbage", "answered something other than a JSON object"},
		{answers, "typo", `answered an invalid decision: json: unknown field "acton"`},
	} {
		u := &upstream{}
		_, _, _, err := c.e.Call(context.Background(), call(c.text), u.next)
		interceptorError(t, err, c.want)
		if u.calls.Load() != 0 {
			t.Errorf("%s: the server was called", c.text)
		}
	}
}

// With failOpen, each failure of the before hook lets the call through, and
// the after hook (which answers at once) leaves the result as it is. The
// command that never answers runs on the before hook only, with a short
// timeout: an after hook with that timeout would fail open too on a loaded
// machine.
func TestExecFailOpen(t *testing.T) {
	doc, _ := execConfig(t, allHooks, ","+answerTimeout+`,"failOpen":true`)
	answers := engine(t, doc, nil)
	doc, _ = execConfig(t, `["before"]`, ","+hangTimeout+`,"failOpen":true`)
	hangs := engine(t, doc, nil)
	for _, c := range []struct {
		e    *Engine
		text string
	}{{answers, "fail"}, {hangs, "hang"}, {answers, "garbage"}} {
		res, trace, _, err := c.e.Call(context.Background(), call(c.text), (&upstream{}).next)
		if err != nil {
			t.Fatalf("%s: %v", c.text, err)
		}
		if got, _ := resultText(t, res); got != "echo:"+c.text || strings.Join(trace, ",") != "tp:failed-open" {
			t.Errorf("%s: %q, trace %v", c.text, got, trace)
		}
	}
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestExecStderrIsLogged(t *testing.T) {
	doc, _ := execConfig(t, allHooks, ","+answerTimeout)
	cfg, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	e := New(cfg, nil, Options{Logger: zerolog.New(&logs)})
	defer e.Close()
	_, _, _, err = e.Call(context.Background(), call("fail"), (&upstream{}).next)
	interceptorError(t, err, "status 7")
	if !strings.Contains(logs.String(), `"interceptor":"tp","stream":"stderr","line":"failing on purpose"`) {
		t.Errorf("log lacks the command's stderr:\n%s", logs.String())
	}
}

// A failOpen warning written in a traced call's context carries the
// call's trace and span ids (through the command's log hook), and one in
// an untraced context (telemetry off) carries none.
func TestFailOpenLogHasTraceIDs(t *testing.T) {
	doc, _ := execConfig(t, allHooks, ","+answerTimeout+`,"failOpen":true`)
	cfg, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	e := New(cfg, nil, Options{Logger: zerolog.New(&logs).Hook(telemetry.LogHook{})})
	defer e.Close()
	if _, _, _, err := e.Call(context.Background(), call("fail"), (&upstream{}).next); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "trace_id") {
		t.Errorf("untraced call's log has a trace id:\n%s", logs.String())
	}
	tid, _ := oteltrace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	sid, _ := oteltrace.SpanIDFromHex("b7ad6b7169203331")
	ctx := oteltrace.ContextWithSpanContext(context.Background(), oteltrace.NewSpanContext(oteltrace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: oteltrace.FlagsSampled}))
	if _, _, _, err := e.Call(ctx, call("fail"), (&upstream{}).next); err != nil {
		t.Fatal(err)
	}
	want := `"trace_id":"0af7651916cd43dd8448eb211c80319c","span_id":"b7ad6b7169203331","message":"interceptor failed; letting the call through (failOpen)"`
	if !strings.Contains(logs.String(), want) {
		t.Errorf("log lacks %s:\n%s", want, logs.String())
	}
}
