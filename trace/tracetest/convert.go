package tracetest

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// Span is one received span, flattened for assertions.
type Span struct {
	Name string
	// Kind is "server", "client", "internal", "producer", "consumer" or
	// "unspecified" (the strings of go.opentelemetry.io/otel/trace's
	// SpanKind).
	Kind string
	// TraceID, SpanID and ParentSpanID are lowercase hex; ParentSpanID
	// is "" for a root span.
	TraceID      string
	SpanID       string
	ParentSpanID string
	// Attributes holds every attribute as text: ints in decimal, bools as
	// true/false, arrays and maps in a JSON-like form.
	Attributes map[string]string
	// Resource is the resource's attributes (service.name, ...).
	Resource map[string]string
	// Scope is the instrumentation scope's name.
	Scope  string
	Status Status
	Links  []Link
	Start  time.Time
	End    time.Time
}

// Status is a span's status.
type Status struct {
	// Code is "unset", "ok" or "error".
	Code    string
	Message string
}

// Link is a span link.
type Link struct {
	TraceID string
	SpanID  string
}

// String is "kind name" and the ids, for failure messages.
func (s Span) String() string {
	return fmt.Sprintf("%s %q (span %s parent %s)", s.Kind, s.Name, s.SpanID, s.ParentSpanID)
}

// Find returns the first span named name.
func Find(spans []Span, name string) (Span, bool) {
	for _, s := range spans {
		if s.Name == name {
			return s, true
		}
	}
	return Span{}, false
}

// Children returns the spans whose parent is parent.
func Children(spans []Span, parent Span) []Span {
	var out []Span
	for _, s := range spans {
		if s.TraceID == parent.TraceID && s.ParentSpanID == parent.SpanID {
			out = append(out, s)
		}
	}
	return out
}

// Metric is one received metric of one export.
type Metric struct {
	Name   string
	Unit   string
	Points []Point
}

// Point is a data point. Histograms fill Count and Sum; sums and gauges
// fill Value.
type Point struct {
	Attributes map[string]string
	Count      uint64
	Sum        float64
	Value      float64
}

// spansFrom flattens an export request.
func spansFrom(req *colltrace.ExportTraceServiceRequest) []Span {
	var out []Span
	for _, rs := range req.GetResourceSpans() {
		res := attrMap(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			scope := ss.GetScope().GetName()
			for _, sp := range ss.GetSpans() {
				s := Span{
					Name:         sp.GetName(),
					Kind:         kindString(sp.GetKind()),
					TraceID:      hex.EncodeToString(sp.GetTraceId()),
					SpanID:       hex.EncodeToString(sp.GetSpanId()),
					ParentSpanID: hex.EncodeToString(sp.GetParentSpanId()),
					Attributes:   attrMap(sp.GetAttributes()),
					Resource:     res,
					Scope:        scope,
					Status:       Status{Code: statusString(sp.GetStatus().GetCode()), Message: sp.GetStatus().GetMessage()},
					Start:        time.Unix(0, int64(sp.GetStartTimeUnixNano())),
					End:          time.Unix(0, int64(sp.GetEndTimeUnixNano())),
				}
				for _, l := range sp.GetLinks() {
					s.Links = append(s.Links, Link{TraceID: hex.EncodeToString(l.GetTraceId()), SpanID: hex.EncodeToString(l.GetSpanId())})
				}
				out = append(out, s)
			}
		}
	}
	return out
}

// metricsFrom flattens a metrics export request.
func metricsFrom(req *collmetrics.ExportMetricsServiceRequest) []Metric {
	var out []Metric
	for _, rm := range req.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				mt := Metric{Name: m.GetName(), Unit: m.GetUnit()}
				switch d := m.GetData().(type) {
				case *metricpb.Metric_Histogram:
					for _, p := range d.Histogram.GetDataPoints() {
						mt.Points = append(mt.Points, Point{Attributes: attrMap(p.GetAttributes()), Count: p.GetCount(), Sum: p.GetSum()})
					}
				case *metricpb.Metric_Sum:
					for _, p := range d.Sum.GetDataPoints() {
						mt.Points = append(mt.Points, Point{Attributes: attrMap(p.GetAttributes()), Value: numberValue(p)})
					}
				case *metricpb.Metric_Gauge:
					for _, p := range d.Gauge.GetDataPoints() {
						mt.Points = append(mt.Points, Point{Attributes: attrMap(p.GetAttributes()), Value: numberValue(p)})
					}
				}
				out = append(out, mt)
			}
		}
	}
	return out
}

// numberValue reads an int or double data point as float64.
func numberValue(p *metricpb.NumberDataPoint) float64 {
	if v, ok := p.GetValue().(*metricpb.NumberDataPoint_AsInt); ok {
		return float64(v.AsInt)
	}
	return p.GetAsDouble()
}

// kindString names a span kind as otel's trace.SpanKind.String does.
func kindString(k tracepb.Span_SpanKind) string {
	switch k {
	case tracepb.Span_SPAN_KIND_INTERNAL:
		return "internal"
	case tracepb.Span_SPAN_KIND_SERVER:
		return "server"
	case tracepb.Span_SPAN_KIND_CLIENT:
		return "client"
	case tracepb.Span_SPAN_KIND_PRODUCER:
		return "producer"
	case tracepb.Span_SPAN_KIND_CONSUMER:
		return "consumer"
	}
	return "unspecified"
}

// statusString names a status code.
func statusString(c tracepb.Status_StatusCode) string {
	switch c {
	case tracepb.Status_STATUS_CODE_OK:
		return "ok"
	case tracepb.Status_STATUS_CODE_ERROR:
		return "error"
	}
	return "unset"
}

// attrMap renders attributes as text.
func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = valueString(kv.GetValue())
	}
	return m
}

// valueString renders one attribute value as text.
func valueString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_BytesValue:
		return hex.EncodeToString(x.BytesValue)
	case *commonpb.AnyValue_ArrayValue:
		parts := make([]string, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, strconv.Quote(valueString(e)))
		}
		return "[" + strings.Join(parts, ",") + "]"
	case *commonpb.AnyValue_KvlistValue:
		parts := make([]string, 0, len(x.KvlistValue.GetValues()))
		for _, e := range x.KvlistValue.GetValues() {
			parts = append(parts, strconv.Quote(e.GetKey())+":"+strconv.Quote(valueString(e.GetValue())))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	return ""
}
