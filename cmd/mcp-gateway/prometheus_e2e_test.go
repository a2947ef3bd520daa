package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// prometheusBin finds the Prometheus server (the Debian package
// prometheus, which `make test` installs where root can apt-get it). It
// skips the test where it is absent, unless CI is set and the machine
// could have installed it (root, apt-get): then test-deps failed, and
// the test fails rather than let CI pass without it.
func prometheusBin(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err == nil {
		return bin
	}
	_, aptErr := exec.LookPath("apt-get")
	if os.Getenv("CI") != "" && os.Geteuid() == 0 && aptErr == nil {
		t.Fatal("prometheus is not installed, though this machine can install it (root, apt-get): " +
			"see what `make test-deps` (test/prometheus-deps.sh) printed")
	}
	t.Skip("prometheus is not installed (the Debian package prometheus; `make test-deps` installs it as root with apt-get)")
	return ""
}

// promTarget is one of /api/v1/targets' active targets.
type promTarget struct {
	ScrapePool string    `json:"scrapePool"`
	Health     string    `json:"health"`
	LastError  string    `json:"lastError"`
	LastScrape time.Time `json:"lastScrape"`
}

// TestTelemetryPrometheus has a real Prometheus server scrape the
// gateway's /metrics, both on the gateway's port with the bearer token (a
// scrape job with `authorization` credentials, as observability.md shows)
// and on the --metrics-listen listener without one, and queries the calls
// counter back: it holds exactly the calls made. A third job scrapes the
// token port without the token, and Prometheus sees it refused.
func TestTelemetryPrometheus(t *testing.T) {
	promBin := prometheusBin(t)
	sb := newTestbox(t)
	metricsPort := freePort(t)
	cfg := mcpConfig(t, map[string]any{
		"local": map[string]any{"runCmd": fixture.ShellCommand(fixture.Options{Name: "local", Verbatim: true})},
	})
	if r := sb.launch(cfg, "--metrics-listen", fmt.Sprintf("127.0.0.1:%d", metricsPort)); r.code != 0 {
		t.Fatalf("launch exited %d\nstdout: %s\nstderr: %s\nlog:\n%s", r.code, r.stdout, r.stderr, sb.log())
	}

	promDir := t.TempDir()
	promPort := freePort(t)
	promCfg := filepath.Join(promDir, "prometheus.yml")
	gwTarget := fmt.Sprintf("127.0.0.1:%d", sb.port)
	// A short interval: the test waits for a scrape after its calls.
	if err := os.WriteFile(promCfg, []byte(fmt.Sprintf(`global:
  scrape_interval: 500ms
  scrape_timeout: 400ms
scrape_configs:
  - job_name: gateway
    authorization: {credentials_file: %q}
    static_configs: [{targets: [%q]}]
  - job_name: gateway-listener
    static_configs: [{targets: ["127.0.0.1:%d"]}]
  - job_name: gateway-no-token
    static_configs: [{targets: [%q]}]
`, sb.tokenFile, gwTarget, metricsPort, gwTarget)), 0o600); err != nil {
		t.Fatal(err)
	}
	var promOut strings.Builder
	prom := exec.Command(promBin, "--config.file="+promCfg, "--storage.tsdb.path="+filepath.Join(promDir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", promPort), "--log.level=warn")
	prom.Stdout, prom.Stderr = &promOut, &promOut
	prom.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := prom.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-prom.Process.Pid, syscall.SIGKILL)
		_ = prom.Wait()
	})
	promURL := fmt.Sprintf("http://127.0.0.1:%d", promPort)
	// api gets one Prometheus API answer's data; false while the server
	// is not up yet (its port refuses, or it answers 503 while starting).
	api := func(path string, data any) bool {
		t.Helper()
		resp, err := http.Get(promURL + path)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			return false
		}
		var body struct {
			Status string          `json:"status"`
			Error  string          `json:"error"`
			Data   json.RawMessage `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Status != "success" {
			t.Fatalf("prometheus %s: %d %v %s", path, resp.StatusCode, err, body.Error)
		}
		if err := json.Unmarshal(body.Data, data); err != nil {
			t.Fatalf("prometheus %s: %v", path, err)
		}
		return true
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cs := sb.connect(ctx, nil)
	const calls = 7
	for i := range calls {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": strconv.Itoa(i)}}); err != nil {
			t.Fatalf("call %d: %v\nlog:\n%s", i, err, sb.log())
		}
	}
	// The gateway records a call as it answers it: wait until its own page
	// counts all of them, then for a scrape of each job begun after that.
	const series = `mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",gen_ai_tool_name="echo"`
	pollUntil(t, 30*time.Second, "the gateway's /metrics counting the calls", func() bool {
		fams, _ := scrape(t, sb)
		return histCounts(fams["mcp_server_operation_duration_seconds"])["tools/call|echo|"] == calls
	})
	counted := time.Now()
	targets := map[string]promTarget{}
	pollUntil(t, 60*time.Second, "a scrape of each job after the calls", func() bool {
		var data struct {
			ActiveTargets []promTarget `json:"activeTargets"`
		}
		if !api("/api/v1/targets", &data) {
			return false
		}
		for _, tg := range data.ActiveTargets {
			targets[tg.ScrapePool] = tg
		}
		for _, job := range []string{"gateway", "gateway-listener", "gateway-no-token"} {
			if !targets[job].LastScrape.After(counted) {
				return false
			}
		}
		return true
	})
	for _, job := range []string{"gateway", "gateway-listener"} {
		if tg := targets[job]; tg.Health != "up" {
			t.Errorf("job %s: health %q (%s)\nprometheus:\n%s", job, tg.Health, tg.LastError, promOut.String())
		}
	}
	if tg := targets["gateway-no-token"]; tg.Health != "down" || !strings.Contains(tg.LastError, "401") {
		t.Errorf("job gateway-no-token (no credentials): health %q, error %q; want down with a 401", tg.Health, tg.LastError)
	}

	// The counter, queried back from Prometheus' store.
	for _, job := range []string{"gateway", "gateway-listener"} {
		var data struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		}
		query := series + `,job="` + job + `"}`
		if !api("/api/v1/query?query="+url.QueryEscape(query), &data) {
			t.Fatalf("prometheus stopped answering\n%s", promOut.String())
		}
		if data.ResultType != "vector" || len(data.Result) != 1 {
			t.Fatalf("query %s: %s with %d series, want one sample", query, data.ResultType, len(data.Result))
		}
		if got := data.Result[0].Value[1]; got != strconv.Itoa(calls) {
			t.Errorf("job %s: the calls counter reads %v in Prometheus, want %d", job, got, calls)
		}
	}
}
