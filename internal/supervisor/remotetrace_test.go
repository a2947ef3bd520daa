package supervisor

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// TestRemoteRetryTraced: a call forwarded in a traced request, whose
// remote expired the session (404), carries the re-initialization and the retry as
// events on its client span (received by a real OTLP receiver), and the
// supervisor's log line about it has that span's trace and span ids.
func TestRemoteRetryTraced(t *testing.T) {
	col := fixture.NewCollector(t)
	tel, err := telemetry.New(context.Background(), telemetry.Options{
		Env: col.Env})
	if err != nil || !tel.Tracing() {
		t.Fatalf("telemetry.New = %v, %v", tel, err)
	}
	// The remote forgets the session without closing the standalone
	// stream, so that the call, not the stream, is what finds it gone.
	rem := fixture.StartRemote(t, fixture.RemoteOptions{Token: "tok", JSONNotFound: true})
	spec := catalog.ServerSpec{URL: rem.URL(), Headers: map[string]string{"Authorization": "Bearer tok"}}
	r, logs := runRemote(t, spec, RemoteOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	params := json.RawMessage(`{"name":"generation","arguments":{}}`)
	if _, err := r.CallRaw(ctx, "tools/call", params); err != nil {
		t.Fatalf("first call: %v", err)
	}
	rem.ForgetSessions()
	sctx, served := tel.Serve(ctx, telemetry.Request{Method: "tools/call", Tool: "generation"})
	fctx, fwd := telemetry.Forward(sctx, "rm", telemetry.Request{Method: "tools/call", Tool: "generation"})
	res, err := r.CallRaw(fctx, "tools/call", params)
	if err != nil || rem.Inits.Load() != 2 {
		t.Fatalf("call after the remote forgot the session: %s, %v (initializes %d)", res, err, rem.Inits.Load())
	}
	fwd.End("")
	served.End("")
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans, _ := col.Spans()
	var names []string
	for _, s := range spans {
		if s.Name != "tools/call generation" || s.ParentSpanId == nil || len(s.ParentSpanId) == 0 {
			continue
		}
		for _, ev := range s.Events {
			names = append(names, ev.Name)
		}
		want := `"trace_id":"` + hex.EncodeToString(s.TraceId) + `","span_id":"` + hex.EncodeToString(s.SpanId) + `"`
		var line string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "remote session expired") {
				line = l
			}
		}
		if !strings.Contains(line, want) {
			t.Errorf("log line %q lacks the client span's ids %s", line, want)
		}
	}
	if got := strings.Join(names, ","); got != "mcp_gateway.session.reinitialize,mcp_gateway.retry" {
		t.Errorf("client span events %q (of %d spans; errors %v)", got, len(spans), col.Errors())
	}
}
