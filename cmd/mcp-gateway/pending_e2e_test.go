package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// statelessCall sends one 2026-era tools/call to the gateway of sb over HTTP (no session: the envelope in _meta,
// the revision's headers) with extra params members (inputResponses, requestState) and returns its answer.
func statelessCall(t *testing.T, sb *testbox, tool string, args, extra map[string]any) reply {
	t.Helper()
	params := map[string]any{"name": tool, "arguments": args, "_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{"form": map[string]any{}}},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "pending-test", "version": "1"},
	}}
	for k, v := range extra {
		params[k] = v
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest("POST", sb.url()+"/mcp", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Authorization": "Bearer " + sb.token, "Content-Type": "application/json",
		"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("tools/call %s: %v", tool, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("tools/call %s: reading the answer: %v", tool, err)
	}
	rs := replies(t, resp, b)
	if len(rs) != 1 {
		t.Fatalf("tools/call %s: HTTP %d, %d responses in %.500s; want one", tool, resp.StatusCode, len(rs), b)
	}
	return rs[0]
}

// TestPendingInputFrom2025Server: server-everything (a 2025-era server, over stdio) asks for sampling and
// elicitation while it handles a 2026-era agent's call. The gateway answers the call with an InputRequiredResult
// holding the server's request and a gateway requestState; the agent's retry with inputResponses completes the
// server's request and gets the call's result. A tampered state is refused with -32602, and so is the state on a
// second gateway with the same config (another replica), saying so; the TypeScript SDK v2 client pinned to
// 2026-07-28 and the Go SDK's default client (which negotiates 2026-07-28 with the gateway) run the round trip
// by themselves.
func TestPendingInputFrom2025Server(t *testing.T) {
	ts := tsHarness(t)
	everything := npmServer(t, ts, "mcp-server-everything")
	cfg := mcpConfig(t, map[string]any{"everything": map[string]any{"runCmd": "'" + everything + "' stdio"}})
	a, b := newTestbox(t), newTestbox(t)
	a.mustLaunch(cfg)
	b.mustLaunch(cfg)

	args := map[string]any{"prompt": "pending", "maxTokens": 20}
	first := statelessCall(t, a, "trigger-sampling-request", args, nil)
	if first.Error != nil {
		t.Fatalf("first call: error %d %s; want an InputRequiredResult", first.Error.Code, first.Error.Message)
	}
	var ir struct {
		ResultType    string `json:"resultType"`
		RequestState  string `json:"requestState"`
		InputRequests map[string]struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		} `json:"inputRequests"`
	}
	if err := json.Unmarshal(first.Result, &ir); err != nil || ir.ResultType != "input_required" || len(ir.InputRequests) != 1 ||
		!strings.HasPrefix(ir.RequestState, "gw1.") {
		t.Fatalf("first call: %s; want an InputRequiredResult with one request and a gw1 requestState", first.Result)
	}
	var key string
	for k, r := range ir.InputRequests {
		key = k
		if r.Method != "sampling/createMessage" || !strings.Contains(string(r.Params), "pending") {
			t.Fatalf("input request %s: %s %s; want the server's sampling/createMessage as sent", k, r.Method, r.Params)
		}
	}
	answer := map[string]any{key: map[string]any{"role": "assistant", "model": "agent-model",
		"content": map[string]any{"type": "text", "text": "sampled in a retry"}}}

	other := statelessCall(t, b, "trigger-sampling-request", args, map[string]any{"inputResponses": answer, "requestState": ir.RequestState})
	if other.Error == nil || other.Error.Code != -32602 || !strings.Contains(other.Error.Message, "another gateway replica") {
		t.Errorf("retry on another replica: %+v %s; want -32602 naming another replica", other.Error, other.Result)
	}
	tampered := statelessCall(t, a, "trigger-sampling-request", args, map[string]any{"inputResponses": answer, "requestState": ir.RequestState + "x"})
	if tampered.Error == nil || tampered.Error.Code != -32602 || !strings.Contains(tampered.Error.Message, "integrity") {
		t.Errorf("retry with a tampered state: %+v %s; want -32602 for its failed integrity check", tampered.Error, tampered.Result)
	}
	done := statelessCall(t, a, "trigger-sampling-request", args, map[string]any{"inputResponses": answer, "requestState": ir.RequestState})
	if done.Error != nil || !strings.Contains(string(done.Result), "sampled in a retry") || !strings.Contains(string(done.Result), `"resultType":"complete"`) {
		t.Errorf("retry: %+v %s; want the call's result with the agent's sampling answer", done.Error, done.Result)
	}
	again := statelessCall(t, a, "trigger-sampling-request", args, map[string]any{"inputResponses": answer, "requestState": ir.RequestState})
	if again.Error == nil || again.Error.Code != -32602 {
		t.Errorf("second retry of a finished call: %+v %s; want -32602", again.Error, again.Result)
	}

	lines := runV2Client(t, ts, "--mode=2026-07-28", "--token="+a.token,
		`--steps=[{"op":"tools/call","name":"trigger-sampling-request","arguments":{"prompt":"from v2","maxTokens":20}},`+
			`{"op":"tools/call","name":"trigger-elicitation-request","arguments":{}}]`,
		a.url()+"/mcp")
	if len(lines) != 3 || lines[0].Era != "modern" {
		t.Fatalf("v2client: %+v; want connect on the 2026 era and 2 steps", lines)
	}
	for i, want := range map[int]string{1: "sampled by v2client", 2: "v2client"} {
		if l := lines[i]; l.Error != nil || !strings.Contains(string(l.Result), want) {
			t.Errorf("v2client %s: %+v %s; want %q in the result", l.Op, l.Error, l.Result, want)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "go-agent", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "go-model", Role: "assistant", Content: &mcp.TextContent{Text: "sampled by the Go agent"}}, nil
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: a.url() + "/mcp",
		HTTPClient: &http.Client{Transport: fixture.Bearer(a.token, http.DefaultTransport)}}, nil)
	if err != nil {
		t.Fatalf("Go SDK client: connect: %v", err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("Go SDK client: negotiated %s; want 2026-07-28", v)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "trigger-sampling-request", Arguments: map[string]any{"prompt": "go", "maxTokens": 20}})
	if err != nil {
		t.Fatalf("Go SDK client: call: %v", err)
	}
	if b, _ := json.Marshal(res); res.IsError || !strings.Contains(string(b), "sampled by the Go agent") {
		t.Errorf("Go SDK client: %s; want the agent's sampling answer in the result", b)
	}
}

