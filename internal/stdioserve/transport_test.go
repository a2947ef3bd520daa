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

// TestCancelDuringAnswerSparesLaterCall: a notifications/cancelled that
// arrives while the answer to its call is being written is about that call
// only; a later call reusing the id is still answered.
func TestCancelDuringAnswerSparesLaterCall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	serverT, clientT := mcp.NewInMemoryTransports()
	entered, release := make(chan struct{}, 4), make(chan struct{})
	server, err := (&Transport{Inner: &enteringTransport{Transport: serverT, entered: entered, release: release}, Grace: time.Second}).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	client, err := clientT.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	id, _ := jsonrpc.MakeID(float64(1))
	if err := client.Write(ctx, &jsonrpc.Request{ID: id, Method: "tools/call", Params: []byte(`{"name":"x"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Read(ctx); err != nil {
		t.Fatal(err)
	}
	// The answer is on its way out, held in the connection's Write, when
	// the cancellation is read.
	written := make(chan error, 1)
	go func() { written <- server.Write(ctx, &jsonrpc.Response{ID: id, Result: []byte(`"first"`)}) }()
	<-entered
	if err := client.Write(ctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: []byte(`{"requestId":1}`)}); err != nil {
		t.Fatal(err)
	}
	if msg, err := server.Read(ctx); err != nil {
		t.Fatal(err)
	} else if req, ok := msg.(*jsonrpc.Request); !ok || req.Method != "notifications/cancelled" {
		t.Fatalf("server read %#v, want the cancellation (for the SDK to cancel the handler)", msg)
	}
	close(release)
	if msg, err := client.Read(ctx); err != nil {
		t.Fatal(err)
	} else if r, ok := msg.(*jsonrpc.Response); !ok || string(r.Result) != `"first"` {
		t.Fatalf("client read %#v", msg)
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	// A later call with the same id.
	if err := client.Write(ctx, &jsonrpc.Request{ID: id, Method: "tools/call", Params: []byte(`{"name":"y"}`)}); err != nil {
		t.Fatal(err)
	}
	if msg, err := server.Read(ctx); err != nil {
		t.Fatal(err)
	} else if req, ok := msg.(*jsonrpc.Request); !ok || string(req.Params) != `{"name":"y"}` {
		t.Fatalf("server read %#v, want the later call", msg)
	}
	go func() { written <- server.Write(ctx, &jsonrpc.Response{ID: id, Result: []byte(`"second"`)}) }()
	if msg, err := client.Read(ctx); err != nil {
		t.Fatalf("the later call's answer never came: %v", err)
	} else if r, ok := msg.(*jsonrpc.Response); !ok || string(r.Result) != `"second"` {
		t.Fatalf("client read %#v, want the answer \"second\"", msg)
	}
}

// enteringTransport signals each Write of its connection as it starts,
// and holds it until release is closed.
type enteringTransport struct {
	mcp.Transport
	entered chan struct{}
	release chan struct{}
}

func (e *enteringTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := e.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &enteringConn{Connection: c, entered: e.entered, release: e.release}, nil
}

type enteringConn struct {
	mcp.Connection
	entered chan struct{}
	release chan struct{}
}

func (e *enteringConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	e.entered <- struct{}{}
	select {
	case <-e.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return e.Connection.Write(ctx, msg)
}
