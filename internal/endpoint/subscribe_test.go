package endpoint

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestSubscriptionsOnTheFastPath: resources/subscribe and unsubscribe take
// the fast path (plain JSON, the server's result bytes), forwarded to the
// server that owns the URI with the URI mapped back; the server's
// resources/updated reaches every session subscribed (under the rewritten
// URI they subscribed to), though the SDK never saw those subscriptions,
// and no session that unsubscribed. The server sees one client: an
// unsubscribe while another session still holds the URI is answered by
// the gateway, or it would end that session's updates; the last one is
// forwarded.
func TestSubscriptionsOnTheFastPath(t *testing.T) {
	logs := &syncBuffer{}
	url, token, _ := inProcessGatewayOf(t, testSettings(t, 16), logs,
		fixtureSpec("a", fixture.Options{Name: "a", Tools: []string{"echo"}}),
		fixtureSpec("b", fixture.Options{Name: "b", Tools: []string{"touch"}}))
	s := newRawSession(t, url, token)
	// Until every server's resources are named, requests about them wait
	// on the SDK's path.
	if status, _, r := s.post(`{"jsonrpc":"2.0","id":"l","method":"resources/list"}`); status != http.StatusOK || len(r) != 1 || r[0].Error != nil {
		t.Fatalf("resources/list: %d %+v", status, r)
	}
	shared := aggregate.RewritePrefix + "b/" + fixture.SharedResourceURI
	subscribed := "fixture: subscribed " + fixture.SharedResourceURI
	unsubscribed := "fixture: unsubscribed " + fixture.SharedResourceURI
	for _, c := range []struct{ method, id, log string }{
		{"resources/subscribe", "1", subscribed},
		{"resources/unsubscribe", "2", unsubscribed},
	} {
		status, h, events := s.postEvents(`{"jsonrpc":"2.0","id":` + c.id + `,"method":"` + c.method + `","params":{"uri":"` + shared + `"}}`)
		want := `{"jsonrpc":"2.0","id":` + c.id + `,"result":{}}`
		if ct := h.Get("Content-Type"); status != http.StatusOK || ct != "application/json" || len(events) != 1 || events[0] != want {
			t.Fatalf("%s: status %d, Content-Type %q, %q: want the fast path's %s", c.method, status, ct, events, want)
		}
		waitFor(t, 30*time.Second, "server b to log "+c.log, func() bool { return strings.Count(logs.String(), c.log) == 1 })
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	agent := func() (*mcp.ClientSession, chan string) {
		updates := make(chan string, 16)
		client := mcp.NewClient(&mcp.Implementation{Name: "subscriber", Version: "1"}, &mcp.ClientOptions{
			ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { updates <- req.Params.URI },
		})
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url,
			HTTPClient: &http.Client{Transport: fixture.Bearer(token, http.DefaultTransport)}}, legacySession())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: shared}); err != nil {
			t.Fatal(err)
		}
		return cs, updates
	}
	a, fromA := agent()
	b, fromB := agent()
	touch := func() {
		t.Helper()
		if _, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "touch", Arguments: map[string]any{"uri": fixture.SharedResourceURI}}); err != nil {
			t.Fatal(err)
		}
	}
	next := func(who string, ch chan string) {
		t.Helper()
		select {
		case uri := <-ch:
			if uri != shared {
				t.Errorf("%s: update for %q, want %q", who, uri, shared)
			}
		case <-ctx.Done():
			t.Fatalf("%s: resources/updated never came", who)
		}
	}
	touch()
	next("a", fromA)
	next("b", fromB)

	if err := a.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: shared}); err != nil {
		t.Fatal(err)
	}
	touch()
	next("b", fromB)
	if n := strings.Count(logs.String(), unsubscribed); n != 1 {
		t.Errorf("the server saw %d unsubscribes, want 1: another session still holds the URI", n)
	}
	select {
	case uri := <-fromA:
		t.Errorf("a got an update for %s after it unsubscribed", uri)
	default:
	}
	// The last session to unsubscribe is forwarded.
	if err := b.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: shared}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the last unsubscribe to reach the server", func() bool { return strings.Count(logs.String(), unsubscribed) == 2 })
}
