package aggregate

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/supervisor"
)

// onReady starts a real fixture server under a supervisor and runs check
// with its fresh session and raw round trip, as Sync gets them. check runs
// on the test's goroutine while OnReady waits for it: a t.Fatal in check
// then ends the test, where on the supervisor's goroutine it ended only
// OnReady, and the test waited for s.Run to the end of its context.
func onReady(t *testing.T, fx fixture.Options, check func(ctx context.Context, cs *mcp.ClientSession, raw RoundTrip)) {
	t.Helper()
	argv, env := fixture.Command(fx)
	envs := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		envs[k] = v
	}
	type ready struct {
		ctx context.Context
		cs  *mcp.ClientSession
		raw RoundTrip
	}
	readyc := make(chan ready)
	checked := make(chan struct{})
	s := supervisor.New(catalog.ServerSpec{Name: "fx", Kind: catalog.KindLocal, Command: argv, Env: envs}, supervisor.Options{
		Logger: zerolog.Nop(),
		OnReady: func(ctx context.Context, _ *supervisor.Server, cs *mcp.ClientSession, raw supervisor.RoundTrip) error {
			select {
			case readyc <- ready{ctx, cs, raw}:
			case <-ctx.Done():
				return ctx.Err()
			}
			<-checked
			return nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	started := make(chan error, 1) // the first start ends only after check, unless it fails
	go func() { started <- s.WaitStarted(ctx) }()
	var r ready
	select {
	case r = <-readyc:
	case err := <-started:
		t.Fatalf("the fixture did not start: %v", err)
	}
	defer close(checked)
	check(r.ctx, r.cs, r.raw)
}

// asJSON is v encoded and decoded again into generic values, so that a tool
// whose schema is bytes and one whose schema is maps compare by meaning.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestListToolsRawMatchesTheSDKClient: the raw lister gives the tools the
// SDK client gives, pages followed, with each schema kept as the server's
// bytes; a schema the SDK refuses in AddTool (the loose tool) included.
func TestListToolsRawMatchesTheSDKClient(t *testing.T) {
	onReady(t, fixture.Options{ExtraTools: []string{"x1", "x2"}, BadSchema: true, PageSize: 3}, func(ctx context.Context, cs *mcp.ClientSession, raw RoundTrip) {
		got, _, ok := listToolsRaw(ctx, raw)
		if !ok {
			t.Fatal("the raw lister declined a plain fixture")
		}
		want, err := collect(cs.Tools(ctx, nil), "tools")
		if err != nil {
			t.Fatal(err)
		}
		if len(want) < 7 {
			t.Fatalf("the SDK client listed %d tools; want several pages of 3", len(want))
		}
		if !reflect.DeepEqual(asJSON(t, got), asJSON(t, want)) {
			t.Errorf("raw listing differs from the SDK client's:\n raw %s\n sdk %s", asJSON(t, got), asJSON(t, want))
		}
		for _, tool := range got {
			if _, isRaw := tool.InputSchema.(json.RawMessage); !isRaw {
				t.Errorf("tool %s: input schema is %T, want the server's bytes", tool.Name, tool.InputSchema)
			}
		}
	})
}

// TestListToolsDefersHeaderAnnotationsToTheSDK: a listing that mentions
// x-mcp-header is left to the SDK client, which drops tools whose annotation
// is invalid; listTools then gives what the client gives.
func TestListToolsDefersHeaderAnnotationsToTheSDK(t *testing.T) {
	onReady(t, fixture.Options{Tools: []string{"echo"}, HeaderTools: true}, func(ctx context.Context, cs *mcp.ClientSession, raw RoundTrip) {
		if _, _, ok := listToolsRaw(ctx, raw); ok {
			t.Error("the raw lister took a listing with x-mcp-header annotations")
		}
		tools, _, err := listTools(ctx, cs, cs.InitializeResult().Capabilities, raw)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range tools {
			names = append(names, tool.Name)
		}
		if want := []string{"echo", fixture.HeaderOKTool}; !reflect.DeepEqual(names, want) {
			t.Errorf("tools = %v, want %v (%s dropped, as the SDK client does)", names, want, fixture.HeaderBadTool)
		}
	})
}

// TestListToolsRawDeclines covers the answers the raw lister leaves to the
// SDK client, byte patterns a fixture does not produce: each page here is
// what a server could send.
func TestListToolsRawDeclines(t *testing.T) {
	pages := func(results ...string) RoundTrip {
		i := 0
		return func(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
			if method != "tools/list" || i >= len(results) {
				return nil, errors.New("unexpected request")
			}
			i++
			b := []byte(results[i-1])
			return b[:len(b):len(b)], nil // nothing past the result to read by mistake
		}
	}
	deep := `{"tools":[{"name":"d","inputSchema":` + strings.Repeat(`{"a":`, 1001) + `1` + strings.Repeat(`}`, 1001) + `}]}`
	for name, rt := range map[string]RoundTrip{
		"an error": func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
			return nil, errors.New("boom")
		},
		"an escape that could spell x-mcp-header":    pages(`{"tools":[{"name":"e","inputSchema":{"type":"object","properties":{"a":{"type":"object","x-mcp-head\u0065r":"A"}}}}]}`),
		"nesting deeper than the SDK decodes":        pages(deep),
		"a cursor that repeats":                      pages(`{"tools":[],"nextCursor":"c"}`, `{"tools":[],"nextCursor":"c"}`),
		"invalid JSON":                               pages(`{"tools":[`),
		"a tools member that is not a list":          pages(`{"tools":{}}`),
		"data after the result":                      pages(`{"tools":[]} {}`),
		"a number a float64 cannot hold":             pages(`{"tools":[{"name":"n","inputSchema":{"type":"object","properties":{"n":{"type":"number","maximum":1e400}}}}]}`),
		"invalid UTF-8":                              pages("{\"tools\":[{\"name\":\"n\",\"inputSchema\":{\"type\":\"object\",\"description\":\"caf\xe9\"}}]}"),
		"a result member of the wrong type":          pages(`{"tools":[],"_meta":5}`),
		"a lone high surrogate":                      pages(`{"tools":[{"name":"a","inputSchema":{"type":"object","description":"x\ud800y"}}]}`),
		"a high surrogate before another escape":     pages(`{"tools":[{"name":"a","description":"\ud800\u00e9"}]}`),
		"a lone low surrogate":                       pages(`{"tools":[{"name":"a","description":"\udc00"}]}`),
		"a lone high surrogate after another escape": pages(`{"tools":[{"name":"a","description":"\u00e9\ud800"}]}`),
		"a high surrogate before a non-surrogate":    pages(`{"tools":[{"name":"a","description":"\ud800\ue000"}]}`),
		"a high surrogate after a lone one":          pages(`{"tools":[{"name":"a","description":"\ud800\ud800"}]}`),
		"a result cut inside an escape":              pages(`{"tools":[{"name":"\u00`),
		"a result cut after a high surrogate":        pages(`{"tools":[{"name":"\ud800`),
	} {
		if _, _, ok := listToolsRaw(context.Background(), rt); ok {
			t.Errorf("%s: the raw lister took it", name)
		}
	}
	got, _, ok := listToolsRaw(context.Background(), pages(
		`{"tools":[null,{"name":"a","inputSchema":{"type":"object"},"outputSchema":null}],"nextCursor":"p2"}`,
		`{"tools":[{"name":"b","inputSchema":{"type":"object","properties":{"n":{"type":"integer","maximum":10000000000000000001}}}}]}`))
	if !ok || len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" || got[0].OutputSchema != nil {
		t.Fatalf("two pages with a null tool: %v, %v", got, ok)
	}
	// Escapes of characters outside "x-mcp-header" (Python writes every
	// non-ASCII one so) are taken.
	got2, _, ok := listToolsRaw(context.Background(), pages(`{"tools":[{"name":"caf\u00e9","description":"\u00e9t\u00e9 \ud83d\ude00","inputSchema":{"type":"object"}}]}`))
	if !ok || len(got2) != 1 || got2[0].Name != "café" || got2[0].Description != "été 😀" {
		t.Errorf("a listing with non-ASCII escapes: %v, %v", got2, ok)
	}
	// The first and the last character beyond the BMP, each a pair of
	// surrogates at the bounds of their ranges.
	got3, _, ok := listToolsRaw(context.Background(), pages(`{"tools":[{"name":"p","description":"\ud800\udc00 \udbff\udfff","inputSchema":{"type":"object"}}]}`))
	if !ok || len(got3) != 1 || got3[0].Description != "\U00010000 \U0010FFFF" {
		t.Errorf("a listing with the first and last surrogate pairs: %v, %v", got3, ok)
	}
	// Kept as sent: decoding into maps would round the number.
	if s := string(got[1].InputSchema.(json.RawMessage)); !strings.Contains(s, "10000000000000000001") {
		t.Errorf("schema = %s, want the number as sent", s)
	}
}

