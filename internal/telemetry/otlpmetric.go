package telemetry

import (
	"context"
	"encoding/binary"
	"math"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// metricExporter is an sdkmetric.Exporter sending OTLP/HTTP protobuf
// (see otlpHTTP), cumulative like the SDK's OTLP exporters by default.
type metricExporter struct{ out *otlpHTTP }

func (e *metricExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}

func (e *metricExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

func (e *metricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	_, err := e.out.post(ctx, encodeMetrics(rm))
	return err
}

func (e *metricExporter) ForceFlush(context.Context) error { return nil }
func (e *metricExporter) Shutdown(context.Context) error   { return nil }

// encodeMetrics writes an ExportMetricsServiceRequest of rm.
func encodeMetrics(rm *metricdata.ResourceMetrics) []byte {
	return pb(nil).msg(1, true, func(b pb) pb { // ResourceMetrics
		b = b.msg(1, true, func(b pb) pb { return appendAttrs(b, 1, rm.Resource.Attributes()) })
		for _, sm := range rm.ScopeMetrics {
			b = b.msg(2, true, func(b pb) pb { // ScopeMetrics
				b = b.msg(1, true, func(b pb) pb { return b.str(1, sm.Scope.Name).str(2, sm.Scope.Version) })
				for _, m := range sm.Metrics {
					b = b.msg(2, true, func(b pb) pb { return appendMetric(b, m) })
				}
				return b.str(3, sm.Scope.SchemaURL)
			})
		}
		return b.str(3, rm.Resource.SchemaURL())
	})
}

// temporality is OTLP's AggregationTemporality (1 delta, 2 cumulative).
func temporality(t metricdata.Temporality) uint64 {
	if t == metricdata.DeltaTemporality {
		return 1
	}
	return 2
}

func appendMetric(b pb, m metricdata.Metrics) pb {
	b = b.str(1, m.Name).str(2, m.Description).str(3, m.Unit)
	switch d := m.Data.(type) {
	case metricdata.Gauge[int64]:
		return b.msg(5, true, func(b pb) pb {
			for _, dp := range d.DataPoints {
				b = b.msg(1, true, func(b pb) pb { return appendIntPoint(b, dp) })
			}
			return b
		})
	case metricdata.Sum[int64]:
		return b.msg(7, true, func(b pb) pb {
			for _, dp := range d.DataPoints {
				b = b.msg(1, true, func(b pb) pb { return appendIntPoint(b, dp) })
			}
			b = b.varint(2, temporality(d.Temporality))
			if d.IsMonotonic {
				b = b.varint(3, 1)
			}
			return b
		})
	case metricdata.Histogram[float64]:
		return b.msg(9, true, func(b pb) pb {
			for _, dp := range d.DataPoints {
				b = b.msg(1, true, func(b pb) pb { return appendHistPoint(b, dp) })
			}
			return b.varint(2, temporality(d.Temporality))
		})
	}
	return b
}

// appendIntPoint writes a NumberDataPoint with as_int.
func appendIntPoint(b pb, dp metricdata.DataPoint[int64]) pb {
	b = b.fixed64(2, uint64(dp.StartTime.UnixNano())).fixed64(3, uint64(dp.Time.UnixNano()))
	b = binary.LittleEndian.AppendUint64(b.tag(6, wireFixed64), uint64(dp.Value))
	return appendAttrs(b, 7, dp.Attributes.ToSlice())
}

// appendHistPoint writes a HistogramDataPoint.
func appendHistPoint(b pb, dp metricdata.HistogramDataPoint[float64]) pb {
	b = b.fixed64(2, uint64(dp.StartTime.UnixNano())).fixed64(3, uint64(dp.Time.UnixNano()))
	b = binary.LittleEndian.AppendUint64(b.tag(4, wireFixed64), dp.Count)
	b = b.double(5, dp.Sum)
	counts := make([]byte, 0, 8*len(dp.BucketCounts))
	for _, c := range dp.BucketCounts {
		counts = binary.LittleEndian.AppendUint64(counts, c)
	}
	b = b.bytes(6, counts)
	bounds := make([]byte, 0, 8*len(dp.Bounds))
	for _, f := range dp.Bounds {
		bounds = binary.LittleEndian.AppendUint64(bounds, math.Float64bits(f))
	}
	b = b.bytes(7, bounds)
	b = appendAttrs(b, 9, dp.Attributes.ToSlice())
	if v, ok := dp.Min.Value(); ok {
		b = b.double(11, v)
	}
	if v, ok := dp.Max.Value(); ok {
		b = b.double(12, v)
	}
	return b
}
