package tracetest

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func id(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }

// sampleTraces is a server span with a child client span.
func sampleTraces() *colltrace.ExportTraceServiceRequest {
	server := &tracepb.Span{
		TraceId: id(16, 0xab), SpanId: id(8, 0x01), ParentSpanId: id(8, 0x09),
		Name: "tools/call tool_call", Kind: tracepb.Span_SPAN_KIND_SERVER,
		StartTimeUnixNano: 1_000, EndTimeUnixNano: 2_000,
		Attributes: []*commonpb.KeyValue{
			str("gen_ai.tool.name", "create_issue"),
			{Key: "server.port", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 443}}},
			{Key: "ratio", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 0.5}}},
			{Key: "ok", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}},
			{Key: "list", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{
				Values: []*commonpb.AnyValue{{Value: &commonpb.AnyValue_StringValue{StringValue: "a"}}},
			}}}},
		},
		Status: &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "boom"},
		Links:  []*tracepb.Span_Link{{TraceId: id(16, 0xcd), SpanId: id(8, 0x02)}},
	}
	client := &tracepb.Span{
		TraceId: id(16, 0xab), SpanId: id(8, 0x03), ParentSpanId: id(8, 0x01),
		Name: "tools/call create_issue", Kind: tracepb.Span_SPAN_KIND_CLIENT,
	}
	return &colltrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "tb")}},
		ScopeSpans: []*tracepb.ScopeSpans{{
			Scope: &commonpb.InstrumentationScope{Name: "scope"},
			Spans: []*tracepb.Span{server, client},
		}},
	}}}
}

func sampleMetrics() *collmetrics.ExportMetricsServiceRequest {
	return &collmetrics.ExportMetricsServiceRequest{ResourceMetrics: []*metricpb.ResourceMetrics{{
		ScopeMetrics: []*metricpb.ScopeMetrics{{Metrics: []*metricpb.Metric{{
			Name: "mcp.server.operation.duration", Unit: "s",
			Data: &metricpb.Metric_Histogram{Histogram: &metricpb.Histogram{DataPoints: []*metricpb.HistogramDataPoint{{
				Attributes: []*commonpb.KeyValue{str("mcp.method.name", "tools/call")},
				Count:      2, Sum: proto.Float64(0.25),
			}}}},
		}}}},
	}}}
}

func checkSpans(t *testing.T, spans []Span) {
	t.Helper()
	srv, ok := Find(spans, "tools/call tool_call")
	if !ok {
		t.Fatalf("no server span in %v", spans)
	}
	want := Span{
		Name: "tools/call tool_call", Kind: "server",
		TraceID: strings.Repeat("ab", 16), SpanID: strings.Repeat("01", 8), ParentSpanID: strings.Repeat("09", 8),
		Scope: "scope", Status: Status{Code: "error", Message: "boom"},
	}
	if srv.Name != want.Name || srv.Kind != want.Kind || srv.TraceID != want.TraceID || srv.SpanID != want.SpanID ||
		srv.ParentSpanID != want.ParentSpanID || srv.Scope != want.Scope || srv.Status != want.Status {
		t.Errorf("server span = %+v, want %+v", srv, want)
	}
	for k, v := range map[string]string{"gen_ai.tool.name": "create_issue", "server.port": "443", "ratio": "0.5", "ok": "true", "list": `["a"]`} {
		if srv.Attributes[k] != v {
			t.Errorf("attribute %s = %q, want %q", k, srv.Attributes[k], v)
		}
	}
	if srv.Resource["service.name"] != "tb" || len(srv.Links) != 1 || srv.Links[0].SpanID != strings.Repeat("02", 8) {
		t.Errorf("resource %v links %v", srv.Resource, srv.Links)
	}
	if srv.End.Sub(srv.Start) != time.Microsecond {
		t.Errorf("duration = %v", srv.End.Sub(srv.Start))
	}
	kids := Children(spans, srv)
	if len(kids) != 1 || kids[0].Kind != "client" {
		t.Errorf("children = %v, want the client span", kids)
	}
}

