package telemetry

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"
)

func envMap(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

// configFromEnv as the specification orders the OTEL_* variables: a
// signal's own before the general ones, each value read whole, the
// defaults (60 s between metric exports, 10 s per export) where none is
// set.
func TestConfigFromEnv(t *testing.T) {
	cfg, err := configFromEnv(envMap(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":            "https://collector.example:4318/",
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT":    "http://metrics.example/custom",
		"OTEL_EXPORTER_OTLP_HEADERS":             "a=1, b = x%2Cy ,,",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS":      "t=2",
		"OTEL_EXPORTER_OTLP_COMPRESSION":         "gzip",
		"OTEL_EXPORTER_OTLP_METRICS_COMPRESSION": "none",
		"OTEL_EXPORTER_OTLP_TIMEOUT":             "2500",
		"OTEL_EXPORTER_OTLP_PROTOCOL":            "http/protobuf",
	}))
	if err != nil {
		t.Fatal(err)
	}
	tr, m := cfg.traces, cfg.metrics
	if tr == nil || m == nil {
		t.Fatalf("traces %v, metrics %v: want both", tr, m)
	}
	if tr.url != "https://collector.example:4318/v1/traces" || m.url != "http://metrics.example/custom" {
		t.Errorf("urls %q, %q", tr.url, m.url)
	}
	if !maps.Equal(tr.headers, map[string]string{"t": "2"}) || !maps.Equal(m.headers, map[string]string{"a": "1", "b": "x,y"}) {
		t.Errorf("headers %v, %v", tr.headers, m.headers)
	}
	if !tr.gzip || m.gzip {
		t.Errorf("gzip %v, %v: want traces only", tr.gzip, m.gzip)
	}
	if tr.client.Timeout != 2500*time.Millisecond || m.client.Timeout != 2500*time.Millisecond {
		t.Errorf("timeouts %v, %v", tr.client.Timeout, m.client.Timeout)
	}
	if cfg.interval != 60*time.Second {
		t.Errorf("default export interval %v, want 60s", cfg.interval)
	}

	cfg, err = configFromEnv(envMap(map[string]string{
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces",
		"OTEL_METRIC_EXPORT_INTERVAL":        "1500",
	}))
	if err != nil || cfg.metrics != nil || cfg.traces == nil {
		t.Fatalf("traces endpoint only: %+v, %v", cfg, err)
	}
	if cfg.interval != 1500*time.Millisecond || cfg.traces.client.Timeout != 10*time.Second {
		t.Errorf("interval %v (want 1.5s), timeout %v (want the default 10s)", cfg.interval, cfg.traces.client.Timeout)
	}
}

// Every refusal is an ErrConfig naming the variable, for either signal,
// and an endpoint is shown without its password.
func TestConfigRefusals(t *testing.T) {
	base := "http://127.0.0.1:4318"
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": base, "OTEL_METRIC_EXPORT_INTERVAL": "0"}, "OTEL_METRIC_EXPORT_INTERVAL"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": base, "OTEL_METRIC_EXPORT_INTERVAL": "1s"}, "OTEL_METRIC_EXPORT_INTERVAL"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": base, "OTEL_EXPORTER_OTLP_TIMEOUT": "0"}, "OTEL_EXPORTER_OTLP_TIMEOUT"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": base, "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "grpc"}, "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": base, "OTEL_METRICS_EXPORTER": "prometheus"}, "OTEL_METRICS_EXPORTER"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": base, "OTEL_EXPORTER_OTLP_HEADERS": "a=%zz"}, "not URL-encoded"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": base, "OTEL_EXPORTER_OTLP_HEADERS": " =v"}, "key=value"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "ftp://user:pw-s3cret@host:21"}, "ftp://user:xxxxx@host:21"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http:///x"}, "want an http:// or https:// URL"},
		// A URL that does not parse cannot be masked: it is not shown.
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://user:pw-s3cret@[::1%zz]:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT does not parse"},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://user:pw-s3cret@host:43 18"}, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT does not parse"},
	} {
		_, err := configFromEnv(envMap(c.env))
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an ErrConfig naming %q", c.env, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "pw-s3cret") {
			t.Errorf("%v: the error shows the password: %v", c.env, err)
		}
	}
}
