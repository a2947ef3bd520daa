package endpoint

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// fuzzGateway is a gateway run in the test process, in front of a real
// fixture server, for FuzzHTTPEndpoint.
type fuzzGateway struct {
	g          *Endpoint
	ln         *pipeListener // every connection to g, in memory
	url, token string
	client     *http.Client
	mu         sync.Mutex
	session    string // a live MCP session, renewed when a fuzzed DELETE ends it
	// old is a session of protocol 2025-03-26, which has batches ("OLDSESSION"
	// in FuzzLaneWire's inputs, fuzzOldSession in FuzzHTTPEndpoint's);
	// not renewed.
	old    string
	checks int // alive calls so far
	// next is a connection the lane has taken over, made by the liveness
	// check after an input, for the next input's second sending (nil
	// when there is none yet); nextR reads it.
	next  net.Conn
	nextR *bufio.Reader
	// laneR and freshR are the readers of the lane and fresh connections,
	// reused from input to input.
	laneR, freshR *bufio.Reader
}

// fuzzTimeout bounds each exchange of the fuzz targets with the gateway:
// far above an answer's time, and far below the fuzzer's patience.
const fuzzTimeout = 5 * time.Second

func startFuzzGateway(f testing.TB) *fuzzGateway {
	f.Helper()
	argv, env := fixture.Command(fixture.Options{Name: "fx", Tools: []string{"echo", "fail"}})
	spec := catalog.ServerSpec{Name: "fx", Kind: catalog.KindCatalog, Command: argv, Env: map[string]string{}}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		spec.Env[k] = v
	}
	ln := newPipeListener()
	set := &testSetup{
		StartupTimeout: 60 * time.Second,
		ShutdownGrace:  2 * time.Second,
		// Small enough that the fuzzer reaches the limits; BodyTimeout
		// bounds what a fuzzed Content-Length that promises more can hold.
		Limits:   Limits{MaxBodyBytes: 64 << 10, BodyTimeout: 2 * time.Second},
		Listener: ln,
	}
	// The endpoint is stopped, and every server process reaped, at cleanup.
	url, token, g, _ := startInProcess(f, set, io.Discard, spec)
	fg := &fuzzGateway{
		g:      g,
		ln:     ln,
		url:    strings.TrimSuffix(url, "/mcp"),
		token:  token,
		client: &http.Client{Timeout: fuzzTimeout, Transport: &http.Transport{DialContext: ln.dialContext}},
	}
	if err := fg.renew(); err != nil {
		f.Fatal(err)
	}
	fg.old = fg.session
	if err := fg.renewAt("2025-03-26"); err != nil {
		f.Fatal(err)
	}
	fg.old, fg.session = fg.session, fg.old
	return fg
}

// renew initializes a new session.
func (fg *fuzzGateway) renew() error { return fg.renewAt("2025-11-25") }

// renewAt initializes a new session of protocol version.
func (fg *fuzzGateway) renewAt(version string) error {
	resp, body, err := fg.doAt(http.MethodPost, fg.url+"/mcp", "", version, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		return fmt.Errorf("initialize: %d %s", resp.StatusCode, body)
	}
	fg.session = resp.Header.Get("Mcp-Session-Id")
	resp, body, err = fg.doAt(http.MethodPost, fg.url+"/mcp", fg.session, version, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("initialized: %d %s", resp.StatusCode, body)
	}
	return nil
}

// do sends a well-formed request with the token.
func (fg *fuzzGateway) do(method, url, session string, body []byte) (*http.Response, []byte, error) {
	return fg.doAt(method, url, session, "2025-11-25", body)
}

