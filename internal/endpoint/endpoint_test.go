package endpoint

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestHandlerServesWithoutTheLane: Handler is the endpoint without its own
// listener: mounted in another server it serves /mcp (token, guard, fast
// path) and /health like Serve does, and the lane takes no connection.
func TestHandlerServesWithoutTheLane(t *testing.T) {
	_, token, e := inProcessGatewayOf(t, testSettings(t, 16), io.Discard, fixtureSpec("a", fixture.Options{Tools: []string{"echo"}}))
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	s := newRawSession(t, srv.URL+"/mcp", token)
	for _, text := range []string{"one", "two", "three"} {
		s.echo(text) // keep-alive POSTs the fast path answers
	}
	if n := e.lane.adopted.Load(); n != 0 {
		t.Errorf("lane adopted %d connections of the mounted handler, want 0", n)
	}
	bad := *s
	bad.token = "wrong"
	if status, _, _ := bad.post(`{"jsonrpc":"2.0","id":1,"method":"ping"}`); status != http.StatusUnauthorized {
		t.Errorf("wrong token through Handler: HTTP %d, want 401", status)
	}
	if code, h := health(t, srv.URL+"/mcp"); code != http.StatusOK || h.Status != "ok" || len(h.Servers) != 1 || h.Servers[0].Tools != 1 {
		t.Errorf("health through Handler: %d %+v", code, h)
	}
}
