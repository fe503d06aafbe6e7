package trace

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	sdktracetest "go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/toolid"
)

// recorder is a Telemetry over in-memory providers.
type recorder struct {
	tel     *Telemetry
	spans   *sdktracetest.SpanRecorder
	metrics *sdkmetric.ManualReader
}

func newRecorder(t *testing.T, recordContent bool) *recorder {
	t.Helper()
	sr := sdktracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	mr := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(mr))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	return &recorder{tel: New(tp, mp, WithRecordContent(recordContent)), spans: sr, metrics: mr}
}

// byName indexes ended spans by name; names are unique in these tests.
func (r *recorder) byName(t *testing.T) map[string]sdktrace.ReadOnlySpan {
	t.Helper()
	m := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range r.spans.Ended() {
		if _, dup := m[s.Name()]; dup {
			t.Fatalf("two spans named %q", s.Name())
		}
		m[s.Name()] = s
	}
	return m
}

// histogram returns the data points of a histogram metric.
func (r *recorder) histogram(t *testing.T, name string) []metricdata.HistogramDataPoint[float64] {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.metrics.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("collecting metrics: %v", err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			if m.Unit != "s" {
				t.Errorf("%s unit = %q, want s", name, m.Unit)
			}
			h, ok := m.Data.(metricdata.Histogram[float64])
			if !ok {
				t.Fatalf("%s is %T, want a float64 histogram", name, m.Data)
			}
			return h.DataPoints
		}
	}
	return nil
}

func attrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

func setAttrMap(set attribute.Set) map[string]string {
	m := map[string]string{}
	for _, kv := range set.ToSlice() {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

// wantAttrs fails for every key whose value differs; "" means absent.
func wantAttrs(t *testing.T, span string, got, want map[string]string) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		if w == "" {
			if ok {
				t.Errorf("%s: %s = %q, want it absent", span, k, g)
			}
			continue
		}
		if g != w {
			t.Errorf("%s: %s = %q, want %q", span, k, g, w)
		}
	}
}

// bridgedCall runs the span sequence the gateway makes for a tool_call.
func bridgedCall(ctx context.Context, tel *Telemetry, end func(client, tool, server *Span)) {
	ctx, srv := tel.StartServer(ctx, Request{
		Method: MethodToolsCall, Target: toolid.MetaCall, ID: int64(7), SessionID: "sess-1",
		ProtocolVersion: "2025-06-18", Transport: config.ServeHTTP, RemoteAddr: "127.0.0.1:50123",
		Arguments: map[string]any{"tool_name": "github::create_issue", "tool_args": map[string]any{"title": "x"}},
	})
	ctx, tool := tel.StartTool(ctx, ToolCall{
		Server: "github", Tool: "create_issue", Class: config.ClassDeferrable, Via: ViaToolCall,
		Arguments: map[string]any{"title": "x"},
	})
	ctx, client := tel.StartClient(ctx, Upstream{
		Transport: config.TransportStreamableHTTP, URL: "https://api.example.com/mcp",
		SessionID: "up-9", ProtocolVersion: "2025-03-26", RequestID: "r-1",
	})
	_ = tel.Inject(ctx, nil)
	end(client, tool, srv)
}

