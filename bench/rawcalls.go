package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/supervisor"
)

// The two eras' plain call compared with one client. The paths rows drive
// each era with the Go SDK's own client, and its 2026-era client costs
// more CPU per call than its 2025-era one: on a machine whose two CPUs the
// clients share with the gateway, the 2026 row then runs at fewer calls
// per second, and the gateway's CPU per call is not measured at the same
// load (at a lower rate its wake-ups are spread over fewer calls). Here
// both eras are driven by the same plain HTTP client (rawSession), 8
// workers each, each worker's request built once and sent back to back,
// every answer checked, the client declaring the same capabilities in both
// eras (roots, as the Go SDK client does by default): the 2025 worker on a
// session of its own (the fast path, on the HTTP lane), the 2026 worker
// with no session (the revision's headers and _meta on every request).
// A third row is the 2026 client declaring no capabilities, whose calls
// need no pending call (aggregate.SendStateless). The rows run in turn
// twice, A B C C B A, so that a load that drifts during the run weighs on
// each; each row reports its two runs together.

// rawCaps is what the raw clients declare: the Go SDK client's defaults.
const rawCaps = `{"roots":{"listChanged":true}}`

// rawEchoText is what each raw call sends and expects back.
const rawEchoText = "the quick brown fox jumps over the lazy dog"

// rawEraRow is one era's row: its workers and what the runs added up to.
type rawEraRow struct {
	name       string
	workers    []call
	calls      int
	elapsed    time.Duration
	gw, client time.Duration
	lats       []time.Duration
}

// rawEraRuns adds the two rows to the table.
func (b *bench) rawEraRuns(ctx context.Context, bx *box) error {
	hc := httpClient(bx.token)
	defer hc.CloseIdleConnections()
	proto := b.opt.protocol
	if proto == "" {
		proto = supervisor.ProtocolVersion
	}
	var seq atomic.Int64
	legacy := &rawEraRow{name: "2025 era, a session each: fast path"}
	var sessions []*rawSession
	defer func() {
		for _, s := range sessions {
			s.close(context.WithoutCancel(ctx))
		}
	}()
	for range sdkPathSessions {
		s, err := rawConnectWith(ctx, bx, proto, rawCaps, hc)
		if err != nil {
			return err
		}
		sessions = append(sessions, s)
		legacy.workers = append(legacy.workers, rawEchoCall(s, &seq, "", ""))
	}
	stateless := &rawEraRow{name: "2026 era, stateless"}
	bare := &rawEraRow{name: "2026 era, stateless, client that declares no capabilities"}
	for range sdkPathSessions {
		s := &rawSession{url: "http://" + bx.addr + "/mcp", token: bx.token, protocol: statelessProtocol, hc: hc,
			header: http.Header{"Mcp-Method": {"tools/call"}, "Mcp-Name": {directEchoTool}}}
		stateless.workers = append(stateless.workers, rawEchoCall(s, &seq, statelessProtocol, rawCaps))
		bare.workers = append(bare.workers, rawEchoCall(s, &seq, statelessProtocol, `{}`))
	}
	rows := []*rawEraRow{legacy, stateless, bare}
	for _, row := range rows {
		if _, err := drive(ctx, row.workers, 0, warmupCalls); err != nil {
			return fmt.Errorf("raw HTTP client, %s: warm-up: %w", row.name, err)
		}
	}
	back := slices.Clone(rows)
	slices.Reverse(back)
	for _, row := range append(slices.Clone(rows), back...) {
		b.logf("gateway, raw HTTP client, %d workers, %s, %s", sdkPathSessions, row.name, b.opt.duration)
		gw0, err := cpuTime(bx.gwPID)
		if err != nil {
			return err
		}
		c0 := ownCPUTime()
		s, err := drive(ctx, row.workers, b.opt.duration, 0)
		if err != nil {
			return fmt.Errorf("raw HTTP client, %s: %w", row.name, err)
		}
		c1 := ownCPUTime()
		gw1, err := cpuTime(bx.gwPID)
		if err != nil {
			return err
		}
		row.calls += s.calls
		row.elapsed += s.elapsed
		row.gw += gw1 - gw0
		row.client += c1 - c0
		row.lats = append(row.lats, s.lat...)
	}
	for _, row := range rows {
		s := stats{calls: row.calls, elapsed: row.elapsed, lat: row.lats}
		slices.Sort(s.lat)
		cpu := perCall(row.gw, row.calls)
		b.tbl.add(fmt.Sprintf("gateway CPU per call, raw HTTP client, %d workers, %s (plain call)", sdkPathSessions, row.name),
			fmt.Sprintf("%s (%s; client CPU %s per call)", dur(cpu), throughput(s), dur(perCall(row.client, row.calls))),
			"≤ 150 µs", judge(cpu <= targetCPUPerCall))
	}
	return nil
}

// rawEchoCall calls the fixture's echo tool on s and checks the answer: a
// 2025-era request on s's session when version is "", else a 2026-era
// request of that version, with its _meta declaring caps.
func rawEchoCall(s *rawSession, seq *atomic.Int64, version, caps string) call {
	meta := ""
	if version != "" {
		meta = fmt.Sprintf(`,"_meta":{"io.modelcontextprotocol/protocolVersion":%q,"io.modelcontextprotocol/clientCapabilities":%s,"io.modelcontextprotocol/clientInfo":{"name":"bench-raw","version":"1"}}`, version, caps)
	}
	return func(ctx context.Context) error {
		id := seq.Add(1)
		body := []byte(`{"jsonrpc":"2.0","id":` + strconv.FormatInt(id, 10) + `,"method":"tools/call","params":{"name":"` +
			directEchoTool + `","arguments":{"text":"` + rawEchoText + `"}` + meta + `}}`)
		msg, _, err := s.call(ctx, body)
		if err != nil {
			return fmt.Errorf("raw call %s: %w", directEchoTool, err)
		}
		var res struct {
			ID     int64 `json:"id"`
			Result *struct {
				ResultType string `json:"resultType"`
				IsError    bool   `json:"isError"`
				Content    []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal(msg, &res); err != nil {
			return fmt.Errorf("raw call %s: %w: %.200s", directEchoTool, err, msg)
		}
		r := res.Result
		if res.ID != id || r == nil || r.IsError || len(r.Content) != 1 || r.Content[0].Text != rawEchoText ||
			(version != "" && r.ResultType != "complete") {
			return fmt.Errorf("raw call %s: unexpected answer %.300s", directEchoTool, msg)
		}
		return nil
	}
}
