package supervisor

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
)

// BenchmarkStartEra is the time from Run to ready of one stdio server on
// node (node's start included), reported as metrics of their own (ms per
// start), for three servers, each started with the era probe (the rule
// since the gateway speaks 2026-07-28 to every server that supports it) and
// with the 2025 initialize first (the rule before, and what a start costs
// once a server's era is known to be 2025):
//
//   - both-eras: v2server (the TypeScript SDK v2) as it ships. Probe: one
//     start in the 2026 era. Initialize first: one start in the 2025 era.
//   - 2026-only: v2server --legacy=reject. Probe: one start. Initialize
//     first: the refused initialize, then a second start in the 2026 era.
//   - 2025-only: server-everything (the TypeScript SDK v1). Probe: the
//     refused server/discover, then initialize on the same process.
//     Initialize first: what its start always cost.
//
// The cases alternate within each iteration, so that a shared machine's
// load weighs on them alike.
func BenchmarkStartEra(b *testing.B) {
	script := v2ServerScript(b)
	everything := everythingBin(b)
	cases := []struct {
		metric string
		argv   []string
		known  string
	}{
		{"both-eras-probe-ms", []string{"node", script}, ""},
		{"both-eras-init-ms", []string{"node", script}, ProtocolVersion},
		{"2026-only-probe-ms", []string{"node", script, "--legacy=reject"}, ""},
		{"2026-only-init-ms", []string{"node", script, "--legacy=reject"}, ProtocolVersion},
		{"2025-only-probe-ms", []string{"node", everything, "stdio"}, ""},
		{"2025-only-init-ms", []string{"node", everything, "stdio"}, ProtocolVersion},
	}
	total := make([]time.Duration, len(cases))
	n := 0
	for b.Loop() {
		for i, c := range cases {
			s := New(catalog.ServerSpec{Name: "srv", Kind: catalog.KindLocal, Command: c.argv}, Options{Logger: zerolog.Nop()})
			if c.known != "" {
				s.era.set(c.known)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			begin := time.Now()
			go func() {
				s.Run(ctx)
				close(done)
			}()
			err := s.WaitStarted(ctx)
			total[i] += time.Since(begin)
			cancel()
			<-done
			if err != nil {
				b.Fatal(err)
			}
		}
		n++
	}
	for i, c := range cases {
		b.ReportMetric(float64(total[i].Milliseconds())/float64(n), c.metric)
	}
}