func TestBridgedCallSpans(t *testing.T) {
	r := newRecorder(t, false)
	bridgedCall(context.Background(), r.tel, func(client, tool, srv *Span) {
		client.SetResult(map[string]any{"content": "secret"})
		client.End()
		tool.End()
		srv.End()
	})
	// Tool and client spans share their name; tell them apart by kind.
	var srv, tool, client sdktrace.ReadOnlySpan
	for _, s := range r.spans.Ended() {
		switch s.SpanKind() {
		case oteltrace.SpanKindServer:
			srv = s
		case oteltrace.SpanKindInternal:
			tool = s
		case oteltrace.SpanKindClient:
			client = s
		}
	}
	if len(r.spans.Ended()) != 3 || srv == nil || tool == nil || client == nil {
		t.Fatalf("got %d spans, want server, internal and client", len(r.spans.Ended()))
	}
	if srv.Name() != "tools/call tool_call" || tool.Name() != "tools/call create_issue" {
		t.Errorf("server %q tool %q, want tools/call tool_call and tools/call create_issue", srv.Name(), tool.Name())
	}
	if srv.SpanKind() != oteltrace.SpanKindServer {
		t.Errorf("server span kind = %v", srv.SpanKind())
	}
	if tool.Parent().SpanID() != srv.SpanContext().SpanID() {
		t.Errorf("tool span's parent is not the server span")
	}
	if client.Parent().SpanID() != tool.SpanContext().SpanID() {
		t.Errorf("client span's parent is not the tool span")
	}
	if client.Name() != "tools/call create_issue" {
		t.Errorf("client span name = %q", client.Name())
	}
	wantAttrs(t, "server", attrs(srv), map[string]string{
		AttrMCPMethodName:       "tools/call",
		AttrGenAIToolName:       "create_issue", // set by StartTool, never tool_call
		AttrGenAIOperationName:  "execute_tool",
		AttrJSONRPCRequestID:    "7",
		AttrMCPSessionID:        SessionRef("sess-1"),
		AttrMCPProtocolVersion:  "2025-06-18",
		AttrNetworkTransport:    "tcp",
		AttrNetworkProtocolName: "http",
		AttrClientAddress:       "127.0.0.1",
		AttrClientPort:          "50123",
		AttrUpstream:            "github",
		AttrBridgeVia:           "tool_call",
		AttrToolClass:           "deferrable",
		AttrGenAIToolArguments:  "", // content is opt-in
		AttrErrorType:           "",
	})
	wantAttrs(t, "tool", attrs(tool), map[string]string{
		AttrMCPMethodName:      "tools/call",
		AttrGenAIToolName:      "create_issue",
		AttrGenAIOperationName: "execute_tool",
		AttrUpstream:           "github",
		AttrBridgeVia:          "tool_call",
		AttrToolClass:          "deferrable",
		AttrMCPSessionID:       SessionRef("sess-1"),
		AttrGenAIToolArguments: "",
	})
	wantAttrs(t, "client", attrs(client), map[string]string{
		AttrMCPMethodName:       "tools/call",
		AttrGenAIToolName:       "create_issue",
		AttrGenAIOperationName:  "execute_tool",
		AttrJSONRPCRequestID:    "r-1",
		AttrMCPSessionID:        SessionRef("up-9"),
		AttrMCPProtocolVersion:  "2025-03-26",
		AttrNetworkTransport:    "tcp",
		AttrNetworkProtocolName: "http",
		AttrServerAddress:       "api.example.com",
		AttrServerPort:          "443",
		AttrUpstream:            "github",
		AttrBridgeVia:           "tool_call",
		AttrToolClass:           "deferrable",
		AttrGenAIToolResult:     "",
	})
	for _, s := range r.spans.Ended() {
		// A session id is a credential: spans carry its hash only.
		for k, v := range attrs(s) {
			if strings.Contains(v, "sess-1") || strings.Contains(v, "up-9") {
				t.Errorf("%s: attribute %s = %q holds a session id", s.Name(), k, v)
			}
		}
		if got := attrs(s)[AttrGenAIToolName]; got == toolid.MetaCall {
			t.Errorf("%s carries gen_ai.tool.name=tool_call", s.Name())
		}
		if s.Status().Code != codes.Unset {
			t.Errorf("%s status = %v, want unset", s.Name(), s.Status())
		}
	}

	for _, tc := range []struct {
		metric string
		want   map[string]string
	}{
		{"mcp.server.operation.duration", map[string]string{
			AttrMCPMethodName: "tools/call", AttrGenAIToolName: "create_issue", AttrUpstream: "github",
			AttrBridgeVia: "tool_call", AttrToolClass: "deferrable", AttrNetworkTransport: "tcp",
			AttrMCPSessionID: "", AttrJSONRPCRequestID: "", AttrErrorType: "",
		}},
		{"mcp.client.operation.duration", map[string]string{
			AttrMCPMethodName: "tools/call", AttrGenAIToolName: "create_issue", AttrUpstream: "github",
			AttrServerAddress: "api.example.com", AttrServerPort: "443",
			AttrMCPSessionID: "", AttrJSONRPCRequestID: "",
		}},
	} {
		pts := r.histogram(t, tc.metric)
		if len(pts) != 1 || pts[0].Count != 1 {
			t.Fatalf("%s: %d points, want one with count 1", tc.metric, len(pts))
		}
		wantAttrs(t, tc.metric, setAttrMap(pts[0].Attributes), tc.want)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestRecordContent(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprint(on), func(t *testing.T) {
			r := newRecorder(t, on)
			bridgedCall(context.Background(), r.tel, func(client, tool, srv *Span) {
				client.SetResult(map[string]any{"content": "secret"})
				client.End()
				tool.End()
				srv.End()
			})
			for _, s := range r.spans.Ended() {
				a := attrs(s)
				_, args := a[AttrGenAIToolArguments]
				_, res := a[AttrGenAIToolResult]
				wantArgs := on && s.SpanKind() != oteltrace.SpanKindClient
				wantRes := on && s.SpanKind() == oteltrace.SpanKindClient
				if args != wantArgs || res != wantRes {
					t.Errorf("%v %s: arguments %v result %v, want %v %v", s.SpanKind(), s.Name(), args, res, wantArgs, wantRes)
				}
				if res && !strings.Contains(a[AttrGenAIToolResult], "secret") {
					t.Errorf("result = %q", a[AttrGenAIToolResult])
				}
			}
		})
	}
}