// TestPendingInputFromRemote2025Server: the same round trip when the 2025-era server is a `url` (server-everything
// in its streamable-HTTP mode), whose requests reach the gateway through the SDK client's handlers rather than the
// stdio reader: the TypeScript SDK v2 client pinned to 2026-07-28 answers its sampling and elicitation requests.
func TestPendingInputFromRemote2025Server(t *testing.T) {
	ts := tsHarness(t)
	everything := npmServer(t, ts, "mcp-server-everything")
	url := startEverythingHTTP(t, everything)
	gw := newTestbox(t)
	gw.mustLaunch(mcpConfig(t, map[string]any{"everything": map[string]any{"url": url}}))
	lines := runV2Client(t, ts, "--mode=2026-07-28", "--token="+gw.token,
		`--steps=[{"op":"tools/call","name":"trigger-sampling-request","arguments":{"prompt":"from v2","maxTokens":20}},`+
			`{"op":"tools/call","name":"trigger-elicitation-request","arguments":{}}]`,
		gw.url()+"/mcp")
	if len(lines) != 3 || lines[0].Era != "modern" {
		t.Fatalf("v2client: %+v; want connect on the 2026 era and 2 steps", lines)
	}
	for i, want := range map[int]string{1: "sampled by v2client", 2: "v2client"} {
		if l := lines[i]; l.Error != nil || !strings.Contains(string(l.Result), want) {
			t.Errorf("v2client %s: %+v %s; want %q in the result", l.Op, l.Error, l.Result, want)
		}
	}
}
