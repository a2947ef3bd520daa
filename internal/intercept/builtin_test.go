package intercept

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
)

func TestToolFilters(t *testing.T) {
	servers := []catalog.ServerSpec{
		{Name: "gh", Tools: &catalog.ToolFilter{Allow: []string{"get_*", "list_*"}, Deny: []string{"get_secret*"}}},
		{Name: "fs"},
		{Name: "odd*", Tools: &catalog.ToolFilter{Deny: []string{"read_file"}}},
	}
	e := engine(t, `{"interceptors":[{"name":"no-writes","type":"toolFilter","servers":["fs","gh"],"deny":["*write*"]}]}`, servers)
	tools := []*mcp.Tool{{Name: "get_issue"}, {Name: "get_secret_value"}, {Name: "list_prs"}, {Name: "create_pr"}, {Name: "list_write_ops"}}
	if got := names(e.Visible(context.Background(), "gh", tools)); got != "get_issue,list_prs" {
		t.Errorf("gh: visible %s", got)
	}
	fs := []*mcp.Tool{{Name: "read_file"}, {Name: "write_file"}}
	if got := names(e.Visible(context.Background(), "fs", fs)); got != "read_file" {
		t.Errorf("fs: visible %s", got)
	}
	if got := names(e.Visible(context.Background(), "other", fs)); got != "read_file,write_file" {
		t.Errorf("a server out of scope: visible %s", got)
	}
	// A server key is matched as written, not as a glob.
	if got := names(e.Visible(context.Background(), "odd*", fs)); got != "write_file" {
		t.Errorf("odd*: visible %s", got)
	}
	if got := names(e.Visible(context.Background(), "oddity", []*mcp.Tool{{Name: "read_file"}})); got != "read_file" {
		t.Errorf("oddity took odd*'s filter: visible %s", got)
	}
	// Filters only list: calls pay nothing for them.
	if e.Applies("gh", "get_issue") {
		t.Error("a tool filter applies to calls")
	}
}

func TestSizeGuard(t *testing.T) {
	e := engine(t, `{"interceptors":[{"name":"size","type":"sizeGuard","maxArgumentBytes":50,"maxResultBytes":60}]}`, nil)
	u := &upstream{}
	res, trace, _, err := e.Call(context.Background(), call(strings.Repeat("a", 50)), u.next)
	if err != nil {
		t.Fatal(err)
	}
	if got, isErr := resultText(t, res); !isErr || !strings.Contains(got, "arguments are 61 bytes; at most 50") || u.calls.Load() != 0 {
		t.Errorf("big arguments: %q, trace %v", got, trace)
	}
	res, trace, _, err = e.Call(context.Background(), call(strings.Repeat("b", 30)), u.next)
	if err != nil {
		t.Fatal(err)
	}
	if got, isErr := resultText(t, res); !isErr || !strings.Contains(got, "was 74 bytes; at most 60 are allowed") || strings.Join(trace, ",") != "size:replace" {
		t.Errorf("big result: %q, trace %v", got, trace)
	}
	res, _, _, err = e.Call(context.Background(), call("ok"), u.next)
	if got, _ := resultText(t, res); err != nil || got != "echo:ok" {
		t.Errorf("small call: %q, %v", got, err)
	}
}

var guardServers = []catalog.ServerSpec{
	{Name: "gh", Env: map[string]string{"GITHUB_TOKEN": "s3cr3t-github-value", "DEBUG": "1"}},
	{Name: "api", Kind: catalog.KindRemote, Headers: map[string]string{"Authorization": "Bearer remote-api-key-123"}},
}

func TestSecretGuardRedacts(t *testing.T) {
	e := engine(t, `{"interceptors":[{"name":"secrets","type":"secretGuard"}]}`, guardServers)
	u := &upstream{}
	// In the arguments (spelled with an escape, which must not hide it),
	// masked before the server sees them; and in the result, as echoed.
	c := call(`token s3cr3t-github\u002dvalue and key remote-api-key-123 and DEBUG=1`)
	res, trace, _, err := e.Call(context.Background(), c, u.next)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := resultText(t, res)
	if got != "echo:token [REDACTED] and key [REDACTED] and DEBUG=1" {
		t.Errorf("result %q", got)
	}
	if strings.Join(trace, ",") != "secrets:rewrite" {
		t.Errorf("trace %v", trace)
	}
	// A well-known token format in a result.
	leak := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"content":[{"type":"text","text":"found ghp_abcdefghijklmnopqrstuvwxyz0123456789 in .env"}]}`), nil
	}
	res, trace, _, err = e.Call(context.Background(), call("x"), leak)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := resultText(t, res); got != "found [REDACTED] in .env" || strings.Join(trace, ",") != "secrets:replace" {
		t.Errorf("pattern: %q, trace %v", got, trace)
	}
}

func TestSecretGuardRefuses(t *testing.T) {
	e := engine(t, `{"interceptors":[{"name":"secrets","type":"secretGuard","mode":"refuse"}]}`, guardServers)
	u := &upstream{}
	res, _, _, err := e.Call(context.Background(), call("send s3cr3t-github-value away"), u.next)
	if err != nil {
		t.Fatal(err)
	}
	got, isErr := resultText(t, res)
	if !isErr || u.calls.Load() != 0 || got != `denied by interceptor "secrets": the arguments contain the value of envs.GITHUB_TOKEN of server "gh"` {
		t.Errorf("refused call: %q (isError %v), server calls %d", got, isErr, u.calls.Load())
	}
	leak := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"content":[{"type":"text","text":"AKIAIOSFODNN7EXAMPLE"}]}`), nil
	}
	res, _, _, err = e.Call(context.Background(), call("x"), leak)
	if err != nil {
		t.Fatal(err)
	}
	if got, isErr := resultText(t, res); !isErr || strings.Contains(got, "AKIA") || !strings.Contains(got, "an AWS access key id") {
		t.Errorf("refused result: %q", got)
	}
}

