package bridge

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/toolid"
	"github.com/toolbridge/toolbridge/trace"
)

// metaRecorder is an upstream whose tool records the _meta it received.
func metaRecorder(got *sync.Map) *server.MCPServer {
	s := server.NewMCPServer("rec", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("create_issue", mcp.WithString("title", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Params.Meta != nil {
				for k, v := range req.Params.Meta.AdditionalFields {
					got.Store(k, v)
				}
			}
			return mcp.NewToolResultText("ok"), nil
		})
	return s
}

func startTraced(t *testing.T, cfg *config.Config, upstreams map[string]*server.MCPServer) (*tracetest.InMemoryExporter, *client.Client) {
	t.Helper()
	exp, g := startTracedGateway(t, cfg, upstreams)
	c := g.InProcessClient(ClientHandlers{})
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	if _, err := c.Initialize(context.Background(), init); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return exp, c
}

// startTracedGateway is startTraced's gateway, for a test that picks its
// transport.
func startTracedGateway(t *testing.T, cfg *config.Config, upstreams map[string]*server.MCPServer) (*tracetest.InMemoryExporter, *Gateway) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tel := trace.New(tp, sdkmetric.NewMeterProvider())
	g, err := New(cfg, Options{Telemetry: tel})
	if err != nil {
		t.Fatal(err)
	}
	var specs []upstream.Spec
	for name, s := range upstreams {
		specs = append(specs, upstream.Spec{Name: name, InProcess: s})
	}
	if err := g.Connect(context.Background(), specs); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return exp, g
}

func attr(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

func spanNamed(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	for _, s := range spans {
		if s.Name == name {
			return s
		}
	}
	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
	}
	t.Fatalf("no span %q among %v", name, names)
	return tracetest.SpanStub{}
}

// TestToolCallSpansNameTheRealTool runs in process (mcp-go's
// dispatcher) and over stdio, where the call takes the tools/call fast
// path (fastpath.go).
func TestToolCallSpansNameTheRealTool(t *testing.T) {
	t.Run("in-process", func(t *testing.T) {
		var got sync.Map
		exp, c := startTraced(t, bridgeConfig(), map[string]*server.MCPServer{"rec": metaRecorder(&got)})
		checkToolCallSpans(t, exp, c, &got)
	})
	t.Run("stdio fast path", func(t *testing.T) {
		var got sync.Map
		exp, g := startTracedGateway(t, bridgeConfig(), map[string]*server.MCPServer{"rec": metaRecorder(&got)})
		checkToolCallSpans(t, exp, stdioPipeClient(t, g), &got)
		if g.fastServed.Load() == 0 {
			t.Error("the call did not take the fast path")
		}
	})
}

func checkToolCallSpans(t *testing.T, exp *tracetest.InMemoryExporter, c *client.Client, got *sync.Map) {
	t.Helper()

	// The client's own trace context arrives in params._meta.
	parent := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	req := mcp.CallToolRequest{}
	req.Params.Name = toolid.MetaCall
	req.Params.Arguments = map[string]any{"tool_name": "rec::create_issue", "tool_args": map[string]any{"title": "x"}}
	req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"traceparent": parent}}
	if res, err := c.CallTool(context.Background(), req); err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}

	spans := exp.GetSpans()
	srv := spanNamed(t, spans, "tools/call tool_call")
	// The TOOL (internal) and CLIENT spans share the name.
	var tool, cli tracetest.SpanStub
	for _, s := range spans {
		if s.Name != "tools/call create_issue" {
			continue
		}
		switch s.SpanKind {
		case oteltrace.SpanKindInternal:
			tool = s
		case oteltrace.SpanKindClient:
			cli = s
		}
	}
	if srv.SpanKind != oteltrace.SpanKindServer || cli.SpanKind != oteltrace.SpanKindClient {
		t.Fatalf("kinds: server span %v, client span %v", srv.SpanKind, cli.SpanKind)
	}
	if srv.SpanContext.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" || srv.Parent.SpanID().String() != "b7ad6b7169203331" {
		t.Fatalf("server span is not a child of the client's traceparent: trace %s parent %s", srv.SpanContext.TraceID(), srv.Parent.SpanID())
	}
	if tool.Parent.SpanID() != srv.SpanContext.SpanID() || cli.Parent.SpanID() != tool.SpanContext.SpanID() {
		t.Fatal("want server -> tool -> client parent links")
	}
	for _, s := range []tracetest.SpanStub{srv, tool, cli} {
		if g := attr(s, "gen_ai.tool.name"); g != "create_issue" {
			t.Errorf("%s: gen_ai.tool.name = %q, want the real tool", s.Name, g)
		}
		if v := attr(s, "toolbridge.bridge.via"); v != "tool_call" {
			t.Errorf("%s: toolbridge.bridge.via = %q", s.Name, v)
		}
		if v := attr(s, "toolbridge.upstream"); v != "rec" {
			t.Errorf("%s: toolbridge.upstream = %q", s.Name, v)
		}
	}
	if attr(srv, "mcp.method.name") != "tools/call" || attr(srv, "jsonrpc.request.id") == "" {
		t.Errorf("server span attributes: %v", srv.Attributes)
	}

	// The upstream continues the trace under the client span, and sees
	// none of the gateway's private _meta keys, nor the protocol keys of the
	// client's own hop (which an upstream checks against its session).
	tp, _ := got.Load("traceparent")
	want := "00-" + cli.SpanContext.TraceID().String() + "-" + cli.SpanContext.SpanID().String() + "-01"
	if tp != want {
		t.Fatalf("upstream got traceparent %v, want %s", tp, want)
	}
	got.Range(func(k, v any) bool {
		if strings.HasPrefix(k.(string), "io.toolbridge/") || strings.HasPrefix(k.(string), "io.modelcontextprotocol/") {
			t.Errorf("upstream received _meta key %s, which belongs to another hop", k)
		}
		return true
	})
}

