package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	mcpgateway "github.com/mcp-gateway/mcp-gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/aggregate"
	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/endpoint"
	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/intercept"
)

// settings are the gateway's runtime settings. Every path has a flag so that
// tests (and unprivileged users) can run it in a temp dir.
type settings struct {
	Config         string // the mcp object as JSON; "" with ConfigFile
	ConfigFile     string
	Listen         string
	TokenFile      string
	LogFile        string
	CatalogFile    string // override: adds or replaces catalog entries
	ServersDir     string
	PIDFile        string
	StartupTimeout time.Duration
	ShutdownGrace  time.Duration
	LogLevel       string
	// MaxSessions bounds agent sessions by count; the least recently used
	// idle one is closed beyond it, and a new session is refused while all
	// have calls in flight. Sessions never expire on idle time.
	MaxSessions int
	// MaxBackoff is the longest wait between restarts of a crashing server.
	MaxBackoff time.Duration
	// ProbeInterval is how often each remote's session is pinged for /health.
	ProbeInterval time.Duration
	// CallTimeout ends a call whose server sends neither its answer nor
	// progress for this long; zero: never.
	CallTimeout time.Duration
	// auditOut, if set, receives the audit lines instead of the log's
	// writer (not a flag; the daemon batches them, see logfile.Writer).
	auditOut io.Writer
	// Procs bounds the CPUs the gateway's own Go code runs on (0: the Go
	// runtime's default). See defaultProcs.
	Procs int
	// Limits bound HTTP requests and connections (endpoint.Limits).
	Limits endpoint.Limits
	// Interceptors is the interceptor config file; at its default path it
	// may be absent (no interceptors).
	Interceptors string
	// interceptors is the loaded interceptor config (set by resolve).
	interceptors *intercept.Config
	// AllowedOrigins is a comma-separated list of browser origins allowed
	// besides the gateway's own address; empty: none.
	AllowedOrigins string
	// Tools is the default tool view: "all" or "search"
	// (aggregate.ToolsView); over HTTP an agent's ?tools= overrides it.
	Tools string
	// Metrics serves GET /metrics (Prometheus text, behind the token);
	// the OTEL_* variables turn on OTLP export on their own.
	Metrics bool
	// MetricsListen also serves /metrics there, without the token (and
	// turns the metrics on).
	MetricsListen string
}

// Defaults of the contract (../shared/seeds: port 50005, /etc/mcp-gateway).
const (
	defaultListen      = ":50005"
	defaultTokenFile   = "/etc/mcp-gateway/.token"
	defaultLogFile     = "/var/log/mcp-gateway.log"
	defaultCatalogFile = "/etc/mcp-gateway/catalog.json"
	defaultServersDir  = "/opt/mcp-gateway/servers"
	defaultPIDFile     = "/var/run/mcp-gateway.pid"
)