func TestGRPC(t *testing.T) {
	r := Start(t)
	conn, err := grpc.NewClient(strings.TrimPrefix(r.Endpoint(), "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := colltrace.NewTraceServiceClient(conn).Export(ctx, sampleTraces()); err != nil {
		t.Fatalf("exporting traces: %v", err)
	}
	if _, err := collmetrics.NewMetricsServiceClient(conn).Export(ctx, sampleMetrics()); err != nil {
		t.Fatalf("exporting metrics: %v", err)
	}
	checkSpans(t, r.WaitForSpans(ctx, 2))
	m := r.WaitForMetric(ctx, "mcp.server.operation.duration")
	if m.Unit != "s" || len(m.Points) != 1 || m.Points[0].Count != 2 || m.Points[0].Sum != 0.25 ||
		m.Points[0].Attributes["mcp.method.name"] != "tools/call" {
		t.Errorf("metric = %+v", m)
	}
	if r.Exports() != 2 {
		t.Errorf("Exports = %d, want 2", r.Exports())
	}
	r.Reset()
	if len(r.Spans()) != 0 || len(r.Metrics()) != 0 || r.Exports() != 0 {
		t.Errorf("Reset left data behind")
	}
}

func TestHTTP(t *testing.T) {
	tests := []struct {
		name        string
		contentType string
		gzip        bool
		marshal     func(proto.Message) ([]byte, error)
	}{
		{"protobuf", "application/x-protobuf", false, proto.Marshal},
		{"protobuf gzip", "application/x-protobuf", true, proto.Marshal},
		{"json", "application/json", false, protojson.Marshal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Start(t)
			body, err := tc.marshal(sampleTraces())
			if err != nil {
				t.Fatal(err)
			}
			if tc.gzip {
				var buf bytes.Buffer
				zw := gzip.NewWriter(&buf)
				zw.Write(body)
				zw.Close()
				body = buf.Bytes()
			}
			req, _ := http.NewRequest(http.MethodPost, r.HTTPEndpoint()+"/v1/traces", bytes.NewReader(body))
			req.Header.Set("Content-Type", tc.contentType)
			if tc.gzip {
				req.Header.Set("Content-Encoding", "gzip")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != tc.contentType {
				t.Fatalf("status %d content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			checkSpans(t, r.Spans())
		})
	}
}

func TestHTTPRejectsGarbage(t *testing.T) {
	r := Start(t)
	for _, tc := range []struct{ path, ct, enc, body string }{
		{"/v1/traces", "application/x-protobuf", "", "\xff\xff\xff"},
		{"/v1/metrics", "application/json", "", "{not json"},
		{"/v1/traces", "application/x-protobuf", "gzip", "not gzip"},
	} {
		req, _ := http.NewRequest(http.MethodPost, r.HTTPEndpoint()+tc.path, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", tc.ct)
		if tc.enc != "" {
			req.Header.Set("Content-Encoding", tc.enc)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s %q: status %d, want 400", tc.path, tc.body, resp.StatusCode)
		}
	}
	if r.Exports() != 0 {
		t.Errorf("garbage counted as %d exports", r.Exports())
	}
}

func TestEnviron(t *testing.T) {
	r := Start(t)
	env := strings.Join(r.Environ("grpc"), " ")
	if !strings.Contains(env, "OTEL_EXPORTER_OTLP_ENDPOINT="+r.Endpoint()) || !strings.Contains(env, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc") {
		t.Errorf("grpc environ = %s", env)
	}
	env = strings.Join(r.Environ("http/protobuf"), " ")
	if !strings.Contains(env, "OTEL_EXPORTER_OTLP_ENDPOINT="+r.HTTPEndpoint()) {
		t.Errorf("http environ = %s", env)
	}
	if r.Endpoint() == r.HTTPEndpoint() {
		t.Errorf("gRPC and HTTP share %s", r.Endpoint())
	}
}