// doAt is do for a session of protocol version.
func (fg *fuzzGateway) doAt(method, url, session, version string, body []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+fg.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	resp, err := fg.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// alive checks that the gateway answers a valid request on the session
// (renewed if the fuzzer deleted it), on the connection that becomes the
// next input's lane connection, so one request checks the gateway and
// prepares the next input. The check is a tools/list (every 8th time a
// tools/call, which goes through to the upstream and back). Most of these
// connections are given to the lane directly (adoptDirect), which then
// answers the check; every 8th is taken over as a client's is, by net/http
// answering the check through the fast path; every 64th check is also a
// ping through net/http and the SDK. (FuzzLaneWire ran about 20 inputs in
// 5 s when each input made its lane connection with two tools/calls and
// checked liveness with a ping through the SDK, and about 1,500 a second
// when every check went through net/http on a new TCP connection.)
func (fg *fuzzGateway) alive() error {
	fg.checks++
	if fg.checks%64 == 0 {
		if err := fg.aliveHTTP(); err != nil {
			return err
		}
	}
	body, want := `{"jsonrpc":"2.0","id":"alive","method":"tools/list"}`, `"name":"echo"`
	if fg.checks%8 == 0 {
		body, want = `{"jsonrpc":"2.0","id":"alive","method":"tools/call","params":{"name":"echo","arguments":{"text":"alive"}}}`, `"text":"alive"`
	}
	direct := fg.checks%8 != 0
	if fg.prepareLane(body, want, direct) == nil {
		return nil
	}
	// The session may be gone (a fuzzed DELETE): the full check says,
	// renewing it if need be; then the lane connection is made again.
	if err := fg.aliveHTTP(); err != nil {
		return err
	}
	return fg.prepareLane(body, want, direct)
}

// prepareLane makes a connection, sends body on it and checks that the
// answer is a 200 containing want and that the lane answered it; the
// connection becomes fg.next. With direct the lane is given the connection
// at once (adoptDirect); otherwise net/http answers body and the lane takes
// the connection over then.
func (fg *fuzzGateway) prepareLane(body, want string, direct bool) error {
	fg.dropNext()
	var c net.Conn
	var err error
	if direct {
		c, err = fg.adoptDirect()
	} else {
		c, err = fg.ln.dial()
	}
	if err != nil {
		return err
	}
	_ = c.SetDeadline(time.Now().Add(fuzzTimeout))
	br := fg.laneR
	if br == nil {
		br = bufio.NewReader(c)
		fg.laneR = br
	}
	br.Reset(c)
	adopted, served := fg.g.lane.adopted.Load(), fg.g.lane.served.Load()
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n%s", fg.token, fg.session, len(body), body)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		c.Close()
		return err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch {
	case err != nil:
	case resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(want)):
		err = fmt.Errorf("valid request %s: %d %s", body, resp.StatusCode, b)
	case !direct && fg.g.lane.adopted.Load() <= adopted:
		// The lane takes a connection before it writes the answer that
		// made it take it; no other connection is open meanwhile.
		err = errors.New("the lane did not take the connection")
	case direct && fg.g.lane.served.Load() <= served:
		// The lane counts an answer before it writes it.
		err = errors.New("the lane did not answer on the connection given to it")
	}
	if err != nil {
		c.Close()
		return err
	}
	fg.next, fg.nextR = c, br
	return nil
}

// adoptDirect makes a connection and gives its server end to the lane, in
// the state adopt leaves a connection it took over from net/http once it
// has written the answer that made it take it: idle, with the idle
// deadline, served from its next request on. The takeover itself, which
// costs a round trip through net/http, is covered by every 8th check.
func (fg *fuzzGateway) adoptDirect() (net.Conn, error) {
	client, server := fg.ln.pair()
	l := fg.g.lane
	_ = server.SetReadDeadline(time.Now().Add(l.limits.IdleTimeout))
	lc := l.add(server, bufio.NewReader(server))
	if lc == nil {
		client.Close()
		server.Close()
		return nil, errors.New("the lane is closing")
	}
	go lc.serve()
	return client, nil
}

func (fg *fuzzGateway) dropNext() {
	if fg.next != nil {
		fg.next.Close()
		fg.next, fg.nextR = nil, nil
	}
}

// aliveHTTP is the full liveness check through net/http: a ping, and
// every 8th time a tools/call, renewing the session if it is gone.
func (fg *fuzzGateway) aliveHTTP() error {
	req, want := `{"jsonrpc":"2.0","id":"alive","method":"ping"}`, `"result":{}`
	if fg.checks%8 == 0 {
		req, want = `{"jsonrpc":"2.0","id":"alive","method":"tools/call","params":{"name":"echo","arguments":{"text":"alive"}}}`, `"text":"alive"`
	}
	for range 2 {
		resp, body, err := fg.do(http.MethodPost, fg.url+"/mcp", fg.session, []byte(req))
		if err != nil {
			return err
		}
		if resp.StatusCode == http.StatusNotFound {
			if err := fg.renew(); err != nil {
				return err
			}
			continue
		}
		if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(want)) {
			return fmt.Errorf("valid request %s: %d %s", req, resp.StatusCode, body)
		}
		return nil
	}
	return errors.New("session gone twice in a row")
}