// TestSecretPatternsOnRealOutput runs the well-known token formats over real
// tool output: the repository's files (lock files full of hashes, base64
// integrity strings, module checksums) and git's log. None may match.
func TestSecretPatternsOnRealOutput(t *testing.T) {
	root := filepath.Join("..", "..")
	var corpus []string
	for _, f := range []string{"go.sum", "test/ts/package-lock.json", "catalog.json", "README.md"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		corpus = append(corpus, string(b))
	}
	if out, err := exec.Command("git", "-C", root, "log", "-n", "300", "--stat", "--format=%H %an <%ae> %s%n%b").Output(); err == nil {
		corpus = append(corpus, string(out))
	}
	g := &secretGuard{patterns: tokenPatterns()}
	for _, text := range corpus {
		for _, line := range strings.Split(text, "\n") {
			if _, found := g.mask(line); found != "" {
				t.Errorf("false positive (%s): %.200s", found, line)
			}
		}
	}
}

func TestSecretPatternsMatchRealFormats(t *testing.T) {
	g := &secretGuard{patterns: tokenPatterns()}
	for _, tok := range []string{
		"ghp_" + strings.Repeat("A1b2", 9),
		"github_pat_" + strings.Repeat("a", 22) + "_" + strings.Repeat("B", 59),
		"glpat-" + strings.Repeat("x", 20),
		"AKIAIOSFODNN7EXAMPLE",
		"xoxb-123456789012-abcdefghijklmnop",
		"sk-ant-api03-" + strings.Repeat("z", 90),
		"sk-proj-" + strings.Repeat("Q", 48),
		"AIza" + strings.Repeat("k", 35),
		"sk_live_" + strings.Repeat("4", 24),
		"hf_" + strings.Repeat("h", 34),
		"e2b_" + strings.Repeat("0a", 20),
		"-----BEGIN OPENSSH PRIVATE KEY-----",
	} {
		if out, found := g.mask("value: " + tok + " end"); found == "" || out != "value: [REDACTED] end" {
			t.Errorf("%s: masked %q (found %q)", tok, out, found)
		}
	}
}

// TestSecretGuardDuplicateNames: arguments naming a member twice are checked
// in every value, whichever one the server's parser keeps: refused in
// refuse mode, and in mask mode the server gets no secret.
func TestSecretGuardDuplicateNames(t *testing.T) {
	const token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	dup := func(first, second string) *Call {
		return &Call{Server: "srv", Tool: "echo", ExportedTool: "srv_echo", Session: "s1",
			Arguments: json.RawMessage(`{"text":"` + first + `","text":"` + second + `"}`)}
	}
	refuse := engine(t, `{"interceptors":[{"name":"secrets","type":"secretGuard","mode":"refuse","patterns":true}]}`, guardServers)
	for name, c := range map[string]*Call{
		"secret first":           dup(token, "harmless"),
		"secret last":            dup("harmless", token),
		"configured value first": dup("s3cr3t-github-value", "harmless"),
	} {
		u := &upstream{}
		res, _, _, err := refuse.Call(context.Background(), c, u.next)
		if err != nil {
			t.Fatal(err)
		}
		if got, isErr := resultText(t, res); !isErr || u.calls.Load() != 0 || !strings.Contains(got, "denied") {
			t.Errorf("refuse mode, %s: %q (isError %v), server calls %d", name, got, isErr, u.calls.Load())
		}
	}
	mask := engine(t, `{"interceptors":[{"name":"secrets","type":"secretGuard","patterns":true}]}`, guardServers)
	var sent json.RawMessage
	record := func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
		sent = args
		return json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`), nil
	}
	if _, _, _, err := mask.Call(context.Background(), dup(token, "harmless"), record); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(sent), "ghp_") || len(sent) == 0 {
		t.Errorf("mask mode sent the server %s", sent)
	}
}
