package telemetry

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ErrConfig wraps every error about the OTEL_* variables: the gateway
// refuses to start with them rather than run without the telemetry its
// operator asked for.
var ErrConfig = errors.New("telemetry config")

// config is what the OTEL_* variables say, for the parts this package
// reads itself; the SDK reads the rest (OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER and its argument).
type config struct {
	traces  *otlpHTTP // nil: no traces
	metrics *otlpHTTP // nil: no OTLP metrics
	// interval is OTEL_METRIC_EXPORT_INTERVAL.
	interval time.Duration
	// batch is the OTEL_BSP_* variables.
	batch batchOptions
}

// configFromEnv reads the variables through env (os.Getenv). Traces and
// OTLP metrics are each on when an OTLP endpoint applies to them and their
// exporter variable is not "none"; OTEL_SDK_DISABLED=true turns both off.
func configFromEnv(env func(string) string) (config, error) {
	var cfg config
	if strings.EqualFold(strings.TrimSpace(env("OTEL_SDK_DISABLED")), "true") {
		return cfg, nil
	}
	var err error
	if cfg.traces, err = signalConfig(env, "TRACES", "/v1/traces"); err != nil {
		return cfg, err
	}
	if cfg.metrics, err = signalConfig(env, "METRICS", "/v1/metrics"); err != nil {
		return cfg, err
	}
	cfg.interval = 60 * time.Second
	if v := strings.TrimSpace(env("OTEL_METRIC_EXPORT_INTERVAL")); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return cfg, fmt.Errorf("%w: OTEL_METRIC_EXPORT_INTERVAL=%q: want milliseconds", ErrConfig, v)
		}
		cfg.interval = time.Duration(ms) * time.Millisecond
	}
	if cfg.batch, err = batchFromEnv(env); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// signalConfig is one signal's exporter (signal "TRACES" or "METRICS"), the
// signal's own variables before the general ones, as the specification
// orders them; nil when none applies.
func signalConfig(env func(string) string, signal, path string) (*otlpHTTP, error) {
	get := func(name string) (string, string) {
		specific := "OTEL_EXPORTER_OTLP_" + signal + "_" + name
		if v := strings.TrimSpace(env(specific)); v != "" {
			return v, specific
		}
		general := "OTEL_EXPORTER_OTLP_" + name
		return strings.TrimSpace(env(general)), general
	}
	exporterVar := "OTEL_" + signal + "_EXPORTER"
	switch exp := strings.TrimSpace(env(exporterVar)); exp {
	case "none":
		return nil, nil
	case "", "otlp":
	default:
		return nil, fmt.Errorf("%w: %s=%q: this gateway exports otlp or none", ErrConfig, exporterVar, exp)
	}
	endpointVar := "OTEL_EXPORTER_OTLP_" + signal + "_ENDPOINT"
	endpoint := strings.TrimSpace(env(endpointVar))
	if endpoint == "" {
		endpointVar = "OTEL_EXPORTER_OTLP_ENDPOINT"
		base := strings.TrimSpace(env(endpointVar))
		if base == "" {
			return nil, nil
		}
		endpoint = strings.TrimSuffix(base, "/") + path
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		// Neither the value nor url's error (which quotes it) is shown: a
		// URL that does not parse cannot have its password masked.
		return nil, fmt.Errorf("%w: %s does not parse as a URL: want http(s)://host:port", ErrConfig, endpointVar)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: OTLP endpoint %q: want an http:// or https:// URL", ErrConfig, u.Redacted())
	}
	if proto, name := get("PROTOCOL"); proto != "" && proto != "http/protobuf" {
		return nil, fmt.Errorf("%w: %s=%q is not supported: this gateway exports OTLP over HTTP as protobuf "+
			"(http/protobuf) only; an OpenTelemetry Collector receives it on port 4318", ErrConfig, name, proto)
	}
	out := &otlpHTTP{url: u.String(), shown: u.Redacted()}
	if h, name := get("HEADERS"); h != "" {
		if out.headers, err = parseHeaders(h); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrConfig, name, err)
		}
	}
	switch c, name := get("COMPRESSION"); c {
	case "", "none":
	case "gzip":
		out.gzip = true
	default:
		return nil, fmt.Errorf("%w: %s=%q: want gzip or none", ErrConfig, name, c)
	}
	timeout := 10 * time.Second
	if t, name := get("TIMEOUT"); t != "" {
		ms, err := strconv.Atoi(t)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("%w: %s=%q: want milliseconds", ErrConfig, name, t)
		}
		timeout = time.Duration(ms) * time.Millisecond
	}
	out.client = newHTTPClient(timeout)
	return out, nil
}

// parseHeaders reads "key=value,key2=value2", values URL-encoded (W3C
// baggage style, as the specification says). The values are never logged:
// they are usually credentials.
func parseHeaders(s string) (map[string]string, error) {
	h := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, errors.New("want key=value pairs separated by commas")
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("header %s: the value is not URL-encoded", k)
		}
		h[k] = dv
	}
	return h, nil
}