func TestSearchSpan(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprint(on), func(t *testing.T) {
			r := newRecorder(t, on)
			_, s := r.tel.StartServer(context.Background(), Request{Method: MethodToolsCall, Target: "tool_search", Transport: config.ServeStdio})
			s.SetSearch(len("open a pull request"), 5, 3, "open a pull request")
			s.End()
			span := r.byName(t)["tools/call tool_search"]
			if span == nil {
				t.Fatal("no tools/call tool_search span")
			}
			want := map[string]string{
				AttrSearchQueryLength: "19", AttrSearchLimit: "5", AttrSearchHits: "3",
				AttrGenAIToolName: "tool_search", AttrNetworkTransport: "pipe", AttrNetworkProtocolName: "",
				AttrSearchQuery: "",
			}
			if on {
				want[AttrSearchQuery] = "open a pull request"
			}
			wantAttrs(t, "tool_search", attrs(span), want)
		})
	}
}

func TestSpanErrors(t *testing.T) {
	tests := []struct {
		name     string
		end      func(*Span)
		wantType string
		wantCode string
		wantMsg  string
	}{
		{"json-rpc error", func(s *Span) { s.EndError(-32602, errors.New("invalid params")) }, "-32602", "-32602", "invalid params"},
		{"tool error", func(s *Span) { s.EndResult(true) }, "tool_error", "", "the tool returned isError"},
		{"timeout", func(s *Span) { s.EndError(0, fmt.Errorf("calling github: %w", context.DeadlineExceeded)) }, "timeout", "", "calling github: context deadline exceeded"},
		{"cancelled", func(s *Span) { s.EndError(0, context.Canceled) }, "cancelled", "", "context canceled"},
		{"other", func(s *Span) { s.EndError(0, errors.New("upstream github is down")) }, "_OTHER", "", "upstream github is down"},
		{"nil error", func(s *Span) { s.EndError(0, nil) }, "_OTHER", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder(t, false)
			_, s := r.tel.StartServer(context.Background(), Request{Method: MethodToolsCall, Target: "create_issue"})
			tc.end(s)
			s.End() // a second end is ignored
			ended := r.spans.Ended()
			if len(ended) != 1 {
				t.Fatalf("%d spans ended, want 1", len(ended))
			}
			sp := ended[0]
			if sp.Status().Code != codes.Error || sp.Status().Description != tc.wantMsg {
				t.Errorf("status = %+v, want error %q", sp.Status(), tc.wantMsg)
			}
			wantAttrs(t, tc.name, attrs(sp), map[string]string{AttrErrorType: tc.wantType, AttrRPCStatusCode: tc.wantCode})
			pts := r.histogram(t, "mcp.server.operation.duration")
			if len(pts) != 1 || pts[0].Count != 1 {
				t.Fatalf("histogram points = %d, want one point counted once", len(pts))
			}
			wantAttrs(t, "metric", setAttrMap(pts[0].Attributes), map[string]string{AttrErrorType: tc.wantType, AttrRPCStatusCode: tc.wantCode})
		})
	}
}