// TestListToolsFallsBackWhenRawGoesUnanswered: a server that never answers
// the raw request (one that ignores string ids) still gets its tools listed,
// through the SDK client, within the start's own deadline.
func TestListToolsFallsBackWhenRawGoesUnanswered(t *testing.T) {
	t.Parallel() // it waits out timers; the rest of the package need not wait
	onReady(t, fixture.Options{Tools: []string{"echo", "sleep"}}, func(ctx context.Context, cs *mcp.ClientSession, _ RoundTrip) {
		silent := func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		began := time.Now()
		tools, _, err := listTools(ctx, cs, cs.InitializeResult().Capabilities, silent)
		if err != nil || len(tools) != 2 {
			t.Fatalf("tools = %v, %v after %s; want echo and sleep through the SDK client", tools, err, time.Since(began))
		}
	})
}

// TestFirstListing: the raw listing alone first; the SDK client's when the
// raw one declines, or alongside it once patience has passed; the first
// complete listing wins and the other is ended. Each listing answers on an
// event (at once, never, once the SDK client was asked, once the raw one
// ended), not after a time, and patience is an hour where it must not pass,
// so that no outcome depends on how fast goroutines run on a loaded machine.
func TestFirstListing(t *testing.T) {
	rawTools, sdkTools := []*mcp.Tool{{Name: "raw"}}, []*mcp.Tool{{Name: "sdk"}}
	// When a listing answers: at once, never, or when the channel given is
	// closed.
	type when int
	const (
		now when = iota
		never
		later
	)
	for _, c := range []struct {
		name      string
		patience  time.Duration
		rawIn     when // later: once the SDK client was asked
		rawOK     bool
		sdkIn     when // later: once the raw listing returned
		want      string
		sdkCalled bool // the SDK client was asked
		rawEnded  bool // the raw listing was ended unfinished
		sdkEnded  bool // the SDK client's listing was ended unfinished
	}{
		{"raw answers in time", time.Hour, now, true, now, "raw", false, false, false},
		{"raw declines", time.Hour, now, false, now, "sdk", true, false, false},
		{"raw is silent", 50 * time.Millisecond, never, true, now, "sdk", true, true, false},
		{"raw answers late, before the SDK", 50 * time.Millisecond, later, true, never, "raw", true, false, true},
		{"raw declines late, the SDK decides", 50 * time.Millisecond, later, false, later, "sdk", true, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rawEnded, rawDone, sdkCalled, sdkEnded := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
			wait := func(ctx context.Context, w when, after <-chan struct{}, ended chan struct{}) bool {
				var ready, bound <-chan struct{} // never, unless
				switch w {
				case now:
					return true
				case later:
					ready = after
					// A bound on a machine at any load: what it waits for
					// never came (patience never started the SDK's listing).
					b := make(chan struct{})
					timer := time.AfterFunc(time.Minute, func() { close(b) })
					defer timer.Stop()
					bound = b
				}
				select {
				case <-ready:
					return true
				case <-bound:
					t.Errorf("%s: what a listing waits for never came", c.name)
					return false
				case <-ctx.Done():
					close(ended)
					return false
				}
			}
			raw := func(ctx context.Context) ([]*mcp.Tool, bool) {
				defer close(rawDone)
				if !wait(ctx, c.rawIn, sdkCalled, rawEnded) {
					return nil, false
				}
				return rawTools, c.rawOK
			}
			sdk := func(ctx context.Context) ([]*mcp.Tool, error) {
				close(sdkCalled)
				if !wait(ctx, c.sdkIn, rawDone, sdkEnded) {
					return nil, ctx.Err()
				}
				return sdkTools, nil
			}
			got, err := firstListing(context.Background(), c.patience, raw, sdk)
			if err != nil || len(got) != 1 || got[0].Name != c.want {
				t.Fatalf("listing = %v, %v; want the %s one", got, err, c.want)
			}
			// Whether a listing is asked or ended is known once both
			// returned (firstListing ends the loser on return): wait for
			// that, not for a time.
			closed := func(ch chan struct{}) bool {
				select {
				case <-ch:
					return true
				default:
					return false
				}
			}
			<-rawDone
			if c.sdkCalled {
				select {
				case <-sdkCalled:
				case <-time.After(time.Minute):
				}
			}
			if closed(sdkCalled) != c.sdkCalled {
				t.Errorf("SDK listing asked: %v, want %v", !c.sdkCalled, c.sdkCalled)
			}
			if c.rawEnded && !closed(rawEnded) {
				t.Error("the silent raw listing was not ended")
			}
			if c.sdkEnded {
				select {
				case <-sdkEnded:
				case <-time.After(time.Minute):
					t.Error("the SDK listing was not ended when the raw one won")
				}
			}
		})
	}
}

