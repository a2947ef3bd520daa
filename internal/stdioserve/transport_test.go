package stdioserve

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestListChangedOnlyAfterListing: a list_changed about a list the
// client has not asked for is not written (it could precede the client's
// initialize answer); once the client listed that kind, every change is.
func TestListChangedOnlyAfterListing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	serverT, clientT := mcp.NewInMemoryTransports()
	server, err := (&Transport{Inner: serverT, Grace: time.Second}).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	client, err := clientT.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	// The in-memory pipe blocks a write until it is read: read everything
	// the client gets as it comes.
	got := make(chan jsonrpc.Message, 16)
	go func() {
		for {
			msg, err := client.Read(ctx)
			if err != nil {
				close(got)
				return
			}
			got <- msg
		}
	}()

	notify := func(method string) {
		t.Helper()
		if err := server.Write(ctx, &jsonrpc.Request{Method: method, Params: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing listed yet: both are held back; the ping after them is what
	// the client reads first.
	notify("notifications/prompts/list_changed")
	notify("notifications/resources/list_changed")
	notify("notifications/message")
	if m := readMethod(ctx, t, got); m != "notifications/message" {
		t.Fatalf("first message the client got: %q, want notifications/message", m)
	}

	// The client lists resource templates: resources changes now reach it,
	// prompts changes still do not.
	id, _ := jsonrpc.MakeID(float64(7))
	if err := client.Write(ctx, &jsonrpc.Request{ID: id, Method: "resources/templates/list", Params: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if msg, err := server.Read(ctx); err != nil {
		t.Fatal(err)
	} else if req, ok := msg.(*jsonrpc.Request); !ok || req.Method != "resources/templates/list" {
		t.Fatalf("server read %#v", msg)
	}
	notify("notifications/prompts/list_changed")
	notify("notifications/resources/list_changed")
	notify("notifications/message")
	if m := readMethod(ctx, t, got); m != "notifications/resources/list_changed" {
		t.Fatalf("after listing templates the client got %q, want notifications/resources/list_changed", m)
	}
	if m := readMethod(ctx, t, got); m != "notifications/message" {
		t.Fatalf("then %q, want notifications/message", m)
	}
}

func readMethod(ctx context.Context, t *testing.T, got <-chan jsonrpc.Message) string {
	t.Helper()
	var msg jsonrpc.Message
	select {
	case m, ok := <-got:
		if !ok {
			t.Fatal("client connection closed")
		}
		msg = m
	case <-ctx.Done():
		t.Fatal("nothing reached the client")
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		t.Fatalf("client read %#v, want a notification", msg)
	}
	return req.Method
}
