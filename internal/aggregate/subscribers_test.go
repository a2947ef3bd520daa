package aggregate_test

import (
	"context"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestSubscriptionHeldByTwoSessions: two sessions subscribed to a URI
// each get every update of it, not only the first; when one unsubscribes
// the other still holds the URI (a restarted server would be subscribed
// again, and updates still reach it); once both have, nobody does.
func TestSubscriptionHeldByTwoSessions(t *testing.T) {
	url, _, g := startGatewayG(t, map[string]fixture.Options{"b": {Name: "b"}})
	ctx := ctxT(t)
	uri := fixture.SharedResourceURI
	agent := func() (*mcp.ClientSession, <-chan string) {
		updates := make(chan string, 10)
		cs := connect(t, url, &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			updates <- req.Params.URI
		}})
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
		return cs, updates
	}
	one, oneUpdates := agent()
	two, twoUpdates := agent()
	touch := func() {
		t.Helper()
		if _, err := one.CallTool(ctx, &mcp.CallToolParams{Name: "touch", Arguments: map[string]any{"uri": uri}}); err != nil {
			t.Fatal(err)
		}
	}
	next := func(who string, updates <-chan string) {
		t.Helper()
		select {
		case got := <-updates:
			if got != uri {
				t.Errorf("%s got an update of %q, want %q", who, got, uri)
			}
		case <-ctx.Done():
			t.Fatalf("an update never reached %s", who)
		}
	}
	for range 2 {
		touch()
		next("the first session", oneUpdates)
		next("the second session", twoUpdates)
	}
	if err := one.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	if got := g.Subscribed("b"); !slices.Equal(got, []string{uri}) {
		t.Errorf("after one of two sessions unsubscribed, the gateway would resubscribe %q, want [%s]", got, uri)
	}
	touch()
	next("the session still subscribed", twoUpdates)
	if err := two.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	if got := g.Subscribed("b"); len(got) != 0 {
		t.Errorf("after both sessions unsubscribed, the gateway would resubscribe %q", got)
	}
}
