package trace_test

import (
	"context"
	"errors"
	"fmt"
	"time"

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

// Hooks built from config: a command hook that denies deleting issues,
// with the reason the model will read, and how the gateway uses them.
func ExampleNewHooks() {
	cfg := config.Default()
	cfg.Hooks = []config.Hook{{
		Match:   "github::delete_*",
		Command: "sh",
		Args:    []string{"-c", `echo "deleting is not allowed through the gateway" >&2; exit 2`},
		Timeout: 5 * time.Second,
	}}
	hooks, err := trace.NewHooks(&cfg, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer hooks.Close()

	ctx := context.Background()
	for _, tool := range []string{"create_issue", "delete_issue"} {
		call := trace.Call{Server: "github", Tool: tool, Via: trace.ViaToolCall, Arguments: map[string]any{"id": 7}}
		start := time.Now()
		d, _ := hooks.BeforeCall(ctx, call) // the error is always nil for *Hooks
		if d.Deny {
			fmt.Printf("%s: denied: %s\n", tool, d.Reason)
			hooks.AfterCall(ctx, call, trace.Result{Denied: true, Reason: d.Reason, Duration: time.Since(start)})
			continue
		}
		fmt.Printf("%s: allowed\n", tool)
		// ... call the upstream ...
		hooks.AfterCall(ctx, call, trace.Result{Duration: time.Since(start)})
	}
	// Output:
	// create_issue: allowed
	// delete_issue: denied: deleting is not allowed through the gateway
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
