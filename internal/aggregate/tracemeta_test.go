package aggregate

import (
	"encoding/json"
	"testing"
)

// TestWithTraceMeta: the forwarded request's _meta carries the gateway's
// span, whatever the agent's _meta held, and every other member stays as
// sent.
func TestWithTraceMeta(t *testing.T) {
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, c := range []struct {
		name, params, tracestate, want string
	}{
		{"no _meta", `{"name":"echo","arguments":{"a":1}}`, "",
			`{"name":"echo","arguments":{"a":1},"_meta":{"traceparent":"` + tp + `"}}`},
		{"empty params", `{}`, "", `{"_meta":{"traceparent":"` + tp + `"}}`},
		{"no _meta, with tracestate", `{"name":"echo"}`, "k=v",
			`{"name":"echo","_meta":{"traceparent":"` + tp + `","tracestate":"k=v"}}`},
		{"agent's _meta kept", `{"_meta":{"progressToken":7},"name":"echo"}`, "",
			`{"_meta":{"progressToken":7,"traceparent":"` + tp + `"},"name":"echo"}`},
		{"agent's traceparent replaced", `{"_meta":{"traceparent":"00-11111111111111111111111111111111-2222222222222222-01"},"name":"echo"}`, "",
			`{"_meta":{"traceparent":"` + tp + `"},"name":"echo"}`},
		{"null _meta", `{"_meta":null,"name":"echo"}`, "",
			`{"_meta":{"traceparent":"` + tp + `"},"name":"echo"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := withTraceMeta(json.RawMessage(c.params), tp, c.tracestate)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
	if _, err := withTraceMeta(json.RawMessage(`{"name":`), tp, ""); err == nil {
		t.Error("params that do not parse were rewritten without an error")
	}
}
