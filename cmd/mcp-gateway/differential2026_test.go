package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// The differential test's 2026 leg: the TypeScript SDK v2 client pinned to 2026-07-28 (test/ts/v2client.mjs) drives
// the TypeScript SDK v2 server (test/ts/v2server.mjs) directly and through the gateway (over HTTP and in stdio mode
// with the server as its stdio child, and over HTTP with the server as a url), and what the client receives must be
// the same step by step, apart from documented2026 (each naming the docs/protocol.md entry that says so) and the log
// messages' logger, which the gateway tags with the server's name (diffRenames). The server runs 2026-only
// (--legacy=reject), so every leg is 2026-07-28 end to end; the gateway's relay of a 2026 server's input requests
// (InputRequiredResult, the retry with inputResponses and requestState) is part of what is compared.

// diff2026Steps: every step v2client.mjs knows that a 2026-only server answers through the gateway today.
// Subscriptions (subscriptions/listen) are not in it: which step a notification lands in varies from run to run
// (TestListenTypeScriptClient checks them through the gateway).
const diff2026Steps = `[` +
	`{"op":"tools/list"},{"op":"prompts/list"},{"op":"resources/list"},{"op":"resources/templates/list"},` +
	`{"op":"tools/call","name":"echo","arguments":{"text":"differential 2026"}},` +
	`{"op":"tools/call","name":"nosuchtool","arguments":{}},` +
	`{"op":"prompts/get","name":"greet","arguments":{"name":"alice"}},` +
	`{"op":"resources/read","uri":"v2://counter"},` +
	`{"op":"resources/read","uri":"v2://item/apple"},` +
	`{"op":"completion/complete","ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"al"}},` +
	`{"op":"completion/complete","ref":{"type":"ref/resource","uri":"v2://item/{id}"},"argument":{"name":"id","value":"ap"}},` +
	`{"op":"tools/call","name":"progress","arguments":{"steps":3},"progress":true},` +
	`{"op":"logging/setLevel","level":"info"},` +
	`{"op":"tools/call","name":"progress","arguments":{"steps":2}},` +
	`{"op":"tools/call","name":"ask","arguments":{"kinds":["form","url","sampling","roots"]}},` +
	`{"op":"tools/call","name":"askmore","arguments":{"rounds":2}}` +
	`]`

// documented2026 are the differences of the 2026 leg that docs/protocol.md lists (Protocol versions, 2026 era): a
// step and the path of the difference.
var documented2026 = []struct {
	line   *regexp.Regexp // the step: its op, and for tools/call the tool's name
	path   *regexp.Regexp
	reason string
}{
	{regexp.MustCompile(`^connect$`), regexp.MustCompile(`^\.server\.`), "documented (Protocol versions): server/discover names the gateway (serverInfo), not the server"},
	{regexp.MustCompile(`^tools/call nosuchtool$`), regexp.MustCompile(`^\.error\.message$`), readmeUnknown},
	{regexp.MustCompile(`.`), regexp.MustCompile(`\._meta\.io\.modelcontextprotocol/serverInfo(\.|$)`), "documented (Protocol versions): every result carries the gateway's serverInfo in _meta, over a 2026 server's own"},
}

// runV2ClientRaw runs v2client.mjs and returns its lines as ordered JSON, for comparison member by member.
func runV2ClientRaw(t *testing.T, ts string, args ...string) []any {
	t.Helper()
	return v2ClientLines(t, ts, args, decodeOrdered)
}

// TestDifferential2026: see the comment at the top of this file. Legs, each compared with its direct baseline:
//
//	http   the gateway over HTTP, the server its stdio child; baseline: the server over stdio.
//	stdio  `mcp-gateway stdio`, the server its stdio child; baseline: the server over stdio.
//	url    the server over streamable HTTP as the gateway's remote upstream ({"url": ...}), the gateway over HTTP;
//	       baseline: the same server over HTTP.
func TestDifferential2026(t *testing.T) {
	ts := tsHarness(t)
	t.Parallel()
	server := []string{"node", filepath.Join(ts, "v2server.mjs"), "--legacy=reject"}
	cfg := mcpConfig(t, map[string]any{"v2": map[string]any{"runCmd": "node '" + server[1] + "' --legacy=reject"}})
	pinned := []string{"--mode=2026-07-28", "--steps=" + diff2026Steps}
	direct := runV2ClientRaw(t, ts, append(append(pinned, "--"), server...)...)
	used := make([]bool, len(documented2026))

	t.Run("http", func(t *testing.T) {
		sb := newTestbox(t)
		sb.mustLaunch(cfg)
		gw := runV2ClientRaw(t, ts, append(pinned, "--token="+sb.token, sb.url()+"/mcp")...)
		compare2026(t, direct, gw, used)
	})
	t.Run("stdio", func(t *testing.T) {
		gw := runV2ClientRaw(t, ts, append(append(pinned, "--"), gatewayStdioArgs(t.TempDir(), cfg)...)...)
		compare2026(t, direct, gw, used)
	})
	t.Run("url", func(t *testing.T) {
		url := startV2HTTPServer(t, ts, "--legacy=reject")
		directHTTP := runV2ClientRaw(t, ts, append(pinned, url)...)
		sb := newTestbox(t)
		sb.mustLaunch(mcpConfig(t, map[string]any{"v2": map[string]any{"url": url}}))
		gw := runV2ClientRaw(t, ts, append(pinned, "--token="+sb.token, sb.url()+"/mcp")...)
		compare2026(t, directHTTP, gw, used)
	})
	for j, u := range used {
		if !u {
			t.Errorf("documented2026 entry %q matched no difference: fixed? delete it (and fix docs/protocol.md)", documented2026[j].reason)
		}
	}
}

// compare2026 compares the lines of a direct run and a run through the gateway, step by step in subtests,
// tolerating only documented2026 (and marking in used the entries that matched). The direct baseline must succeed
// at every step but the unknown tool's.
func compare2026(t *testing.T, direct, gw []any, used []bool) {
	t.Helper()
	direct = slices.Clone(direct)
	for i := range direct {
		v, err := decodeOrdered([]byte(encodeOrdered(direct[i])))
		if err != nil {
			t.Fatal(err)
		}
		direct[i] = v
	}
	if len(direct) != len(gw) {
		t.Fatalf("direct printed %d lines, the gateway's client %d:\ndirect:  %s\ngateway: %s", len(direct), len(gw), encodeOrdered(direct), encodeOrdered(gw))
	}
	for i := range direct {
		op := "?"
		if o, ok := direct[i].(*jsonObject); ok {
			if v, ok := o.get("op"); ok {
				op = fmt.Sprint(v)
			}
			if v, ok := o.get("name"); ok {
				op += " " + fmt.Sprint(v)
			}
			if o.vals["error"] != nil && op != "tools/call nosuchtool" {
				t.Errorf("direct step %d (%s) failed: %s; the baseline must succeed", i, op, encodeOrdered(o.vals["error"]))
			}
		}
		diffRenames("v2", direct[i])
		t.Run(fmt.Sprintf("%02d %s", i, op), func(t *testing.T) {
			for _, d := range compareJSON("", direct[i], gw[i]) {
				known := false
				for j, k := range documented2026 {
					if k.line.MatchString(op) && k.path.MatchString(d.path) {
						used[j], known = true, true
						t.Logf("%s: %s", k.reason, d)
						break
					}
				}
				if !known {
					t.Errorf("step %d differs from a direct connection at %s", i, d)
				}
			}
		})
	}
}
