package trace_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/toolid"
	"github.com/toolbridge/toolbridge/trace"
)

// hangGuard is how long a step may take before the test calls it hung.
// It is not a speed bar (benchmarks measure speed): the steps take
// well under a second, and blocked ones hang for the 120 s export timeout
// configured below.
const hangGuard = 60 * time.Second

// fullCall makes the span set of one bridged tool call: in is the
// client's params._meta, out the upstream request's (cleared first).
func fullCall(ctx context.Context, tel *trace.Telemetry, i int, in, out map[string]any) {
	ctx, srv := tel.StartServer(ctx, trace.Request{
		Method: trace.MethodToolsCall, Target: toolid.MetaCall, ID: i, SessionID: "s",
		Transport: config.ServeStdio, Meta: in,
	})
	ctx, tool := tel.StartTool(ctx, trace.ToolCall{Server: "github", Tool: "create_issue", Class: config.ClassDeferrable, Via: trace.ViaToolCall})
	ctx, client := tel.StartClient(ctx, trace.Upstream{Transport: config.TransportStdio})
	clear(out)
	_ = tel.Inject(ctx, out)
	client.End()
	tool.End()
	srv.End()
}

// within runs f and fails the test if it has not returned after d.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %s: an unreachable collector blocked it", what, d)
	}
}

// TestUnreachableCollector points the exporter at a closed port and at a
// collector that accepts and never answers, runs a span-heavy loop that
// overflows the export queue, and checks that the loop does not block,
// that Shutdown returns when its context ends, and that no export
// goroutine outlives it.
func TestUnreachableCollector(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	endpoints := map[string]func(testing.TB) string{"closed": closedEndpoint, "blackhole": blackholeEndpoint}
	for _, name := range []string{"closed", "blackhole"} {
		for _, proto := range []string{trace.ProtocolGRPC, trace.ProtocolHTTPProtobuf} {
			t.Run(name+"/"+proto, func(t *testing.T) {
				env := []string{
					"OTEL_EXPORTER_OTLP_ENDPOINT=" + endpoints[name](t),
					"OTEL_EXPORTER_OTLP_PROTOCOL=" + proto,
					"OTEL_EXPORTER_OTLP_TIMEOUT=120000",
					"OTEL_BSP_EXPORT_TIMEOUT=120000",
					"OTEL_BSP_SCHEDULE_DELAY=5",
					"OTEL_BSP_MAX_QUEUE_SIZE=64",
					"OTEL_METRIC_EXPORT_INTERVAL=20",
				}
				ctx := context.Background()
				tel, err := trace.Setup(ctx, config.Telemetry{Exporter: config.ExporterOTLP}, env, trace.WithLogger(discard()))
				if err != nil {
					t.Fatalf("Setup: %v", err)
				}
				within(t, hangGuard, "a loop of 5000 traced calls", func() {
					in, out := map[string]any{"traceparent": clientParent}, map[string]any{}
					for i := range 5000 {
						fullCall(ctx, tel, i, in, out)
					}
				})
				sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				defer cancel()
				var serr error
				within(t, hangGuard, "Shutdown with a 200ms context", func() { serr = tel.Shutdown(sctx) })
				if serr != nil && !errors.Is(serr, context.DeadlineExceeded) {
					t.Errorf("Shutdown: %v, want nil or a deadline error", serr)
				}
			})
		}
	}
}