func TestServerSpanNames(t *testing.T) {
	tests := []struct {
		req  Request
		name string
		tool string
	}{
		{Request{Method: "tools/list"}, "tools/list", ""},
		{Request{Method: "initialize"}, "initialize", ""},
		{Request{Method: MethodToolsCall, Target: "read_file"}, "tools/call read_file", "read_file"},
		{Request{Method: MethodToolsCall, Target: toolid.MetaCall}, "tools/call tool_call", ""},
		{Request{Method: "prompts/get", Target: "review"}, "prompts/get review", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder(t, false)
			_, s := r.tel.StartServer(context.Background(), tc.req)
			s.End()
			sp := r.byName(t)[tc.name]
			if sp == nil {
				t.Fatalf("no span %q among %v", tc.name, keys(r.byName(t)))
			}
			a := attrs(sp)
			wantAttrs(t, tc.name, a, map[string]string{AttrGenAIToolName: tc.tool, AttrMCPMethodName: tc.req.Method})
			if _, ok := a[AttrJSONRPCRequestID]; ok {
				t.Errorf("jsonrpc.request.id set without an id")
			}
		})
	}
}

func TestClientSpanStdioAndDefaults(t *testing.T) {
	r := newRecorder(t, false)
	// Without StartTool, the client span takes what it is given.
	_, c := r.tel.StartClient(context.Background(), Upstream{
		Server: "fs", Method: "tools/list", Transport: config.TransportStdio, URL: "http://ignored:1",
	})
	c.End()
	sp := r.byName(t)["tools/list"]
	if sp == nil || sp.SpanKind() != oteltrace.SpanKindClient {
		t.Fatalf("want a client span named tools/list, got %v", keys(r.byName(t)))
	}
	wantAttrs(t, "client", attrs(sp), map[string]string{
		AttrNetworkTransport: "pipe", AttrServerAddress: "", AttrServerPort: "",
		AttrUpstream: "fs", AttrGenAIToolName: "", AttrGenAIOperationName: "",
	})
}

func TestDisabledIsNilSafe(t *testing.T) {
	for name, tel := range map[string]*Telemetry{"disabled": Disabled(), "nil": nil} {
		t.Run(name, func(t *testing.T) {
			parent := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
			ctx, s := tel.StartServer(context.Background(), Request{Method: MethodToolsCall, Meta: map[string]any{"traceparent": parent}})
			if s != nil {
				t.Fatalf("disabled StartServer returned a span")
			}
			ctx, tool := tel.StartTool(ctx, ToolCall{Tool: "x"})
			ctx, client := tel.StartClient(ctx, Upstream{})
			client.SetSearch(1, 2, 3, "q")
			client.SetResult("r")
			client.SetAttributes(attribute.Bool("x", true))
			client.EndError(1, errors.New("x"))
			tool.EndResult(true)
			s.End()
			if s.TraceID() != "" || tel.Enabled() || tel.RecordContent() {
				t.Errorf("disabled telemetry reports a trace or enabled")
			}
			// The client's trace context still reaches the upstream.
			meta := tel.Inject(ctx, nil)
			if meta["traceparent"] != parent {
				t.Errorf("forwarded traceparent = %v, want the client's %s", meta["traceparent"], parent)
			}
			if err := tel.ForceFlush(context.Background()); err != nil {
				t.Errorf("ForceFlush: %v", err)
			}
			if err := tel.Shutdown(context.Background()); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		})
	}
}

