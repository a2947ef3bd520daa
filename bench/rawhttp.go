package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// rawSession is an MCP session over plain HTTP requests, with no SDK on the
// client side: it times the gateway's own answer without the time a client
// library spends decoding it (the Go SDK client validates every tool of a
// 6,400-tool list, which costs more than producing it).
type rawSession struct {
	url      string
	token    string
	protocol string
	id       string // Mcp-Session-Id
	hc       *http.Client
	// header holds further headers every request carries (a 2026-era
	// request's Mcp-Method and Mcp-Name).
	header http.Header
}

// rawConnect initializes a session the way any streamable HTTP client does,
// declaring no client capabilities.
func rawConnect(ctx context.Context, bx *box, protocol string) (*rawSession, error) {
	return rawConnectWith(ctx, bx, protocol, `{}`, &http.Client{})
}

// rawConnectWith is rawConnect declaring caps (a JSON object), on hc.
func rawConnectWith(ctx context.Context, bx *box, protocol, caps string, hc *http.Client) (*rawSession, error) {
	s := &rawSession{url: "http://" + bx.addr + "/mcp", token: bx.token, protocol: protocol, hc: hc}
	init := fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":%q,"capabilities":%s,"clientInfo":{"name":"bench-raw","version":"1"}}}`, protocol, caps)
	resp, body, err := s.do(ctx, http.MethodPost, []byte(init))
	if err != nil {
		return nil, fmt.Errorf("raw initialize: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("raw initialize: %s: %s", resp.Status, body)
	}
	if s.id = resp.Header.Get("Mcp-Session-Id"); s.id == "" {
		return nil, fmt.Errorf("raw initialize: no Mcp-Session-Id")
	}
	resp, body, err = s.do(ctx, http.MethodPost, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err != nil {
		return nil, fmt.Errorf("raw initialized: %w", err)
	}
	if resp.StatusCode != http.StatusAccepted {
		return nil, fmt.Errorf("raw initialized: %s: %s", resp.Status, body)
	}
	return s, nil
}

// do sends one request and reads the whole answer.
func (s *rawSession) do(ctx context.Context, method string, body []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", s.protocol)
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
	}
	for k, v := range s.header {
		req.Header[k] = v
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	return resp, b, nil
}

// call sends a request and returns the JSON-RPC message that answers it:
// the body itself, or the last data of an SSE response. It also returns the
// time from sending the request to having read the whole response.
func (s *rawSession) call(ctx context.Context, body []byte) ([]byte, time.Duration, error) {
	t0 := time.Now()
	resp, b, err := s.do(ctx, http.MethodPost, body)
	took := time.Since(t0)
	if err != nil {
		return nil, 0, err
	}
	msg, err := message(resp, b)
	return msg, took, err
}

// message extracts the JSON-RPC message from a response body.
func message(resp *http.Response, b []byte) ([]byte, error) {
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %.200s", resp.Status, b)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return b, nil
	}
	var last []byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, len(b)+1)
	for sc.Scan() {
		if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:")); ok {
			last = bytes.TrimSpace(d)
		}
	}
	if last == nil {
		return nil, fmt.Errorf("no data in SSE response: %.200s", b)
	}
	return last, nil
}

// listAll lists every tool, all pages, and returns how many, in how many
// pages, and the time spent on HTTP (requests sent, responses read), which
// leaves out this client's own JSON decoding.
func (s *rawSession) listAll(ctx context.Context) (tools, pages int, inHTTP time.Duration, err error) {
	cursor := ""
	for {
		params := "{}"
		if cursor != "" {
			params = fmt.Sprintf(`{"cursor":%q}`, cursor)
		}
		msg, took, err := s.call(ctx, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":%s}`, pages+1, params)))
		if err != nil {
			return 0, 0, 0, fmt.Errorf("raw tools/list page %d: %w", pages+1, err)
		}
		inHTTP += took
		var res struct {
			Result *struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
				NextCursor string `json:"nextCursor"`
			} `json:"result"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(msg, &res); err != nil {
			return 0, 0, 0, fmt.Errorf("raw tools/list page %d: %w", pages+1, err)
		}
		if res.Result == nil {
			return 0, 0, 0, fmt.Errorf("raw tools/list page %d: error %+v", pages+1, res.Error)
		}
		pages++
		tools += len(res.Result.Tools)
		if cursor = res.Result.NextCursor; cursor == "" {
			return tools, pages, inHTTP, nil
		}
	}
}

// close ends the session (DELETE), as a well-behaved client does.
func (s *rawSession) close(ctx context.Context) {
	_, _, _ = s.do(ctx, http.MethodDelete, nil)
	s.hc.CloseIdleConnections()
}