// TestDirectCallOfDeferredToolSpanKeepsItsName: a deferred tool called by
// its own name is run through tool_call, but its span is named after what
// the client called.
func TestDirectCallOfDeferredToolSpanKeepsItsName(t *testing.T) {
	exp, c := startTraced(t, bridgeConfig(), map[string]*server.MCPServer{"issues": issueServer()})
	if res, text := callText(t, c, "create_issue", map[string]any{"repo": "a/b", "title": "t"}); res.IsError {
		t.Fatal(text)
	}
	s := spanNamed(t, exp.GetSpans(), "tools/call create_issue")
	if s.SpanKind != oteltrace.SpanKindServer {
		// The tool and client spans share the name; find the server one.
		for _, span := range exp.GetSpans() {
			if span.Name == "tools/call create_issue" && span.SpanKind == oteltrace.SpanKindServer {
				s = span
			}
		}
	}
	if s.SpanKind != oteltrace.SpanKindServer || attr(s, "toolbridge.bridge.via") != "direct" {
		t.Fatalf("want a SERVER span tools/call create_issue with via=direct; spans: %v", exp.GetSpans())
	}
}

func TestSearchSpanCarriesCountsNotTheQuery(t *testing.T) {
	exp, c := startTraced(t, bridgeConfig(), map[string]*server.MCPServer{"issues": issueServer()})
	callText(t, c, toolid.MetaSearch, map[string]any{"query": "create issue secret-words"})
	s := spanNamed(t, exp.GetSpans(), "tools/call tool_search")
	for _, kv := range s.Attributes {
		if strings.Contains(kv.Value.Emit(), "secret-words") {
			t.Fatalf("query text recorded without record_content: %s=%s", kv.Key, kv.Value.Emit())
		}
	}
	found := false
	for _, kv := range s.Attributes {
		found = found || strings.Contains(string(kv.Key), "query") && kv.Value.Emit() == "25"
	}
	if !found {
		t.Fatalf("no query length attribute on %v", s.Attributes)
	}
}

func TestCommandHookDeniesAndAuditLogRecords(t *testing.T) {
	dir := t.TempDir()
	audit := filepath.Join(dir, "audit.jsonl")
	cfg := bridgeConfig()
	cfg.Hooks = []config.Hook{{
		Match: "issues::create_*", Command: "sh",
		Args:   []string{"-c", `grep -q '"tool":"create_issue"' && echo "issues are frozen" >&2 && exit 2; exit 0`},
		Events: []string{"before"},
	}}
	cfg.Audit.File = audit
	_, c := startGateway(t, cfg, map[string]*server.MCPServer{"issues": issueServer()})

	res, text := callText(t, c, toolid.MetaCall, map[string]any{"tool_name": "issues::create_issue", "tool_args": map[string]any{"repo": "a/b", "title": "t"}})
	if !res.IsError || !strings.Contains(text, "issues are frozen") {
		t.Fatalf("hook should deny with its reason: isError=%v %q", res.IsError, text)
	}
	res, text = callText(t, c, toolid.MetaCall, map[string]any{"tool_name": "issues::list_pull_requests", "tool_args": map[string]any{"repo": "a/b"}})
	if res.IsError {
		t.Fatalf("unmatched tool was denied: %s", text)
	}
	b, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"denied"`) || !strings.Contains(lines[1], `"list_pull_requests"`) {
		t.Fatalf("audit log:\n%s", b)
	}
	// The hooks get the tool's annotations (encoded only when there are
	// hooks: see observedCall).
	for _, line := range lines {
		if !strings.Contains(line, `"annotations":{`) || !strings.Contains(line, `"destructiveHint":true`) {
			t.Errorf("audit line without the tool's annotations: %s", line)
		}
	}
}
