package trace_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/toolid"
	"github.com/toolbridge/toolbridge/trace"
	"github.com/toolbridge/toolbridge/trace/tracetest"
)

// clientParent is the traceparent an MCP client sends in params._meta.
const (
	clientParent  = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
)

// TestOTLPExport sends a bridged call's spans through the real OTLP
// exporters, configured only through environ, into an in-process
// receiver, and checks what a collector would see.
func TestOTLPExport(t *testing.T) {
	for _, proto := range []string{trace.ProtocolGRPC, trace.ProtocolHTTPProtobuf} {
		t.Run(proto, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rcv := tracetest.Start(t)
			env := append(rcv.Environ(proto),
				"OTEL_SERVICE_NAME=tb-test",
				"OTEL_RESOURCE_ATTRIBUTES=deployment.environment=ci")
			tel, err := trace.Setup(ctx, config.Telemetry{Exporter: config.ExporterOTLP}, env, trace.WithServiceVersion("v0.test"))
			if err != nil {
				t.Fatalf("Setup: %v", err)
			}
			if !tel.Enabled() {
				t.Fatal("otlp telemetry is not enabled")
			}

			// What the gateway does for tool_call(github::create_issue).
			sctx, srv := tel.StartServer(ctx, trace.Request{
				Method: trace.MethodToolsCall, Target: toolid.MetaCall, ID: 3, SessionID: "s-1",
				Transport: config.ServeStdio, Meta: map[string]any{"traceparent": clientParent},
			})
			tctx, tool := tel.StartTool(sctx, trace.ToolCall{Server: "github", Tool: "create_issue", Class: config.ClassDeferrable, Via: trace.ViaToolCall})
			cctx, client := tel.StartClient(tctx, trace.Upstream{Transport: config.TransportStreamableHTTP, URL: "http://127.0.0.1:9/mcp"})
			meta := tel.Inject(cctx, map[string]any{"progressToken": 1})
			client.EndError(-32603, errors.New("internal error"))
			tool.EndError(-32603, errors.New("internal error"))
			srv.EndResult(true)

			if err := tel.Shutdown(ctx); err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
			spans := rcv.WaitForSpans(ctx, 3)
			if len(spans) != 3 {
				t.Fatalf("got %d spans, want 3: %v", len(spans), spans)
			}
			byKind := map[string]tracetest.Span{}
			for _, s := range spans {
				byKind[s.Kind] = s
			}
			s, tl, c := byKind["server"], byKind["internal"], byKind["client"]
			if s.Name != "tools/call tool_call" || tl.Name != "tools/call create_issue" || c.Name != "tools/call create_issue" {
				t.Fatalf("names: server %q internal %q client %q", s.Name, tl.Name, c.Name)
			}
			// One trace: client -> gateway server -> tool -> upstream client.
			for _, sp := range spans {
				if sp.TraceID != clientTraceID {
					t.Errorf("%v: trace %s, want the client's %s", sp, sp.TraceID, clientTraceID)
				}
			}
			if s.ParentSpanID != clientSpanID {
				t.Errorf("server parent = %s, want the client's span %s from _meta", s.ParentSpanID, clientSpanID)
			}
			if tl.ParentSpanID != s.SpanID || c.ParentSpanID != tl.SpanID {
				t.Errorf("links: tool parent %s (server %s), client parent %s (tool %s)", tl.ParentSpanID, s.SpanID, c.ParentSpanID, tl.SpanID)
			}
			if want := "00-" + clientTraceID + "-" + c.SpanID + "-01"; meta["traceparent"] != want {
				t.Errorf("injected traceparent = %v, want %s (the upstream's parent is our client span)", meta["traceparent"], want)
			}

			check := func(sp tracetest.Span, want map[string]string) {
				t.Helper()
				for k, v := range want {
					if got := sp.Attributes[k]; got != v {
						t.Errorf("%v: %s = %q, want %q", sp, k, got, v)
					}
				}
			}
			check(s, map[string]string{
				"mcp.method.name": "tools/call", "gen_ai.tool.name": "create_issue", "gen_ai.operation.name": "execute_tool",
				"jsonrpc.request.id": "3", "mcp.session.id": trace.SessionRef("s-1"), "network.transport": "pipe",
				"toolbridge.upstream": "github", "toolbridge.bridge.via": "tool_call", "toolbridge.tool.class": "deferrable",
				"error.type": "tool_error",
			})
			check(c, map[string]string{
				"mcp.method.name": "tools/call", "gen_ai.tool.name": "create_issue", "network.transport": "tcp",
				"server.address": "127.0.0.1", "server.port": "9", "toolbridge.upstream": "github",
				"error.type": "-32603", "rpc.response.status_code": "-32603",
			})
			if s.Status.Code != "error" || c.Status.Code != "error" || c.Status.Message != "internal error" {
				t.Errorf("statuses: server %+v client %+v", s.Status, c.Status)
			}
			if s.Resource["service.name"] != "tb-test" || s.Resource["service.version"] != "v0.test" ||
				s.Resource["deployment.environment"] != "ci" || s.Resource["telemetry.sdk.language"] != "go" {
				t.Errorf("resource = %v", s.Resource)
			}

			// Metrics went the same way.
			for _, name := range []string{"mcp.server.operation.duration", "mcp.client.operation.duration"} {
				m := rcv.WaitForMetric(ctx, name)
				if m.Unit != "s" || len(m.Points) != 1 || m.Points[0].Count != 1 {
					t.Errorf("%s: unit %q points %+v", name, m.Unit, m.Points)
					continue
				}
				if got := m.Points[0].Attributes["gen_ai.tool.name"]; got != "create_issue" {
					t.Errorf("%s: gen_ai.tool.name = %q", name, got)
				}
			}
		})
	}
}