// Bits of FuzzHTTPEndpoint's mode: which of the well-formed parts the
// request keeps. The rest of the request is the fuzzer's.
const (
	fuzzNoToken   = 1 << 2 // no Authorization header of ours
	fuzzNoSession = 1 << 3 // no Mcp-Session-Id of ours
	fuzzNoTypes   = 1 << 4 // no Content-Type and Accept of ours
	// fuzzOldSession sends the request on the 2025-03-26 session, which
	// has batches.
	fuzzOldSession = 1 << 5
)

// FuzzHTTPEndpoint sends random bodies and headers to a live gateway with a
// real upstream. Invariants: no 5xx (the gateway is ready), every refusal
// of a JSON POST carries a JSON-RPC error, nothing panics, and a valid call
// is answered after every input.
func FuzzHTTPEndpoint(f *testing.F) {
	for _, seed := range []struct {
		mode    uint8
		headers string
		body    string
	}{
		{0, "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{0, "", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`},
		{0, "", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`},
		{0, "", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fail","arguments":{"message":"m"}}}`},
		{0, "", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":[1]}}`},
		{0, "", `[{"jsonrpc":"2.0","id":6,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`},
		{0, "", `{"jsonrpc":"2.0","id":7,"result":{}}`},
		{0, "", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`},
		{0, "Mcp-Protocol-Version: 2026-07-28", `{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`},
		{0, "", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`},
		{0, "", `{"jsonrpc":"2.0","id":9`},
		{1, "", ``},
		{2, "", ``},
		{fuzzNoSession, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}`},
		{fuzzNoSession, "", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`},
		{fuzzNoSession, "Mcp-Protocol-Version: 2026-07-28\nMcp-Method: tools/call\nMcp-Name: echo", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`},
		{fuzzNoSession, "Mcp-Protocol-Version: 2026-07-28\nMcp-Method: server/discover", `{"jsonrpc":"2.0","id":4,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`},
		{fuzzNoToken, "Authorization: bearer fuzz-token", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{fuzzNoToken, "Authorization: Bearer", `{}`},
		{fuzzNoTypes, "Content-Type: text/plain", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{fuzzNoTypes, "Content-Type: application/json\nAccept: application/json", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{0, "Content-Length: 100000", `{"jsonrpc":"2.0"}`},
		{0, "Last-Event-ID: 1", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{0, "Host: example.com", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{fuzzOldSession, "", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"}}},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`},
		{fuzzOldSession, "", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fail","arguments":{"message":"m"}}},{"jsonrpc":"2.0","id":2,"method":"ping"}]`},
		{fuzzOldSession, "", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}},{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`},
		{fuzzOldSession, "", `[{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}]`},
		{fuzzOldSession, "Mcp-Protocol-Version: 2025-06-18", `[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`},
	} {
		f.Add(seed.mode, seed.headers, []byte(seed.body))
	}
	fg := startFuzzGateway(f)
	methods := []string{http.MethodPost, http.MethodGet, http.MethodDelete, http.MethodPut}
	f.Fuzz(func(t *testing.T, mode uint8, headers string, body []byte) {
		fg.mu.Lock() // workers are processes; this only guards -parallel
		defer fg.mu.Unlock()
		method := methods[mode%4]
		req, err := http.NewRequest(method, fg.url+"/mcp", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if mode&fuzzNoToken == 0 {
			req.Header.Set("Authorization", "Bearer "+fg.token)
		}
		switch {
		case mode&fuzzNoSession != 0:
		case mode&fuzzOldSession != 0:
			req.Header.Set("Mcp-Session-Id", fg.old)
		default:
			req.Header.Set("Mcp-Session-Id", fg.session)
		}
		if mode&fuzzNoTypes == 0 {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
		}
		for _, line := range strings.Split(headers, "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			switch strings.ToLower(k) {
			case "host":
				req.Host = v
			case "content-length":
				// A false length is a client that sends less than it
				// promised: the body timeout answers it.
				var n int64
				if _, err := fmt.Sscan(v, &n); err == nil && n >= 0 {
					req.ContentLength = n
				}
			default:
				req.Header.Add(k, v)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), fuzzTimeout)
		defer cancel()
		resp, err := fg.client.Do(req.WithContext(ctx))
		if err == nil {
			// A standalone SSE stream stays open; its headers are the answer.
			var b []byte
			if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") || method == http.MethodPost {
				b, _ = io.ReadAll(resp.Body)
			}
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				t.Fatalf("%s %q %q: HTTP %d %s", method, headers, body, resp.StatusCode, b)
			}
			jsonPost := method == http.MethodPost && strings.HasPrefix(req.Header.Get("Content-Type"), "application/json")
			if jsonPost && (resp.StatusCode == 400 || resp.StatusCode == 408 || resp.StatusCode == 413) {
				var r struct {
					JSONRPC string          `json:"jsonrpc"`
					ID      json.RawMessage `json:"id"`
					Error   *struct {
						Code int64 `json:"code"`
					} `json:"error"`
				}
				if json.Unmarshal(b, &r) != nil || r.JSONRPC != "2.0" || r.Error == nil || r.Error.Code == 0 || len(r.ID) == 0 {
					t.Fatalf("%s %q %q: HTTP %d without a JSON-RPC error: %s", method, headers, body, resp.StatusCode, b)
				}
			}
		}
		// A request the client refused to send, or one the server closed
		// on, is not a failure by itself; the gateway must go on serving.
		if err := fg.alive(); err != nil {
			t.Fatalf("after %s %q %q: %v", method, headers, body, err)
		}
	})
}

// FuzzLaneWire sends raw bytes on two connections: a fresh one, which
// net/http reads, and one the lane (lane.go) has taken over. The first
// answer must be the same on both (the lane serves a request exactly as
// net/http would, or hands it back), never a 5xx of the gateway's, and a
// valid call must be answered after every input. "TOKEN" and "SESSION" in
// the input become the live token and session id.
//
// Each fuzz worker (a process) shares one in-process gateway across its
// inputs and reaches it over in-memory connections (pipeListener), and the
// liveness check after an input makes the next input's lane connection
// (alive): an input costs two new connections, one answer from net/http and
// two from the lane (BenchmarkLaneWireInput measures it). Coverage of a
// concurrent server varies between runs of the same input, so the fuzzer
// finds "new" inputs all the time; test/fuzz.sh runs this target with
// -fuzzminimizetime 0, or the workers spend their time minimizing those
// instead of fuzzing. Each new input still costs the fuzzer milliseconds
// of its own (the worker stops, and the coverage mask goes between
// processes), so the rate is lowest in the first seconds, when new inputs
// come fastest.
func FuzzLaneWire(f *testing.F) {
	for _, seed := range laneWireSeeds() {
		f.Add([]byte(seed))
	}
	fg := startFuzzGateway(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		if err := fg.checkLaneWire(raw); err != nil {
			t.Fatal(err)
		}
	})
}

// BenchmarkLaneWireInput runs FuzzLaneWire's check on its seed inputs in
// turn, without the fuzzer: inputs/s is what a fuzz worker can do at most.
// On a shared machine wall time says more about the neighbours than about
// the check, so the CPU time of the process (client and gateway) per input
// is reported too: 1e6 / cpu-µs/input is the rate of one idle core.
func BenchmarkLaneWireInput(b *testing.B) {
	seeds := laneWireSeeds()
	fg := startFuzzGateway(b)
	b.ReportAllocs()
	cpu0 := processCPU(b)
	for i := 0; b.Loop(); i++ {
		if err := fg.checkLaneWire([]byte(seeds[i%len(seeds)])); err != nil {
			b.Fatal(err)
		}
	}
	cpu := processCPU(b) - cpu0
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "inputs/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/input")
}

// processCPU is the user and system CPU time of this process so far.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func laneWireSeeds() []string {
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`
	head := "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer TOKEN\r\nContent-Type: application/json\r\n" +
		"Accept: application/json, text/event-stream\r\nMcp-Session-Id: SESSION\r\n"
	post := func(extra, body string) string {
		return head + extra + fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body)
	}
	old := func(req string) string { return strings.Replace(req, "SESSION", "OLDSESSION", 1) }
	return []string{
		post("", call),
		post("", call) + post("", call),
		post("", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`),
		post("", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`),
		post("", `{"jsonrpc":"2.0","id":3,"method":"ping"}`),
		post("Mcp-Protocol-Version: 2025-11-25\r\n", call),
		post("Mcp-Protocol-Version: 1999-01-01\r\n", call),
		post("Connection: close\r\n", call),
		post("Content-Length: 3\r\n", call),
		post("", call[:20]),
		strings.ReplaceAll(post("", call), "\r\n", "\n"),
		strings.Replace(post("", call), "Bearer TOKEN", "Bearer nope", 1),
		strings.Replace(post("", call), "Host: 127.0.0.1", "Host: evil.example", 1),
		// Batches, on the session whose protocol has them.
		old(post("", `[`+call+`,{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`)),
		old(post("", `[`+call+`,{"jsonrpc":"2.0","id":2,"method":"ping"}]`)),
		old(post("", `[`+call+`,`+call+`]`)),
		old(post("", `[{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}]`)),
		old(post("Mcp-Protocol-Version: 2025-06-18\r\n", `[`+call+`]`)),
		head + "Transfer-Encoding: chunked\r\n\r\n" + fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(call), call),
		"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
		"POST /mcp HTTP/1.1\r\n\r\n",
		"\x00\xff garbage\r\n\r\n",
	}
}

// checkLaneWire is FuzzLaneWire's check of one input.
func (fg *fuzzGateway) checkLaneWire(raw []byte) error {
	fg.mu.Lock() // workers are processes; this only guards -parallel
	defer fg.mu.Unlock()
	raw = bytes.ReplaceAll(raw, []byte("TOKEN"), []byte(fg.token))
	raw = bytes.ReplaceAll(raw, []byte("OLDSESSION"), []byte(fg.old))
	raw = bytes.ReplaceAll(raw, []byte("SESSION"), []byte(fg.session))
	// Ending or starting sessions changes what the second sending
	// gets; the answers are compared for everything else (and the input
	// is only looked at for it when the answers differ).
	stateful := func() bool {
		lower := bytes.ToLower(raw)
		return bytes.Contains(lower, []byte("delete")) || bytes.Contains(lower, []byte("initialize"))
	}
	// A request of the previous input (or of the first sending) may still
	// be in flight on the session when the next one arrives, and a request
	// that reuses its id is then refused (the SDK's "duplicate in-flight
	// request ID"): that is the session's state, not the lane. So a
	// mismatch is sent again, after a liveness check (alive), until it
	// settles; a real difference persists to the deadline.
	deadline := time.Now().Add(2 * time.Second)
	for {
		fresh, err := fg.wire(raw, false)
		if err != nil {
			return err
		}
		lane, err := fg.wire(raw, true)
		if err != nil {
			return err
		}
		// net/http's own refusals of the protocol (501 for an unknown
		// transfer coding, 505 for a version) are not the gateway failing.
		if failed := func(s int) bool { return s >= 500 && s != 501 && s != 505 }; failed(fresh) || failed(lane) {
			return fmt.Errorf("%q: net/http answered %d, the lane %d", raw, fresh, lane)
		}
		if fresh == lane || stateful() {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%q: net/http answered %d, the lane %d", raw, fresh, lane)
		}
		if err := fg.alive(); err != nil {
			return fmt.Errorf("after %q: %w", raw, err)
		}
	}
	if err := fg.alive(); err != nil {
		return fmt.Errorf("after %q: %w", raw, err)
	}
	return nil
}

// wire sends raw on a connection, ends its sending half, and returns the
// status of the first answer (0 for none). The connection is a new one, or
// with onLane one the lane has taken over (fg.next, made by alive).
func (fg *fuzzGateway) wire(raw []byte, onLane bool) (int, error) {
	var c net.Conn
	var br *bufio.Reader
	if onLane {
		if fg.next == nil {
			if err := fg.prepareLane(`{"jsonrpc":"2.0","id":"lane","method":"tools/list"}`, `"name":"echo"`, false); err != nil {
				return 0, fmt.Errorf("call before the input: %w", err)
			}
		}
		// Its deadline, set when it was made, is still far off.
		c, br = fg.next, fg.nextR
		fg.next, fg.nextR = nil, nil
	} else {
		var err error
		if c, err = fg.ln.dial(); err != nil {
			return 0, err
		}
		_ = c.SetDeadline(time.Now().Add(fuzzTimeout))
		if fg.freshR == nil {
			fg.freshR = bufio.NewReader(c)
		}
		br = fg.freshR
		br.Reset(c)
	}
	// A write cut short (the server closed on us mid-input) is no failure:
	// the answer, if any, says what happened.
	sent := sendAll(c.(*pipeConn), raw)
	defer func() {
		c.Close()
		<-sent
	}()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, nil
	}
	return resp.StatusCode, nil // the body may be a stream that stays open
}
