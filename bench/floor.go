package main

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
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// floorProxy is the least an HTTP-to-stdio MCP proxy in Go can do for one
// session: net/http in front, one fixture server behind, each POST body
// written to the server's stdin as a line and the server's next line sent
// back as application/json. No authentication, no session ids checked, no
// concurrency, no second server, no supervision: it is not a gateway, only
// the cost every such hop pays (two extra process hops, loopback TCP, an
// HTTP client and server). Measured with the same client as the others, it
// shows how much of the 1-session gap the gateway's own code can close.
type floorProxy struct {
	in  io.Writer
	out *bufio.Reader

	mu sync.Mutex // one exchange with the server at a time
}

// floorKinds are the two floors measured: net/http, and HTTP/1.1 written
// by hand (serveRaw).
func floorKinds() []string { return []string{"http", "raw"} }

func floorNames() map[string]string {
	return map[string]string{"http": "net/http", "raw": "hand-written HTTP/1.1"}
}

// floorResult is one floor's 1-session run and the CPU per call it took.
type floorResult struct {
	stats
	cpu    time.Duration // the proxy process
	client time.Duration // the benchmark's client
}

// floorEnv makes the benchmark binary run as the floor proxy (runFloor):
// like the gateway, the proxy is a process of its own, so the comparison
// includes the same process hops.
const floorEnv = "MCP_GATEWAY_BENCH_FLOOR"

// runFloor is the floor proxy process: it starts one fixture server, serves
// on 127.0.0.1, prints its address, and stops when its stdin ends.
func runFloor(kind string) error {
	argv, env := fixture.Command(plainServer(0))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = io.Discard
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("floor: start server: %w", err)
	}
	defer func() {
		_ = in.Close() // EOF ends the fixture
		_ = cmd.Wait()
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	p := &floorProxy{in: in, out: bufio.NewReaderSize(out, 64<<10)}
	fmt.Println(ln.Addr())
	if kind == "raw" {
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go p.serveRaw(c)
			}
		}()
		_, _ = io.Copy(io.Discard, os.Stdin)
		return ln.Close()
	}
	srv := &http.Server{Handler: p}
	go func() { _ = srv.Serve(ln) }()
	_, _ = io.Copy(io.Discard, os.Stdin)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(ctx)
}

// floorProcess is a running floor proxy, seen from the benchmark.
type floorProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addr  string
}

// startFloor starts the floor proxy with one P, as the gateway runs.
func startFloor(kind string) (*floorProcess, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), floorEnv+"="+kind, "GOMAXPROCS=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start floor proxy: %w", err)
	}
	fp := &floorProcess{cmd: cmd, stdin: stdin}
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = fp.close()
		return nil, fmt.Errorf("floor proxy: read address: %w", err)
	}
	fp.addr = strings.TrimSpace(addr)
	return fp, nil
}

// connect opens a Go SDK client session through the proxy, with the client
// options the gateway runs use (the proxy ignores the token; it is sent so
// that the requests are the same).
func (fp *floorProcess) connect(ctx context.Context, protocol string) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-agent", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: "http://" + fp.addr + "/mcp", HTTPClient: httpClient("floor")}
	cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		return nil, fmt.Errorf("connect to floor proxy: %w", err)
	}
	return cs, nil
}

// close ends the proxy's stdin and waits for it (and so its server) to exit.
func (fp *floorProcess) close() error {
	_ = fp.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- fp.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		_ = fp.cmd.Process.Kill()
		return errors.Join(errors.New("floor proxy did not stop"), <-done)
	}
}

// exchange forwards one POST body and returns the server's answer: nil for
// a notification (202), or its line, and whether the body was initialize
// (whose answer carries the session id).
func (p *floorProxy) exchange(body []byte) (answer []byte, initialize bool, err error) {
	if bytes.ContainsAny(body, "\r\n") {
		return nil, false, errors.New("one line of JSON, please")
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		return nil, false, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.in.Write(append(body, '\n')); err != nil {
		return nil, false, err
	}
	if len(msg.ID) == 0 {
		return nil, false, nil
	}
	line, err := p.out.ReadBytes('\n')
	return line, msg.Method == "initialize", err
}

// ServeHTTP is the net/http floor.
func (p *floorProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed) // no standalone stream
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	answer, initialize, err := p.exchange(body)
	switch {
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadGateway)
	case answer == nil:
		w.WriteHeader(http.StatusAccepted)
	default:
		if initialize {
			w.Header().Set("Mcp-Session-Id", "floor")
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}
}

// serveRaw is the hand-written floor: HTTP/1.1 keep-alive read and written
// directly on the connection, only as much of it as the Go SDK client sends
// (a request line, headers with a Content-Length, a body). It is what a
// gateway could save by leaving net/http out of the call path.
func (p *floorProxy) serveRaw(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	var out []byte
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return
		}
		post := bytes.HasPrefix(line, []byte("POST "))
		length := 0
		for {
			h, err := r.ReadSlice('\n')
			if err != nil {
				return
			}
			h = bytes.TrimSpace(h)
			if len(h) == 0 {
				break
			}
			if k, v, ok := bytes.Cut(h, []byte(":")); ok && strings.EqualFold(string(k), "Content-Length") {
				if length, err = strconv.Atoi(string(bytes.TrimSpace(v))); err != nil {
					return
				}
			}
		}
		body := make([]byte, length)
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		out = out[:0]
		if !post {
			out = append(out, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n"...)
		} else if answer, initialize, err := p.exchange(body); err != nil {
			return
		} else if answer == nil {
			out = append(out, "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"...)
		} else {
			out = append(out, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"...)
			if initialize {
				out = append(out, "Mcp-Session-Id: floor\r\n"...)
			}
			out = append(out, "Content-Length: "...)
			out = strconv.AppendInt(out, int64(len(answer)), 10)
			out = append(out, "\r\n\r\n"...)
			out = append(out, answer...)
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}
