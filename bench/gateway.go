package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// buildGateway builds ./cmd/mcp-gateway and its plugin host into dir the
// way `make build` does (side by side: the gateway finds the host next to
// itself) and returns the gateway's path. It runs `go build` in the current
// directory, which must be inside the module (`go run ./bench` from the
// repository root is).
func buildGateway(ctx context.Context, dir string) (string, error) {
	for _, name := range []string{"mcp-gateway", pluginHost} {
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", filepath.Join(dir, name), "github.com/mcp-gateway/mcp-gateway/cmd/"+name)
		// Static, as template/Dockerfile builds it: no dynamic loader at start.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("build %s: %w\n%s", name, err, out.String())
		}
	}
	return filepath.Join(dir, "mcp-gateway"), nil
}

// pluginHost is the program the gateway runs go-plugin interceptors under.
const pluginHost = "mcp-gateway-plugin-host"

// box is one launched gateway in a temp dir: every path the SDKs' command
// line names points inside dir, the port is a free loopback one.
type box struct {
	bin        string
	dir        string
	addr       string // 127.0.0.1:<port>
	token      string
	tokenFile  string
	logFile    string
	pidFile    string
	serversDir string
	catalog    string
	env        []string // extra environment of the launch command
	args       []string // extra flags of the launch command
	protocol   string   // MCP version clients ask for ("" = the SDK's latest)
	gwPID      int      // the background gateway, once launched
	// CPU time (user+sys) the launch took: the launch command itself, and
	// the background gateway up to ready. Unlike wall time, neither depends
	// much on how busy the machine is.
	launchCPU, readyCPU time.Duration
}

// newBox prepares a box under parent; nothing runs until launch.
func newBox(bin, parent, name string) (*box, error) {
	dir, err := os.MkdirTemp(parent, name+"-")
	if err != nil {
		return nil, fmt.Errorf("box %s: %w", name, err)
	}
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("box %s: %w", name, err)
	}
	return &box{
		bin:        bin,
		dir:        dir,
		addr:       fmt.Sprintf("127.0.0.1:%d", port),
		token:      "bench-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		tokenFile:  filepath.Join(dir, "etc", ".token"),
		logFile:    filepath.Join(dir, "log", "mcp-gateway.log"),
		pidFile:    filepath.Join(dir, "run", "mcp-gateway.pid"),
		serversDir: filepath.Join(dir, "servers"),
		catalog:    filepath.Join(dir, "etc", "catalog.json"),
	}, nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// launch runs `mcp-gateway --config cfg ...` as the SDKs do (token in
// GATEWAY_ACCESS_TOKEN) and returns the command's wall time: from exec to
// its exit 0, which it reaches once /mcp serves.
func (b *box) launch(ctx context.Context, cfg string) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, b.bin, "--config", cfg,
		"--listen", b.addr,
		"--token-file", b.tokenFile,
		"--log-file", b.logFile,
		"--pid-file", b.pidFile,
		"--servers-dir", b.serversDir,
		"--catalog", b.catalog,
		"--startup-timeout", "50s",
		"--shutdown-grace", "3s",
	)
	cmd.Args = append(cmd.Args, b.args...)
	cmd.Env = append(append(os.Environ(), "GATEWAY_ACCESS_TOKEN="+b.token), b.env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	began := time.Now()
	err := cmd.Run()
	took := time.Since(began)
	b.gwPID = b.readPID()
	if err != nil {
		return 0, fmt.Errorf("launch gateway: %w: %s\nlog tail: %s", err, strings.TrimSpace(out.String()), b.logTail(5))
	}
	if b.gwPID == 0 || !alive(b.gwPID) {
		return 0, fmt.Errorf("launch gateway: exited 0 but no live pid in %s", b.pidFile)
	}
	b.launchCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if b.readyCPU, err = cpuTime(b.gwPID); err != nil {
		return 0, fmt.Errorf("launch gateway: %w", err)
	}
	return took, nil
}

func (b *box) readPID() int {
	data, err := os.ReadFile(b.pidFile)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid
}

func (b *box) logTail(n int) string {
	data, err := os.ReadFile(b.logFile)
	if err != nil {
		return "(no log)"
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// stop sends SIGTERM to the background gateway (its pid from the pid file,
// as an operator would) and waits until no process of its session is left.
// Whatever is still alive after a generous grace is killed and reported.
func (b *box) stop() error {
	pid := b.gwPID
	b.gwPID = 0
	if pid == 0 || !alive(pid) {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop gateway %d: %w", pid, err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if len(sessionMembers(pid)) == 0 {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	left := sessionMembers(pid)
	for _, p := range left {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	return fmt.Errorf("stop gateway %d: processes %v still alive 20s after SIGTERM (killed)", pid, left)
}

// bearer adds the token to every request of a client.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// httpClient returns an HTTP client for the gateway. Its transport keeps
// enough idle connections for every session (the default keeps 2 per host,
// which would make 32 sessions reconnect all the time and measure TCP setup
// instead of the gateway).
func (b *box) httpClient() *http.Client { return httpClient(b.token) }

func httpClient(token string) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 512
	tr.MaxIdleConnsPerHost = 512
	return &http.Client{Transport: bearer{token, tr}}
}

// connect opens a Go SDK client session to the gateway, as an agent would
// (default transport options: the standalone GET stream is opened too).
func (b *box) connect(ctx context.Context, hc *http.Client) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-agent", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: "http://" + b.addr + "/mcp", HTTPClient: hc}
	cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: b.protocol})
	if err != nil {
		return nil, fmt.Errorf("connect to gateway: %w", err)
	}
	return cs, nil
}

// connectN opens n sessions; on error it closes those already open.
func (b *box) connectN(ctx context.Context, n int) ([]*mcp.ClientSession, error) {
	hc := b.httpClient()
	var css []*mcp.ClientSession
	for range n {
		cs, err := b.connect(ctx, hc)
		if err != nil {
			closeAll(css)
			return nil, err
		}
		css = append(css, cs)
	}
	return css, nil
}

func closeAll(css []*mcp.ClientSession) {
	for _, cs := range css {
		cs.Close()
	}
}

// health is the part of GET /health the benchmark reads.
type health struct {
	Status  string `json:"status"`
	Tools   int    `json:"tools"`
	Servers []struct {
		Name  string `json:"name"`
		State string `json:"state"`
		PID   int    `json:"pid"`
	} `json:"servers"`
}

func (b *box) health(ctx context.Context) (health, error) {
	var h health
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+b.addr+"/health", nil)
	if err != nil {
		return h, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return h, fmt.Errorf("health: %w", err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return h, fmt.Errorf("health: %w", err)
	}
	if h.Status != "ok" {
		return h, errors.New("health: status " + h.Status)
	}
	return h, nil
}

// serverPID returns the pid /health reports for the named server.
func (h health) serverPID(name string) int {
	for _, s := range h.Servers {
		if s.Name == name {
			return s.PID
		}
	}
	return 0
}
