package aggregate_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/supervisor"
)

// startV2Servers serves the merged server of TypeScript SDK v2 test servers
// (test/ts/v2server.mjs, serving 2025-era clients too), one per name, each
// a stdio child under a supervisor, and returns its URL. It skips without
// node or test/ts's node_modules.
func startV2Servers(t *testing.T, names ...string) string {
	t.Helper()
	ts := tsDir(t)
	log := &logs{}
	logger := zerolog.New(log)
	g := aggregate.New(aggregate.Options{Logger: logger})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	var sups []*supervisor.Server
	for _, name := range names {
		spec := catalog.ServerSpec{Name: name, Kind: catalog.KindLocal, Command: []string{"node", filepath.Join(ts, "v2server.mjs"), "--legacy=serve"}}
		s := supervisor.New(spec, supervisor.Options{
			Logger:       logger,
			NewClient:    g.NewClient,
			Intercept:    g.Intercept,
			ServeRequest: g.ServeRequest,
			OnReady: func(ctx context.Context, s *supervisor.Server, cs *mcp.ClientSession, raw supervisor.RoundTrip) error {
				return g.Sync(ctx, s.Name(), cs, raw)
			},
		})
		g.Add(s)
		sups = append(sups, s)
		wg.Go(func() { s.Run(ctx) })
	}
	for _, s := range sups {
		if err := s.WaitStarted(ctx); err != nil {
			t.Fatalf("start %s: %v\nlog:\n%s", s.Name(), err, log)
		}
	}
	return serveGateway(t, g)
}

// TestRewrittenResourcesAsListed: of two servers publishing the same
// resource and template (TypeScript SDK servers, which write members in
// another order than the Go SDK's types), the later server's copies are
// listed as that server listed them, byte for byte, but for the
// rewritten uri and uriTemplate.
func TestRewrittenResourcesAsListed(t *testing.T) {
	url := startV2Servers(t, "v2a", "v2b")
	sid := rawInitialize(t, url)
	for _, c := range []struct{ method, member, key, value string }{
		{"resources/list", "resources", "uri", "v2://counter"},
		{"resources/templates/list", "resourceTemplates", "uriTemplate", "v2://item/{id}"},
	} {
		res := rawRequest(t, url, sid, c.method, `{}`)
		first := rawItem(t, res, c.member, c.key, c.value)
		rewritten := aggregate.RewritePrefix + "v2b/" + c.value
		want := strings.Replace(first, `"`+c.key+`":"`+c.value+`"`, `"`+c.key+`":"`+rewritten+`"`, 1)
		if got := rawItem(t, res, c.member, c.key, rewritten); got != want {
			t.Errorf("%s: v2b's copy as served:\n%s\nwant v2a's as listed, %s rewritten:\n%s", c.method, got, c.key, want)
		}
	}
}