// TestNumbersFitFloat64 covers where a number can hide: only numbers
// outside strings count, and a string ends at the first quote not escaped
// by an odd run of backslashes.
func TestNumbersFitFloat64(t *testing.T) {
	for in, want := range map[string]bool{
		`{"a":1,"b":-2.5e10,"c":[0,1e308]}`:        true,
		`{"a":1e400}`:                              false,
		`{"a":-1e400}`:                             false,
		`{"a":"1e400"}`:                            true,
		`{"a":"x\"1e400"}`:                         true,  // escaped quote: still in the string
		`{"a":"x\\","b":1e400}`:                    false, // escaped backslash: the string ended
		`{"a":"x\\\"1e400"}`:                       true,  // backslash, then an escaped quote
		`{"a":"x\\\\","b":1e400}`:                  false,
		`{"1e400":2}`:                              true,
		`{"a":"` + strings.Repeat("9", 400) + `"}`: true,
		`{"a":` + strings.Repeat("1", 301) + `}`:   true, // long, but a float64 holds it
		`{"a":` + strings.Repeat("9", 400) + `}`:   false,
		`{"a":"unterminated 1e400`:                 true, // decoding refuses it anyway
		`{"a":true,"e":false,"n":null}`:            true,
		`{"a":1e+300,"b":2E-300}`:                  true,  // a signed exponent is one number
		`{"a":"","b":1e400}`:                       false, // an empty string ends at once
		`{"a":"\"","b":1e400}`:                     false, // so does one after an escaped quote
		`{"a":1`:                                   true,  // a number at the very end, cut: decoding refuses it
		`{"a":1e400`:                               false,
	} {
		if got := numbersFitFloat64([]byte(in)); got != want {
			t.Errorf("numbersFitFloat64(%s) = %v, want %v", in, got, want)
		}
	}
}

