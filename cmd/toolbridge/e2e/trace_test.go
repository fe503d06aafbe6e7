package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/trace/tracetest"
)

// tracedUpstream is a streamable-HTTP MCP server in the test process whose
// tool records the traceparent it was called with.
func tracedUpstream(t *testing.T) (url string, port int, traceparent func() string) {
	t.Helper()
	var mu sync.Mutex
	var got string
	s := server.NewMCPServer("issues", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("create_issue", mcp.WithDescription("Create an issue"), mcp.WithString("title", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Params.Meta != nil {
				if tp, ok := req.Params.Meta.AdditionalFields["traceparent"].(string); ok {
					mu.Lock()
					got = tp
					mu.Unlock()
				}
			}
			return mcp.NewToolResultText("created " + req.GetString("title", "")), nil
		})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: server.NewStreamableHTTPServer(s), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	port = ln.Addr().(*net.TCPAddr).Port
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port), port, func() string {
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}

// TestTracesThroughRealOTLPReceiver runs the binary with the OTLP gRPC
// exporter into a real OTLP receiver and checks one trace spans client ->
// gateway -> upstream, with the real tool's name on the spans.
func TestTracesThroughRealOTLPReceiver(t *testing.T) {
	recv := tracetest.Start(t)
	upURL, upPort, upstreamTraceparent := tracedUpstream(t)
	cfg := writeConfig(t, "toolbridge.yaml", `
mode: on
telemetry: {exporter: otlp}
mcpServers:
  issues: {url: `+upURL+`}
`)
	env := append(recv.Environ("grpc"), "OTEL_SERVICE_NAME=toolbridge-e2e")
	g := startStdio(t, env, "serve", "--config", cfg)

	clientTrace := "4bf92f3577b34da6a3ce929d0e0e4736"
	req := mcp.CallToolRequest{}
	req.Params.Name = "tool_call"
	req.Params.Arguments = map[string]any{"tool_name": "issues::create_issue", "tool_args": map[string]any{"title": "traced"}}
	req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"traceparent": "00-" + clientTrace + "-00f067aa0ba902b7-01"}}
	res, err := g.c.CallTool(context.Background(), req)
	if err != nil || res.IsError {
		t.Fatalf("tool_call: %v %+v\nstderr:\n%s", err, res, g.stderr)
	}
	// Closing stdin stops toolbridge, which flushes its spans on the way out.
	g.close(t)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recv.WaitForSpans(ctx, 3)
	var server, tool, cli *tracetest.Span
	for _, s := range recv.Spans() {
		switch {
		case s.Name == "tools/call tool_call" && s.Kind == "server":
			server = &s
		case s.Name == "tools/call create_issue" && s.Kind == "internal":
			tool = &s
		case s.Name == "tools/call create_issue" && s.Kind == "client":
			cli = &s
		}
	}
	if server == nil || tool == nil || cli == nil {
		t.Fatalf("want server, tool and client spans; got %+v", recv.Spans())
	}
	if server.TraceID != clientTrace || server.ParentSpanID != "00f067aa0ba902b7" {
		t.Errorf("server span trace %s parent %s: not the client's trace", server.TraceID, server.ParentSpanID)
	}
	if tool.ParentSpanID != server.SpanID || cli.ParentSpanID != tool.SpanID || cli.TraceID != clientTrace {
		t.Errorf("want client -> gateway server -> tool -> upstream client span links")
	}
	if got, want := upstreamTraceparent(), "00-"+clientTrace+"-"+cli.SpanID+"-01"; got != want {
		t.Errorf("upstream got traceparent %q, want %q (under the gateway's client span)", got, want)
	}
	checks := []struct {
		span  *tracetest.Span
		key   string
		value string
	}{
		{server, "mcp.method.name", "tools/call"},
		{server, "gen_ai.tool.name", "create_issue"},
		{server, "network.transport", "pipe"},
		{server, "toolbridge.bridge.via", "tool_call"},
		{tool, "gen_ai.tool.name", "create_issue"},
		{tool, "gen_ai.operation.name", "execute_tool"},
		{tool, "toolbridge.upstream", "issues"},
		{tool, "toolbridge.tool.class", "deferrable"},
		{cli, "gen_ai.tool.name", "create_issue"},
		{cli, "network.transport", "tcp"},
		{cli, "server.address", "127.0.0.1"},
		{cli, "server.port", strconv.Itoa(upPort)},
	}
	for _, c := range checks {
		if got := c.span.Attributes[c.key]; got != c.value {
			t.Errorf("%s (%s): %s = %q, want %q", c.span.Name, c.span.Kind, c.key, got, c.value)
		}
	}
	if server.Attributes["jsonrpc.request.id"] == "" || server.Attributes["mcp.protocol.version"] == "" {
		t.Errorf("server span lacks jsonrpc.request.id or mcp.protocol.version: %v", server.Attributes)
	}
	if server.Resource["service.name"] != "toolbridge-e2e" {
		t.Errorf("service.name = %q, want OTEL_SERVICE_NAME", server.Resource["service.name"])
	}
}
