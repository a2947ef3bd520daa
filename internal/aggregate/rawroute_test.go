package aggregate_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestRawPathRenamedItems: on the raw path (Route, then Send, as the
// endpoint's fast path forwards), a tool, prompt and resource the gateway
// renamed after a collision reach their server under the server's own name
// or URI, and the agent gets the server's answer, with a resource's
// contents under the URI the agent read; a subscription to a renamed URI is
// the server's, under its own URI, until unsubscribed.
func TestRawPathRenamedItems(t *testing.T) {
	url, _, g := startGatewayG(t, map[string]fixture.Options{"a": {Name: "a"}, "b": {Name: "b"}})
	cs := connect(t, url, nil)
	ss := sessionOf(t, g, cs.ID())
	ctx := ctxT(t)
	// The SDK path waits for every server's prompts to be named; the raw
	// path declines until then.
	if _, err := cs.ListPrompts(ctx, nil); err != nil {
		t.Fatal(err)
	}
	send := func(method, params string) string {
		t.Helper()
		f, ok := g.Route(method, json.RawMessage(params), false)
		if !ok {
			t.Fatalf("Route(%s %s) declined", method, params)
		}
		res, err := g.Send(ctx, ss, &f, nil, nil)
		if err != nil {
			t.Fatalf("%s %s: %v", method, params, err)
		}
		return string(res)
	}
	if res := send("tools/call", `{"name":"b_echo","arguments":{"text":"to b"}}`); !strings.Contains(res, `"text":"to b"`) || strings.Contains(res, `"isError":true`) {
		t.Errorf("b_echo: %s", res)
	}
	// With a progress token, which the gateway replaces by one of its own.
	f, ok := g.Route("tools/call", json.RawMessage(`{"_meta":{"progressToken":"p"},"name":"b_echo","arguments":{"text":"with progress"}}`), true)
	if !ok {
		t.Fatal("Route declined a call with a progress token and a stream")
	}
	notify := func(string, json.RawMessage) error { return nil }
	ask := func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		return nil, errors.New("not asked")
	}
	if res, err := g.Send(ctx, ss, &f, notify, ask); err != nil || !strings.Contains(string(res), `"text":"with progress"`) {
		t.Errorf("b_echo with a progress token: %s %v", res, err)
	}
	if res := send("prompts/get", `{"name":"b_greet","arguments":{"name":"Ada"}}`); !strings.Contains(res, `"description":"greeting from b"`) {
		t.Errorf("b_greet: %s", res)
	}
	rewritten := aggregate.RewritePrefix + "b/" + fixture.SharedResourceURI
	res := send("resources/read", `{"uri":"`+rewritten+`"}`)
	var read struct {
		Contents []struct{ URI, Text string }
	}
	if err := json.Unmarshal([]byte(res), &read); err != nil || len(read.Contents) != 1 || read.Contents[0].Text != "readme of b" || read.Contents[0].URI != rewritten {
		t.Errorf("read %s: %s %v; want b's readme under the URI read", rewritten, res, err)
	}
	send("resources/subscribe", `{"uri":"`+rewritten+`"}`)
	if got := g.Subscribed("b"); !slices.Equal(got, []string{fixture.SharedResourceURI}) {
		t.Errorf("after a raw subscribe to %s, b's subscriptions are %v", rewritten, got)
	}
	send("resources/unsubscribe", `{"uri":"`+rewritten+`"}`)
	if got := g.Subscribed("b"); len(got) != 0 {
		t.Errorf("after a raw unsubscribe, b's subscriptions are %v", got)
	}
}
