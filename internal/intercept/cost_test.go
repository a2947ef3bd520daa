package intercept

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
)

// The decision every tools/call makes first: whether any interceptor
// applies. Without interceptors the engine is nil; with interceptors scoped
// elsewhere it is a glob match per interceptor. Neither allocates.

func outOfScope(t testing.TB) *Engine {
	cfg, err := Parse([]byte(`{"interceptors":[
		{"name":"a","type":"exec","command":"true","hooks":["before","after"],"servers":["github*"]},
		{"name":"b","type":"sizeGuard","maxResultBytes":1000,"servers":["fs"],"tools":["write_*"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return New(cfg, []catalog.ServerSpec{{Name: "s00", Tools: &catalog.ToolFilter{Deny: []string{"x"}}}}, Options{})
}

func TestNoInterceptorsNoEngine(t *testing.T) {
	if e := New(&Config{}, []catalog.ServerSpec{{Name: "s00"}}, Options{}); e != nil {
		t.Fatalf("an engine with nothing to run: %+v", e)
	}
	var e *Engine
	if e.Applies("s00", "echo") {
		t.Error("a nil engine applies")
	}
}

func TestAppliesAllocatesNothing(t *testing.T) {
	e := outOfScope(t)
	if e.Applies("s00", "echo") || !e.Applies("github", "echo") || !e.Applies("fs", "write_file") || e.Applies("fs", "read_file") {
		t.Fatal("scopes misread")
	}
	if n := testing.AllocsPerRun(100, func() { e.Applies("s00", "echo") }); n != 0 {
		t.Errorf("Applies allocates %.0f times per call", n)
	}
}

func BenchmarkAppliesNil(b *testing.B) {
	var e *Engine
	for b.Loop() {
		e.Applies("s00", "echo")
	}
}

func BenchmarkAppliesOutOfScope(b *testing.B) {
	e := outOfScope(b)
	for b.Loop() {
		e.Applies("s00", "echo")
	}
}

// BenchmarkPluginCall is one call through a plugin interceptor at before
// and after that continues (the test plugin, with arguments it ignores):
// the gateway's side of two gRPC round trips.
func BenchmarkPluginCall(b *testing.B) {
	buildPlugins(b)
	e := engineB(b, pluginConfig(filepath.Join(binDir, "testplugin"), ""))
	u := &upstream{}
	c := call("hello")
	for b.Loop() {
		if _, _, _, err := e.Call(context.Background(), c, u.next); err != nil {
			b.Fatal(err)
		}
	}
}

func engineB(b *testing.B, doc string) *Engine {
	cfg, err := Parse([]byte(doc))
	if err != nil {
		b.Fatal(err)
	}
	e := New(cfg, nil, Options{})
	if err := e.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.Close)
	return e
}
