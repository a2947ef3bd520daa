package endpoint

import (
	"io"
	"net/http"
	"testing"
)

// TestQueryStringReachesEndpoint: /mcp with a query string is the endpoint,
// for a new connection and for one the lane serves.
func TestQueryStringReachesEndpoint(t *testing.T) {
	url, token, _ := inProcessGateway(t, testSettings(t, DefaultMaxSessions), io.Discard)
	s := newRawSessionAt(t, url+"?x=1", token, "2025-11-25", `{}`)
	for i := range 3 { // later ones ride the kept-alive connection
		status, _, replies := s.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"q"}}}`)
		if status != http.StatusOK || len(replies) != 1 || replies[0].Error != nil {
			t.Fatalf("call %d on /mcp?x=1: %d %+v", i, status, replies)
		}
	}
}
