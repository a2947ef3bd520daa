package aggregate

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
)

// TestForwardDecodesParamsOnce: a forwarded request's params are decoded
// once on its way through the raw path (the session's check, Route,
// MayStream, Send, as the HTTP fast path takes them; and RequestStream, as
// stdio mode does), whatever the method, with a progress token or without:
// the route is decided once and the send uses it. Reading the params again
// (to route again, or to find the progress token) fails it.
func TestForwardDecodesParamsOnce(t *testing.T) {
	g, ss := memGateway(t)
	var decodes atomic.Int64
	g.decoded = func() { decodes.Add(1) }
	ctx := context.Background()
	notify := func(string, json.RawMessage) error { return nil }
	ask := func(context.Context, string, json.RawMessage) (json.RawMessage, error) { return nil, nil }
	for _, c := range []struct{ method, params string }{
		{"tools/call", `{"name":"echo","arguments":{"text":"hi"}}`},
		{"tools/call", `{"_meta":{"progressToken":7},"name":"echo","arguments":{"text":"hi"}}`},
		{"tools/call", `{"_meta":{"progress\u0054oken":"t"},"name":"echo"}`},
		{"prompts/get", `{"name":"greet","arguments":{"who":"you"}}`},
		{"prompts/get", `{"name":"greet","_meta":{"progressToken":"p"}}`},
		{"resources/read", `{"uri":"fx://doc"}`},
		{"resources/read", `{"uri":"fx://doc","_meta":{"progressToken":1}}`},
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":"y"}}`},
		{"resources/subscribe", `{"uri":"fx://doc"}`},
		{"resources/unsubscribe", `{"uri":"fx://doc"}`},
	} {
		for _, stream := range []bool{true, false} {
			decodes.Store(0)
			var n Notify
			var a Ask
			if stream {
				n, a = notify, ask
			}
			if !g.RawEligible(ss, true, stream) {
				t.Fatalf("%s: the session's requests are not eligible", c.method)
			}
			f, ok := g.Route(c.method, json.RawMessage(c.params), stream)
			// A progress token without a stream is the SDK's.
			if want := stream || !strings.Contains(c.params, "oken"); ok != want {
				t.Fatalf("Route(%s %s, stream %v) = %v, want %v", c.method, c.params, stream, ok, want)
			}
			if !ok {
				continue
			}
			g.MayStream(ss, &f, true)
			if _, err := g.Send(ctx, ss, &f, n, a); err != nil {
				t.Errorf("%s %s: %v", c.method, c.params, err)
			}
			if got := decodes.Load(); got != 1 {
				t.Errorf("%s %s (stream %v): params decoded %d times on the fast path's way, want once", c.method, c.params, stream, got)
			}
			if !stream {
				continue
			}
			decodes.Store(0)
			var needed bool
			if _, err := g.RequestStream(ctx, ss, c.method, json.RawMessage(c.params), true, notify, ask, &needed); err != nil {
				t.Errorf("RequestStream %s %s: %v", c.method, c.params, err)
			}
			if got := decodes.Load(); got != 1 {
				t.Errorf("RequestStream %s %s: params decoded %d times, want once", c.method, c.params, got)
			}
		}
	}
}
