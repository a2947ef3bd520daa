package main

import (
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
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// fuzzGateway is a gateway run in the test process, in front of a real
// fixture server, for FuzzHTTPEndpoint.
type fuzzGateway struct {
	url, token string
	client     *http.Client
	mu         sync.Mutex
	session    string // a live MCP session, renewed when a fuzzed DELETE ends it
	checks     int    // alive calls so far
}

func startFuzzGateway(f *testing.F) *fuzzGateway {
	f.Helper()
	argv, env := fixture.Command(fixture.Options{Name: "fx", Tools: []string{"echo", "fail"}})
	spec := catalog.ServerSpec{Name: "fx", Kind: catalog.KindCatalog, Command: argv, Env: map[string]string{}}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		spec.Env[k] = v
	}
	set := &settings{
		Listen:         "127.0.0.1:0",
		ServersDir:     f.TempDir(),
		StartupTimeout: 60 * time.Second,
		ShutdownGrace:  2 * time.Second,
		// Small enough that the fuzzer reaches the limits; BodyTimeout
		// bounds what a fuzzed Content-Length that promises more can hold.
		Limits: httpLimits{MaxBodyBytes: 64 << 10, BodyTimeout: 2 * time.Second},
	}
	const token = "fuzz-token"
	g := newGateway(set, []catalog.ServerSpec{spec}, token, zerolog.Nop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- g.run(ctx, ln, func(summary) { close(ready) }) }()
	f.Cleanup(func() {
		cancel()
		<-done // run returns once every server process is reaped
	})
	select {
	case <-ready:
	case err := <-done:
		f.Fatalf("gateway: %v", err)
	case <-time.After(60 * time.Second):
		f.Fatal("gateway not ready after 60s")
	}
	fg := &fuzzGateway{
		url:    "http://" + ln.Addr().String(),
		token:  token,
		client: &http.Client{Timeout: 20 * time.Second},
	}
	if err := fg.renew(); err != nil {
		f.Fatal(err)
	}
	return fg
}

// renew initializes a new session.
func (fg *fuzzGateway) renew() error {
	resp, body, err := fg.do(http.MethodPost, fg.url+"/mcp", "", []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		return fmt.Errorf("initialize: %d %s", resp.StatusCode, body)
	}
	fg.session = resp.Header.Get("Mcp-Session-Id")
	resp, body, err = fg.do(http.MethodPost, fg.url+"/mcp", fg.session, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
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
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+fg.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
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
// (renewed if the fuzzer deleted it): a ping, and every 8th time a tool
// call, which goes through to the upstream and back.
func (fg *fuzzGateway) alive() error {
	fg.checks++
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
		{fuzzNoToken, "Authorization: bearer fuzz-token", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{fuzzNoToken, "Authorization: Bearer", `{}`},
		{fuzzNoTypes, "Content-Type: text/plain", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{fuzzNoTypes, "Content-Type: application/json\nAccept: application/json", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{0, "Content-Length: 100000", `{"jsonrpc":"2.0"}`},
		{0, "Last-Event-ID: 1", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{0, "Host: example.com", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
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
		if mode&fuzzNoSession == 0 {
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
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
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
