package aggregate_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// withRawParams hands the gateway's handlers a single request's params as
// the agent sent them (aggregate.WithRawParams), as the endpoint does in
// front of the SDK's handler.
func withRawParams(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(body, &msg) == nil && len(msg.ID) > 0 && len(msg.Params) > 0 && aggregate.KeepsRawParams(msg.Method) {
			r.Header = aggregate.WithRawID(aggregate.WithRawParams(r.Header, msg.Params), msg.ID)
		}
		next.ServeHTTP(w, r)
	})
}

// TestSDKPathForwardsParamsAsSent: on the SDK's path, a prompts/get and a
// completion/complete reach the server with the params the agent sent,
// members the SDK's types do not know and their order kept; only the
// routed name changes. Two fixtures publish the same prompt, so that the
// second one's is renamed (b_verbatim) and must be named back.
func TestSDKPathForwardsParamsAsSent(t *testing.T) {
	_, _, g := startGatewayG(t, map[string]fixture.Options{
		"a": {Name: "a", Verbatim: true}, "b": {Name: "b", Verbatim: true},
	})
	srv := httptest.NewServer(withRawParams(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.Server() }, nil)))
	t.Cleanup(srv.Close)
	sid := rawInitialize(t, srv.URL)
	rawRequest(t, srv.URL, sid, "prompts/list", `{}`) // once listed, every server's prompts are named
	seen := func(method string) string {
		t.Helper()
		res := rawRequest(t, srv.URL, sid, "tools/call", `{"name":"b_`+fixture.ParamsSeenTool+`","arguments":{"method":"`+method+`"}}`)
		var r struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		var all []json.RawMessage
		if err := json.Unmarshal(res, &r); err != nil || len(r.Content) != 1 || json.Unmarshal([]byte(r.Content[0].Text), &all) != nil || len(all) == 0 {
			t.Fatalf("%s: server b read %s", method, res)
		}
		return string(all[len(all)-1])
	}
	for _, c := range []struct{ method, sent, want string }{
		{"prompts/get",
			`{"zeta":[3,1],"name":"b_verbatim","arguments":{"topic":"x"},"alpha":{"b":1,"a":2}}`,
			`{"zeta":[3,1],"name":"verbatim","arguments":{"topic":"x"},"alpha":{"b":1,"a":2}}`},
		{"completion/complete",
			`{"ref":{"type":"ref/prompt","z":0,"name":"b_verbatim"},"argument":{"value":"a","name":"topic"},"unknown":0}`,
			`{"ref":{"type":"ref/prompt","z":0,"name":"verbatim"},"argument":{"value":"a","name":"topic"},"unknown":0}`},
	} {
		rawRequest(t, srv.URL, sid, c.method, c.sent)
		if got := seen(c.method); got != c.want {
			t.Errorf("%s: the agent sent\n%s\nthe server read\n%s\nwant\n%s", c.method, c.sent, got, c.want)
		}
	}
}
