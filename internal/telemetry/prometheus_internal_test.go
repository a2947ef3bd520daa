package telemetry

import (
	"bufio"
	"math"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// The Prometheus text of each kind of metric, written out by hand from
// the format's rules: names with invalid characters made underscores (a
// digit only after the first character), the unit's suffix, _total on
// counters, cumulative buckets ending with +Inf, label values and help
// text escaped.
func TestPrometheusTextExact(t *testing.T) {
	attrs := attribute.NewSet(attribute.String("mcp.method.name", "a\"b\\c\nd"), attribute.Int("9th", 9))
	metrics := []metricdata.Metrics{
		{Name: "op.duration", Unit: "s", Description: "Two\nlines, a \\ and a \"quote\".",
			Data: metricdata.Histogram[float64]{DataPoints: []metricdata.HistogramDataPoint[float64]{{
				Attributes: attrs, Bounds: []float64{0.5, 1}, BucketCounts: []uint64{1, 0, 2}, Count: 3, Sum: 2.25}}}},
		{Name: "server.restarts", Unit: "{restart}", Data: metricdata.Sum[int64]{IsMonotonic: true,
			DataPoints: []metricdata.DataPoint[int64]{{Attributes: attribute.NewSet(attribute.String("s", "x")), Value: 2}}}},
		{Name: "in-flight", Data: metricdata.Sum[int64]{DataPoints: []metricdata.DataPoint[int64]{{Value: -1}}}},
		// Every bound of the allowed ranges: kept as they are.
		{Name: "m09azAZ:_", Data: metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{{
			Attributes: attribute.NewSet(attribute.String("k09azAZ_", "v")), Value: 1}}}},
		{Name: "9size:all", Unit: "By", Data: metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{{Value: 7}}}},
		{Name: "neg", Data: metricdata.Histogram[float64]{DataPoints: []metricdata.HistogramDataPoint[float64]{{
			Bounds: []float64{-1}, BucketCounts: []uint64{0, 1}, Count: 1, Sum: math.Inf(-1)}}}},
		{Name: "inf", Data: metricdata.Histogram[float64]{DataPoints: []metricdata.HistogramDataPoint[float64]{{
			BucketCounts: []uint64{2}, Count: 2, Sum: math.Inf(1)}, {BucketCounts: []uint64{0}, Sum: 1e21}}}},
	}
	want := `# HELP op_duration_seconds Two\nlines, a \\ and a "quote".
# TYPE op_duration_seconds histogram
op_duration_seconds_bucket{_th="9",mcp_method_name="a\"b\\c\nd",le="0.5"} 1
op_duration_seconds_bucket{_th="9",mcp_method_name="a\"b\\c\nd",le="1"} 1
op_duration_seconds_bucket{_th="9",mcp_method_name="a\"b\\c\nd",le="+Inf"} 3
op_duration_seconds_sum{_th="9",mcp_method_name="a\"b\\c\nd"} 2.25
op_duration_seconds_count{_th="9",mcp_method_name="a\"b\\c\nd"} 3
# HELP server_restarts_total 
# TYPE server_restarts_total counter
server_restarts_total{s="x"} 2
# HELP in_flight 
# TYPE in_flight gauge
in_flight -1
# HELP m09azAZ:_ 
# TYPE m09azAZ:_ gauge
m09azAZ:_{k09azAZ_="v"} 1
# HELP _size:all_bytes 
# TYPE _size:all_bytes gauge
_size:all_bytes 7
# HELP neg 
# TYPE neg histogram
neg_bucket{le="-1"} 0
neg_bucket{le="+Inf"} 1
neg_sum -Inf
neg_count 1
# HELP inf 
# TYPE inf histogram
inf_bucket{le="+Inf"} 2
inf_sum +Inf
inf_count 2
inf_bucket{le="+Inf"} 0
inf_sum 1e+21
inf_count 0
`
	var out strings.Builder
	w := bufio.NewWriter(&out)
	for _, m := range metrics {
		writeMetric(w, m)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != want {
		t.Errorf("Prometheus text:\n%s\nwant:\n%s", got, want)
	}
}