// TestListToolsRawKeepsEachToolsBytes: every tool's raw form is exactly
// the bytes the server sent for it, member order, spacing and unknown
// members included, and the decoded tool matches them.
func TestListToolsRawKeepsEachToolsBytes(t *testing.T) {
	one := `{"name":"a","execution":{"taskSupport":"optional"},"inputSchema":{"type":"object"}, "description":"d\"q"}`
	two := `{ "inputSchema" : {"type":"object","properties":{"n":{"type":"integer","maximum":10000000000000000001}}}, "name" : "b" }`
	page := json.RawMessage(`{"tools":[` + one + `,null,` + two + `]}`)
	tools, raw, ok := listToolsRaw(context.Background(), func(context.Context, string, json.RawMessage) (json.RawMessage, error) { return page, nil })
	if !ok || len(tools) != 2 {
		t.Fatalf("listed %v, %v; want tools a and b", tools, ok)
	}
	if got := string(raw["a"]); got != one {
		t.Errorf("a as listed = %s, want %s", got, one)
	}
	if got := string(raw["b"]); got != two {
		t.Errorf("b as listed = %s, want %s", got, two)
	}
	if tools[0].Name != "a" || tools[0].Description != `d"q` || tools[1].Name != "b" {
		t.Errorf("decoded %+v, %+v", tools[0], tools[1])
	}
	if s, _ := tools[1].InputSchema.(json.RawMessage); !strings.Contains(string(s), "10000000000000000001") {
		t.Errorf("b's schema = %s, want the server's bytes", s)
	}
	// A tool of the wrong shape anywhere declines the whole listing.
	bad := json.RawMessage(`{"tools":[` + one + `,{"name":5}]}`)
	if _, _, ok := listToolsRaw(context.Background(), func(context.Context, string, json.RawMessage) (json.RawMessage, error) { return bad, nil }); ok {
		t.Error("a tool whose name is a number was taken")
	}
}