func (s *settings) register(fs *flag.FlagSet) {
	fs.StringVar(&s.Config, "config", "", "the mcp config object as `JSON`")
	fs.StringVar(&s.ConfigFile, "config-file", "", "read the mcp config from this file")
	fs.StringVar(&s.Listen, "listen", defaultListen, "address to serve MCP on (path /mcp) and /health")
	fs.StringVar(&s.TokenFile, "token-file", defaultTokenFile, "where the access token is persisted (mode 0600)")
	fs.StringVar(&s.LogFile, "log-file", defaultLogFile, "log file of the background gateway")
	fs.StringVar(&s.CatalogFile, "catalog", defaultCatalogFile, "catalog override file (adds or replaces entries)")
	fs.StringVar(&s.ServersDir, "servers-dir", defaultServersDir, "where GitHub servers are cloned")
	fs.StringVar(&s.PIDFile, "pid-file", defaultPIDFile, "pid file, locked while a gateway runs")
	fs.DurationVar(&s.StartupTimeout, "startup-timeout", gateway.DefaultStartupTimeout, "how long servers may take to become ready")
	fs.DurationVar(&s.ShutdownGrace, "shutdown-grace", gateway.DefaultShutdownGrace, "how long shutdown waits for sessions and servers")
	fs.StringVar(&s.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.IntVar(&s.MaxSessions, "max-sessions", endpoint.DefaultMaxSessions, "most agent sessions kept; beyond it the least recently used idle one is closed, or a new session gets 503 while all have calls in flight (sessions never expire on idle time)")
	fs.DurationVar(&s.MaxBackoff, "max-backoff", 30*time.Second, "longest wait between restarts of a crashing server")
	fs.DurationVar(&s.ProbeInterval, "probe-interval", 30*time.Second, "how often each remote server is pinged; one that fails or does not answer within min(interval, 10s) is degraded in /health until a call or ping succeeds")
	fs.DurationVar(&s.CallTimeout, "call-timeout", defaultCallTimeout, "how long a server may send neither its answer nor progress before the call is cancelled and the agent gets an error naming the server (progress restarts it; 0: never)")
	fs.IntVar(&s.Procs, "procs", defaultProcs, "CPUs the gateway's own code may use at once (0: all, or $GOMAXPROCS)")
	fs.StringVar(&s.AllowedOrigins, "allowed-origins", "", "comma-separated browser origins (https://host[:port]) allowed to use /mcp besides the gateway's own address; \"*\" allows any; requests without an Origin header (MCP clients outside a browser) are not affected")
	fs.StringVar(&s.Tools, "tools", string(aggregate.ViewAll), "the tool view: \"all\" lists every tool; \"search\" lists only search_tools and call_tool, which find and call the others (over HTTP an agent picks its own with /mcp?tools=all|search)")
	fs.BoolVar(&s.Metrics, "metrics", false, "record metrics and serve them at GET /metrics in the Prometheus text format, behind the token (docs/observability.md; OTEL_* variables export traces and metrics over OTLP)")
	fs.StringVar(&s.MetricsListen, "metrics-listen", "", "also serve GET /metrics at this address without the token, for a scraper inside the sandbox's network (turns --metrics on)")
	fs.StringVar(&s.Interceptors, "interceptors", intercept.DefaultPath, "interceptor config file (README: Interceptors); may be absent at the default path")
	registerLimits(fs, &s.Limits)
}

// command describes a subcommand's flags for parseFlags and its -h.
type command struct {
	name     string // as typed after mcp-gateway ("" for a launch)
	synopsis string // the usage line -h prints
	// extra registers flags of this command only (may be nil).
	extra func(*flag.FlagSet)
	// shown lists the flags -h documents; nil shows every flag except the
	// hidden ones. Flags not shown are still parsed (a command may refuse
	// them with a message of its own).
	shown []string
	// hidden flags are never documented (internal plumbing).
	hidden []string
	// defaults overrides the default -h shows for a flag, when the command
	// uses another one than the flag's (stdio logs to stderr).
	defaults map[string]string
	// usages overrides a flag's -h text, when the command uses it otherwise.
	usages map[string]string
}

// usage prints c's synopsis and the flags it documents, in flag's format.
func (c command) usage(fs *flag.FlagSet) {
	out := fs.Output()
	fmt.Fprintf(out, "Usage: %s\n\nFlags:\n", c.synopsis)
	doc := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	doc.SetOutput(out)
	fs.VisitAll(func(f *flag.Flag) {
		if slices.Contains(c.hidden, f.Name) || (c.shown != nil && !slices.Contains(c.shown, f.Name)) {
			return
		}
		text := f.Usage
		if u, ok := c.usages[f.Name]; ok {
			text = u
		}
		doc.Var(f.Value, f.Name, text)
		d := doc.Lookup(f.Name)
		d.DefValue = f.DefValue
		if v, ok := c.defaults[f.Name]; ok {
			d.DefValue = v
		}
	})
	doc.PrintDefaults()
}

// parseFlags parses args into a new settings value.
func parseFlags(c command, args []string, stderr io.Writer) (*settings, *flag.FlagSet, error) {
	s := &settings{}
	fs := flag.NewFlagSet(strings.TrimSpace("mcp-gateway "+c.name), flag.ContinueOnError)
	fs.SetOutput(stderr)
	s.register(fs)
	if c.extra != nil {
		c.extra(fs)
	}
	fs.Usage = func() { c.usage(fs) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, nil, err
		}
		return nil, nil, &usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return nil, nil, &usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if s.Config != "" && s.ConfigFile != "" {
		return nil, nil, &usageError{"use --config or --config-file, not both"}
	}
	if s.StartupTimeout <= 0 {
		return nil, nil, &usageError{"--startup-timeout must be positive"}
	}
	if s.MaxSessions <= 0 {
		return nil, nil, &usageError{"--max-sessions must be positive"}
	}
	if s.Procs < 0 {
		return nil, nil, &usageError{"--procs must be 0 or more"}
	}
	if s.MaxBackoff <= 0 {
		return nil, nil, &usageError{"--max-backoff must be positive"}
	}
	if s.ProbeInterval <= 0 {
		return nil, nil, &usageError{"--probe-interval must be positive"}
	}
	if s.CallTimeout < 0 {
		return nil, nil, &usageError{"--call-timeout must be 0 (never) or positive"}
	}
	if err := checkLimits(s.Limits); err != nil {
		return nil, nil, &usageError{err.Error()}
	}
	if _, err := aggregate.ParseToolsView(s.Tools); err != nil {
		return nil, nil, &usageError{"--tools: " + err.Error()}
	}
	return s, fs, nil
}

// defaultCallTimeout is 5 minutes of silence from a server: the longest an
// agent's own client commonly waits (the Python SDK's SSE read timeout is
// 300 s; the TypeScript SDK gives up after 60 s by itself), so the gateway
// cuts off no call a client would still wait for, and ends, with an error
// naming the server, the calls of agents that would wait forever (the Go
// SDK's client has no timeout). Progress restarts it.
const defaultCallTimeout = 5 * time.Minute

// defaultProcs is 1: the gateway moves bytes between sockets and pipes, and
// with one CPU its goroutines hand work to each other on one thread instead
// of waking another; that was 15% of its CPU per forwarded call.
// In a sandbox of one or two vCPUs, the agent and the servers need the rest.
// It applies once every server has started (gateway.Config.Procs says why).
const defaultProcs = 1

// gatewayConfig is the gateway's config from the settings; token is the
// bearer token /mcp requires.
func (s *settings) gatewayConfig(token string, log zerolog.Logger) gateway.Config {
	return gateway.Config{
		Listen: s.Listen, Token: token, TokenFile: s.TokenFile,
		Logger: log, Audit: s.auditOut,
		Version:    readBuildInfo(debug.ReadBuildInfo).serverVersion(),
		ServersDir: s.ServersDir, CloneBaseURL: os.Getenv("MCP_GATEWAY_GITHUB_BASE_URL"),
		Interceptors:   s.interceptors,
		StartupTimeout: s.StartupTimeout, ShutdownGrace: s.ShutdownGrace, MaxBackoff: s.MaxBackoff,
		ProbeInterval: s.ProbeInterval, CallTimeout: s.CallTimeout,
		MaxSessions: s.MaxSessions, Limits: s.Limits, Procs: s.Procs,
		AllowedOrigins: splitList(s.AllowedOrigins),
		ToolsView:      aggregate.ToolsView(s.Tools),
		MetricsListen:  s.MetricsListen,
	}
}

// rawConfig returns the config JSON from --config or --config-file, or nil
// when neither is given.
func (s *settings) rawConfig() ([]byte, error) {
	if s.ConfigFile != "" {
		b, err := os.ReadFile(s.ConfigFile)
		if err != nil {
			return nil, &configError{fmt.Errorf("read --config-file: %w", err)}
		}
		return b, nil
	}
	if s.Config != "" {
		return []byte(s.Config), nil
	}
	return nil, nil
}

// loadCatalog returns the embedded catalog with the override applied.
func (s *settings) loadCatalog() (*catalog.Catalog, error) {
	return catalog.Load(mcpgateway.CatalogJSON, s.CatalogFile)
}

// defaultConfig is served by `mcp-gateway serve` without a config: the
// built-in sandbox server, which needs nothing installed.
const defaultConfig = `{"sandbox": {}}`

// resolve validates raw against the catalog and returns the server specs.
// Warnings go to stderr: the SDK shows them to the user only on failure, but
// someone running the command by hand sees them.
// resolveOrDefault resolves --config or --config-file, or with neither the
// embedded default (the built-in sandbox server), for serve and stdio.
func (s *settings) resolveOrDefault(stderr io.Writer) ([]catalog.ServerSpec, error) {
	raw, err := s.rawConfig()
	if err != nil {
		return nil, err
	}
	if raw == nil {
		raw = []byte(defaultConfig)
	}
	return s.resolve(raw, stderr)
}

func (s *settings) resolve(raw []byte, stderr io.Writer) ([]catalog.ServerSpec, error) {
	cat, err := s.loadCatalog()
	if err != nil {
		return nil, &configError{fmt.Errorf("load catalog: %w", err)}
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	res, err := catalog.Resolve(raw, cat, catalog.ResolveOptions{Self: self})
	if err != nil {
		return nil, &configError{err}
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(stderr, "mcp-gateway: warning: %s\n", w)
	}
	if s.interceptors, err = intercept.Load(s.Interceptors, s.Interceptors == intercept.DefaultPath); err != nil {
		return nil, &configError{err}
	}
	return res.Servers, nil
}

// registerLimits adds the HTTP limits' flags, defaulting to the endpoint's
// defaults.
func registerLimits(fs *flag.FlagSet, l *endpoint.Limits) {
	d := endpoint.DefaultLimits()
	fs.Int64Var(&l.MaxBodyBytes, "max-body-bytes", d.MaxBodyBytes, "largest request body accepted (413 beyond)")
	fs.DurationVar(&l.ReadHeaderTimeout, "read-header-timeout", d.ReadHeaderTimeout, "time a client has to send a request's headers")
	fs.DurationVar(&l.BodyTimeout, "body-timeout", d.BodyTimeout, "time a client has to send a request body (408 beyond)")
	fs.DurationVar(&l.IdleTimeout, "idle-timeout", d.IdleTimeout, "idle keep-alive connections are closed after this long")
	fs.DurationVar(&l.WriteTimeout, "write-timeout", d.WriteTimeout, "a response write that makes no progress this long (a client that stopped reading) closes the connection")
	fs.IntVar(&l.MaxBatch, "max-batch", d.MaxBatch, "most messages in one JSON-RPC batch (protocol 2025-03-26 and older; later protocols have no batches)")
	fs.IntVar(&l.MaxSessionRequests, "max-session-requests", d.MaxSessionRequests, "most requests of one session in flight at once (429 beyond)")
	fs.IntVar(&l.MaxSubscriptions, "max-subscriptions", d.MaxSubscriptions, "most resource subscriptions one session holds (429 beyond)")
	fs.DurationVar(&l.StreamKeepAlive, "stream-keepalive", d.StreamKeepAlive, "how often an idle standalone GET stream gets an SSE comment line, so that clients and proxies keep it open")
}

// checkLimits rejects limits that would disable a protection or break serving.
func checkLimits(l endpoint.Limits) error {
	if l.MaxBodyBytes < 0 {
		return errors.New("--max-body-bytes must not be negative")
	}
	for name, d := range map[string]time.Duration{"--read-header-timeout": l.ReadHeaderTimeout, "--body-timeout": l.BodyTimeout, "--idle-timeout": l.IdleTimeout, "--write-timeout": l.WriteTimeout,
		"--stream-keepalive": l.StreamKeepAlive} {
		if d < 0 {
			return fmt.Errorf("%s must not be negative", name)
		}
	}
	for name, n := range map[string]int{"--max-batch": l.MaxBatch, "--max-session-requests": l.MaxSessionRequests, "--max-subscriptions": l.MaxSubscriptions} {
		if n < 0 {
			return fmt.Errorf("%s must not be negative", name)
		}
	}
	return nil
}

// limitArgs renders l as flags, for the background gateway a launch starts.
func limitArgs(l endpoint.Limits) []string {
	return []string{
		"--max-body-bytes", strconv.FormatInt(l.MaxBodyBytes, 10),
		"--read-header-timeout", l.ReadHeaderTimeout.String(),
		"--body-timeout", l.BodyTimeout.String(),
		"--idle-timeout", l.IdleTimeout.String(),
		"--write-timeout", l.WriteTimeout.String(),
		"--max-batch", strconv.Itoa(l.MaxBatch),
		"--max-session-requests", strconv.Itoa(l.MaxSessionRequests),
		"--max-subscriptions", strconv.Itoa(l.MaxSubscriptions),
		"--stream-keepalive", l.StreamKeepAlive.String(),
	}
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(v string) []string {
	var out []string
	for item := range strings.SplitSeq(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
