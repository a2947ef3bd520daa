package telemetry

import (
	"bufio"
	"math"
	"net/http"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// servePrometheus writes the metrics in the Prometheus text format (0.0.4),
// named as OpenTelemetry's Prometheus exporter names them (dots to
// underscores, the unit as a suffix, _total on counters). Written here,
// not with that exporter: it links the Prometheus client library and
// protobuf, several MB for one page of text.
func (t *Telemetry) servePrometheus(w http.ResponseWriter, r *http.Request) {
	var rm metricdata.ResourceMetrics
	if err := t.reader.Collect(r.Context(), &rm); err != nil {
		http.Error(w, "collect metrics: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	bw := bufio.NewWriter(w)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			writeMetric(bw, m)
		}
	}
	_ = bw.Flush()
}

// promName is m's name in Prometheus: invalid characters to underscores,
// the unit's suffix.
func promName(m metricdata.Metrics) string {
	var b strings.Builder
	for i, r := range m.Name {
		ok := r == '_' || r == ':' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')
		if ok {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	switch m.Unit {
	case "s":
		name += "_seconds"
	case "By":
		name += "_bytes"
	}
	return name
}

func writeMetric(w *bufio.Writer, m metricdata.Metrics) {
	name := promName(m)
	head := func(kind, suffix string) {
		w.WriteString("# HELP " + name + suffix + " " + escapeHelp(m.Description) + "\n")
		w.WriteString("# TYPE " + name + suffix + " " + kind + "\n")
	}
	switch d := m.Data.(type) {
	case metricdata.Histogram[float64]:
		head("histogram", "")
		for _, dp := range d.DataPoints {
			var cum uint64
			for i, bound := range dp.Bounds {
				cum += dp.BucketCounts[i]
				writeSample(w, name+"_bucket", dp.Attributes, "le", formatFloat(bound), strconv.FormatUint(cum, 10))
			}
			writeSample(w, name+"_bucket", dp.Attributes, "le", "+Inf", strconv.FormatUint(dp.Count, 10))
			writeSample(w, name+"_sum", dp.Attributes, "", "", formatFloat(dp.Sum))
			writeSample(w, name+"_count", dp.Attributes, "", "", strconv.FormatUint(dp.Count, 10))
		}
	case metricdata.Sum[int64]:
		if d.IsMonotonic {
			head("counter", "_total")
			for _, dp := range d.DataPoints {
				writeSample(w, name+"_total", dp.Attributes, "", "", strconv.FormatInt(dp.Value, 10))
			}
			return
		}
		head("gauge", "")
		for _, dp := range d.DataPoints {
			writeSample(w, name, dp.Attributes, "", "", strconv.FormatInt(dp.Value, 10))
		}
	case metricdata.Gauge[int64]:
		head("gauge", "")
		for _, dp := range d.DataPoints {
			writeSample(w, name, dp.Attributes, "", "", strconv.FormatInt(dp.Value, 10))
		}
	}
}

// writeSample writes one line: name{labels} value, with extra (le) last.
func writeSample(w *bufio.Writer, name string, attrs attribute.Set, extraKey, extraValue, value string) {
	w.WriteString(name)
	n := 0
	label := func(k, v string) {
		if n == 0 {
			w.WriteByte('{')
		} else {
			w.WriteByte(',')
		}
		n++
		w.WriteString(labelName(k) + `="` + escapeLabel(v) + `"`)
	}
	for it := attrs.Iter(); it.Next(); {
		kv := it.Attribute()
		label(string(kv.Key), kv.Value.Emit())
	}
	if extraKey != "" {
		label(extraKey, extraValue)
	}
	if n > 0 {
		w.WriteByte('}')
	}
	w.WriteString(" " + value + "\n")
}

func labelName(k string) string {
	var b strings.Builder
	for i, r := range k {
		if r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func escapeLabel(v string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`).Replace(v)
}

func escapeHelp(v string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(v)
}

func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