func TestInvalidUTF8IsCleaned(t *testing.T) {
	r := newRecorder(t, true)
	bad := "tool\xff\xfe"
	_, s := r.tel.StartServer(context.Background(), Request{Method: MethodToolsCall, Target: bad, SessionID: "s\xc3"})
	s.SetResult(strings.Repeat("é", maxContentBytes)) // cut mid-rune if done bytewise
	s.End()
	for _, sp := range r.spans.Ended() {
		if !utf8.ValidString(sp.Name()) {
			t.Errorf("span name %q is not valid UTF-8", sp.Name())
		}
		for _, kv := range sp.Attributes() {
			if v := kv.Value.Emit(); !utf8.ValidString(v) {
				t.Errorf("%s = %q is not valid UTF-8", kv.Key, v)
			}
		}
		if res := attrs(sp)[AttrGenAIToolResult]; !strings.HasSuffix(res, "…(truncated)") || len(res) > maxContentBytes+len("…(truncated)") {
			t.Errorf("result not truncated: %d bytes", len(res))
		}
	}
}

func TestHeaderParentAndLink(t *testing.T) {
	r := newRecorder(t, false)
	metaParent := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	httpParent := "00-11111111111111111111111111111111-2222222222222222-01"
	h := http.Header{}
	h.Set("Traceparent", httpParent)
	_, s := r.tel.StartServer(context.Background(), Request{Method: "tools/list", Meta: map[string]any{"traceparent": metaParent}, Header: h})
	s.End()
	sp := r.spans.Ended()[0]
	if got := sp.Parent().TraceID().String(); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("parent trace = %s, want the _meta one", got)
	}
	if !sp.Parent().IsRemote() {
		t.Errorf("parent is not remote")
	}
	if len(sp.Links()) != 1 || sp.Links()[0].SpanContext.SpanID().String() != "2222222222222222" {
		t.Errorf("links = %v, want one to the HTTP parent", sp.Links())
	}

	// Header only: the header is the parent and there is no link.
	r = newRecorder(t, false)
	_, s = r.tel.StartServer(context.Background(), Request{Method: "tools/list", Header: h})
	s.End()
	sp = r.spans.Ended()[0]
	if sp.Parent().SpanID().String() != "2222222222222222" || len(sp.Links()) != 0 {
		t.Errorf("parent = %s links = %d, want the header parent and no link", sp.Parent().SpanID(), len(sp.Links()))
	}
}

func TestSetDenied(t *testing.T) {
	r := newRecorder(t, false)
	_, s := r.tel.StartServer(context.Background(), Request{Method: MethodToolsCall, Target: "delete_repo"})
	s.SetDenied("command guard.sh", "no deleting")
	s.EndResult(true)
	sp := r.spans.Ended()[0]
	wantAttrs(t, "denied", attrs(sp), map[string]string{AttrHookDeniedBy: "command guard.sh", AttrErrorType: "tool_error"})
	if ev := sp.Events(); len(ev) != 1 || ev[0].Attributes[0].Value.AsString() != "no deleting" {
		t.Errorf("events = %+v, want one with the reason", ev)
	}
}

func TestSessionRef(t *testing.T) {
	if got := SessionRef(""); got != "" {
		t.Errorf("SessionRef(\"\") = %q, want \"\"", got)
	}
	a, b := SessionRef("mcp-session-A"), SessionRef("mcp-session-B")
	if len(a) != 16 || strings.Trim(a, "0123456789abcdef") != "" {
		t.Errorf("SessionRef = %q, want 16 hex digits", a)
	}
	if a == b || a != SessionRef("mcp-session-A") {
		t.Errorf("SessionRef is not a stable, distinct hash: %q %q", a, b)
	}
	if strings.Contains(a, "session") {
		t.Errorf("SessionRef(%q) = %q shows the id", "mcp-session-A", a)
	}
}
