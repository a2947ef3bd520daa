package supervisor

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
)

// BenchmarkStartEra is the time from Run to ready of one stdio server on
// the TypeScript SDK v2 (node's start included), in three cases, reported
// as metrics of their own (ms per start):
//
//   - both-eras: v2server as it ships, which accepts the 2025 initialize:
//     what every 2025 server pays, the same as before the 2026 era.
//   - 2026-first: v2server --legacy=reject on its first start: the refused
//     initialize, the process ended, and a second start in the 2026 era
//     (server/discover): the cost of learning the era.
//   - 2026-known: the same server once its era is known (a restart): one
//     start in the 2026 era.
//
// 2026-first minus 2026-known is what learning the era costs, once per
// server per run. The cases alternate within each iteration, so that a
// shared machine's load weighs on them alike.
func BenchmarkStartEra(b *testing.B) {
	script := v2ServerScript(b)
	cases := []struct {
		metric string
		args   []string
		known  bool
	}{
		{"both-eras-ms", nil, false},
		{"2026-first-ms", []string{"--legacy=reject"}, false},
		{"2026-known-ms", []string{"--legacy=reject"}, true},
	}
	total := make([]time.Duration, len(cases))
	n := 0
	for b.Loop() {
		for i, c := range cases {
			s := New(catalog.ServerSpec{Name: "v2", Kind: catalog.KindLocal, Command: append([]string{"node", script}, c.args...)}, Options{Logger: zerolog.Nop()})
			if c.known {
				s.era.set(Protocol2026)
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
