package aggregate

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMergeCacheHints merges every pair of hints from a set that covers
// the edges (zero, negative, equal and different ttlMs; public, private,
// absent and unknown scopes): the merged ttlMs is the smaller one (never
// negative) and the scope is public only if both are (absent counting as
// public, the revision's default), so that no server's hint is loosened;
// the merge does not depend on the order.
func TestMergeCacheHints(t *testing.T) {
	hints := []cacheHint{
		{0, "public"}, {0, "private"}, {1000, "public"}, {1000, "private"},
		{60000, "public"}, {60000, ""}, {-5, "public"}, {500, "shared"},
	}
	isPublic := func(s string) bool { return s == "public" || s == "" }
	for _, a := range hints {
		for _, b := range hints {
			t.Run(fmt.Sprintf("%v+%v", a, b), func(t *testing.T) {
				got := mergeCacheHints(a, b)
				want := cacheHint{TTLMs: max(min(a.TTLMs, b.TTLMs), 0), Scope: "private"}
				if isPublic(a.Scope) && isPublic(b.Scope) {
					want.Scope = "public"
				}
				if got != want {
					t.Errorf("merge = %v, want %v", got, want)
				}
				if rev := mergeCacheHints(b, a); rev != got {
					t.Errorf("merge(b, a) = %v, merge(a, b) = %v", rev, got)
				}
			})
		}
	}
	if got := mergeCacheHints(); got != legacyHint() {
		t.Errorf("merge of none = %v, want the legacy hint", got)
	}
	if got := mergeCacheHints(cacheHint{5000, "public"}, legacyHint()); got != (cacheHint{0, "private"}) {
		t.Errorf("a 2026 server's list merged with a 2025 server's = %v, want 0/private", got)
	}
}

// TestStampRawResult: a result held as the server's bytes gains
// resultType, the hints it lacks and the SDK's serverInfo (over a 2026
// server's own) for a 2026-era agent, keeps what else the server said, and
// is untouched otherwise.
func TestStampRawResult(t *testing.T) {
	info := mcp.Meta{"io.modelcontextprotocol/serverInfo": map[string]string{"name": "mcp-gateway"}}
	hint := cacheHint{0, "private"}
	cases := []struct {
		raw  string
		meta mcp.Meta
		hint *cacheHint
		want string
	}{
		{`{"tools":[]}`, info, &hint,
			`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-gateway"}},"cacheScope":"private","resultType":"complete","tools":[],"ttlMs":0}`},
		{`{"content":[],"_meta":{"k":1}}`, info, nil,
			`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-gateway"},"k":1},"content":[],"resultType":"complete"}`},
		{`{"content":[],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"v2server"},"k":1}}`, info, nil,
			`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-gateway"},"k":1},"content":[],"resultType":"complete"}`},
		{`{"contents":[],"ttlMs":30000,"cacheScope":"public","resultType":"complete"}`, nil, &hint,
			`{"cacheScope":"public","contents":[],"resultType":"complete","ttlMs":30000}`},
	}
	for _, c := range cases {
		r := &rawResult{raw: json.RawMessage(c.raw), stateless: true, hint: c.hint}
		r.Meta = c.meta
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if canon(t, b) != canon(t, []byte(c.want)) {
			t.Errorf("stamp(%s) = %s, want %s", c.raw, b, c.want)
		}
		plain := &rawResult{raw: json.RawMessage(c.raw)}
		plain.Meta = c.meta
		if b, _ := json.Marshal(plain); canon(t, b) != canon(t, []byte(c.raw)) {
			t.Errorf("a 2025-era result changed: %s", b)
		}
	}
}

// TestWithoutEnvelope: the 2026 envelope leaves the params a 2025 server
// gets, but for the agent's capabilities (callercaps.go); the rest of _meta
// (a progress token) stays as written, and params without it are the same
// bytes.
func TestWithoutEnvelope(t *testing.T) {
	in := `{"name":"echo","_meta":{"progressToken":3,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"info","io.modelcontextprotocol/clientInfo":{"name":"a"}}}`
	got := withoutEnvelope(json.RawMessage(in))
	// The rest as the agent wrote it, in its order.
	if string(got) != `{"name":"echo","_meta":{"progressToken":3,"io.modelcontextprotocol/clientCapabilities":{}}}` {
		t.Errorf("withoutEnvelope = %s", got)
	}
	plain := `{"name":"echo","_meta":{"progressToken":3}}`
	if got := withoutEnvelope(json.RawMessage(plain)); string(got) != plain {
		t.Errorf("params without the envelope changed: %s", got)
	}
	m := withoutEnvelopeMeta(mcp.Meta{"progressToken": 1, "io.modelcontextprotocol/protocolVersion": "2026-07-28"})
	if len(m) != 1 || m["progressToken"] != 1 {
		t.Errorf("withoutEnvelopeMeta = %v", m)
	}
}

// canon re-encodes JSON with sorted keys, for comparing objects.
func canon(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// TestMayBeAsked: a 2026-era call runs as a pending call exactly when its
// agent declared something a 2025-era server's request could reach it
// with: sampling, elicitation (either mode) or roots. The envelopes are
// read through one gateway's cache, each twice: a cached agent is the one
// its own capabilities make.
func TestMayBeAsked(t *testing.T) {
	var sl statelessShared
	cases := []struct {
		meta string
		want bool
	}{
		{`{}`, false},
		{`{"experimental":{"x":{}},"extensions":{"e":{}}}`, false},
		{`{"roots":{}}`, true},
		{`{"roots":{"listChanged":true}}`, true},
		{`{"sampling":{}}`, true},
		{`{"elicitation":{}}`, true},
		{`{"elicitation":{"url":{}}}`, true},
	}
	for _, c := range append(cases, cases...) {
		meta := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + c.meta + `}`
		agent, ok := sl.envelopeOf(json.RawMessage(meta), statelessRevision)
		if !ok {
			t.Fatalf("envelopeOf(%s) declined", meta)
		}
		if got := mayBeAsked(agent); got != c.want {
			t.Errorf("mayBeAsked(%s) = %v, want %v", c.meta, got, c.want)
		}
	}
}
