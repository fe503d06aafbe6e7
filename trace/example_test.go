package trace_test

import (
	"context"
	"errors"
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	sdktracetest "go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/toolid"
	"github.com/toolbridge/toolbridge/trace"
)

// The span sequence of a gateway request handler for a bridged call,
// recorded in memory. Setup would build the same Telemetry from config.
func Example() {
	rec := sdktracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tel := trace.New(tp, nil)
	ctx := context.Background()

	// The client called tool_call(tool_name="github::create_issue") and
	// sent its trace context in params._meta.
	clientMeta := map[string]any{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	ctx, srv := tel.StartServer(ctx, trace.Request{
		Method: trace.MethodToolsCall, Target: toolid.MetaCall, ID: 1,
		Transport: config.ServeStdio, Meta: clientMeta,
	})
	ctx, tool := tel.StartTool(ctx, trace.ToolCall{
		Server: "github", Tool: "create_issue", Class: config.ClassDeferrable, Via: trace.ViaToolCall,
	})
	ctx, up := tel.StartClient(ctx, trace.Upstream{Transport: config.TransportStdio})
	upstreamMeta := tel.Inject(ctx, nil) // goes into the upstream request's params._meta
	up.EndResult(false)
	tool.EndResult(false)
	srv.EndResult(false)

	for _, s := range rec.Ended() {
		fmt.Printf("%-8s %-24s trace %s tool %s\n", s.SpanKind(), s.Name(), s.SpanContext().TraceID(), attr(s, trace.AttrGenAIToolName))
	}
	fmt.Println("upstream continues the trace:", upstreamMeta["traceparent"] != nil)
	// Output:
	// client   tools/call create_issue  trace 4bf92f3577b34da6a3ce929d0e0e4736 tool create_issue
	// internal tools/call create_issue  trace 4bf92f3577b34da6a3ce929d0e0e4736 tool create_issue
	// server   tools/call tool_call     trace 4bf92f3577b34da6a3ce929d0e0e4736 tool create_issue
	// upstream continues the trace: true
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// Setup with the stdout exporter writes spans as JSON to a writer
// (stderr unless WithWriter says otherwise).
func ExampleSetup() {
	var buf safeBuffer
	ctx := context.Background()
	tel, err := trace.Setup(ctx, config.Telemetry{Exporter: config.ExporterStdout}, []string{"OTEL_SERVICE_NAME=gw"}, trace.WithWriter(&buf))
	if err != nil {
		fmt.Println(err)
		return
	}
	_, s := tel.StartServer(ctx, trace.Request{Method: "tools/list"})
	s.EndError(-32603, errors.New("catalog not ready"))
	if err := tel.Shutdown(ctx); err != nil {
		fmt.Println(err)
	}
	fmt.Println(contains(buf.String(), `"Name":"tools/list"`), contains(buf.String(), `"Value":"-32603"`))
	// Output: true true
}