// TestStdoutExporter checks the stdout exporter writes spans to the
// configured writer (stderr by default, never the MCP stream).
func TestStdoutExporter(t *testing.T) {
	var buf safeBuffer
	ctx := context.Background()
	tel, err := trace.Setup(ctx, config.Telemetry{Exporter: config.ExporterStdout}, nil, trace.WithWriter(&buf))
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	_, s := tel.StartServer(ctx, trace.Request{Method: "tools/list"})
	s.End()
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if out := buf.String(); !contains(out, `"Name":"tools/list"`) || !contains(out, "mcp.server.operation.duration") {
		t.Errorf("stdout exporter wrote %q, want the span and the metric", out)
	}
}

func TestSetupChoices(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		exporter string
		environ  []string
		enabled  bool
		wantErr  bool
	}{
		{exporter: "", enabled: false},
		{exporter: config.ExporterNone, enabled: false},
		{exporter: config.ExporterOTLP, environ: []string{"OTEL_SDK_DISABLED=true"}, enabled: false},
		{exporter: config.ExporterOTLP, enabled: true},
		{exporter: "jaeger", wantErr: true},
		{exporter: config.ExporterOTLP, environ: []string{"OTEL_EXPORTER_OTLP_PROTOCOL=http/json"}, wantErr: true},
	} {
		t.Run(tc.exporter+"/"+join(tc.environ), func(t *testing.T) {
			// Never the default localhost:4318: a real collector may
			// run on this machine.
			env := append([]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + closedEndpoint(t)}, tc.environ...)
			tel, err := trace.Setup(ctx, config.Telemetry{Exporter: tc.exporter}, env, trace.WithLogger(discard()))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("no error")
				}
				return
			}
			if err != nil {
				t.Fatalf("Setup: %v", err)
			}
			if tel.Enabled() != tc.enabled {
				t.Errorf("Enabled = %v, want %v", tel.Enabled(), tc.enabled)
			}
			if err := tel.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			if err := tel.Shutdown(ctx); err != nil {
				t.Errorf("second Shutdown: %v", err)
			}
		})
	}
}

// TestInvalidUTF8Exports sends client-controlled strings that are not
// UTF-8 through the real exporter. OTLP marshals attributes as protobuf
// strings, which must be UTF-8: one bad byte would fail the whole batch,
// losing every span in it.
func TestInvalidUTF8Exports(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rcv := tracetest.Start(t)
	tel, err := trace.Setup(ctx, config.Telemetry{Exporter: config.ExporterOTLP}, rcv.Environ(trace.ProtocolGRPC))
	if err != nil {
		t.Fatal(err)
	}
	_, good := tel.StartServer(ctx, trace.Request{Method: "tools/list"})
	_, bad := tel.StartServer(ctx, trace.Request{Method: trace.MethodToolsCall, Target: "x\xff", SessionID: "s\xc3", ID: "id\xfe"})
	bad.SetAttributes(attribute.String("custom", "v\xff"))
	bad.End()
	good.End()
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	spans := rcv.WaitForSpans(ctx, 2)
	if _, ok := tracetest.Find(spans, "tools/list"); !ok {
		t.Errorf("the well-formed span was lost with the bad one: %v", spans)
	}
}
