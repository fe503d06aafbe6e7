package trace_test

import (
	"context"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	sdktracetest "go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/trace"
)

// BenchmarkToolCallSpans measures what tracing adds to one bridged tool
// call: the server, tool and client spans, trace context extracted from
// _meta and injected upstream, and both duration histograms.
//
//	go test -run '^$' -bench ToolCallSpans -benchmem ./trace/
//
// none is the default (telemetry.exporter: none); the sdk cases record
// everything into memory, through the batch processor the real exporters
// use or synchronously; otlp-unreachable exports to a closed port, the
// cost a call pays while the collector is down.
func BenchmarkToolCallSpans(b *testing.B) {
	ctx := context.Background()
	b.Run("none", func(b *testing.B) {
		benchCalls(b, trace.Disabled(), nil)
	})
	b.Run("none-no-client-trace", func(b *testing.B) {
		benchCallsMeta(b, trace.Disabled(), nil, map[string]any{"progressToken": 1})
	})
	b.Run("sdk-batch-inmemory", func(b *testing.B) {
		exp := sdktracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		defer tp.Shutdown(ctx)
		defer mp.Shutdown(ctx)
		benchCalls(b, trace.New(tp, mp), exp.Reset)
	})
	b.Run("sdk-sync-inmemory", func(b *testing.B) {
		exp := sdktracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		defer tp.Shutdown(ctx)
		defer mp.Shutdown(ctx)
		benchCalls(b, trace.New(tp, mp), exp.Reset)
	})
	for _, proto := range []string{trace.ProtocolGRPC, trace.ProtocolHTTPProtobuf} {
		b.Run("otlp-unreachable-"+strings.ReplaceAll(proto, "/", "-"), func(b *testing.B) {
			env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + closedEndpoint(b), "OTEL_EXPORTER_OTLP_PROTOCOL=" + proto}
			tel, err := trace.Setup(ctx, config.Telemetry{Exporter: config.ExporterOTLP}, env, trace.WithLogger(discard()))
			if err != nil {
				b.Fatal(err)
			}
			benchCalls(b, tel, nil)
			sctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			_ = tel.Shutdown(sctx)
		})
	}
}

// benchCalls times fullCall with a client that sends a traceparent;
// reset, if set, empties the in-memory exporter now and then so memory
// stays flat.
func benchCalls(b *testing.B, tel *trace.Telemetry, reset func()) {
	benchCallsMeta(b, tel, reset, map[string]any{"traceparent": clientParent})
}

// benchCallsMeta is benchCalls with the client's params._meta given.
func benchCallsMeta(b *testing.B, tel *trace.Telemetry, reset func(), in map[string]any) {
	ctx := context.Background()
	out := map[string]any{}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		fullCall(ctx, tel, i, in, out)
		i++
		if reset != nil && i%4096 == 0 {
			reset()
		}
	}
}

// BenchmarkPropagation measures Extract and Inject alone, with and
// without a traceparent in _meta.
func BenchmarkPropagation(b *testing.B) {
	ctx := context.Background()
	b.Run("extract-empty", func(b *testing.B) {
		meta := map[string]any{"progressToken": 1}
		b.ReportAllocs()
		for b.Loop() {
			_ = trace.Extract(ctx, meta, nil)
		}
	})
	b.Run("extract-inject", func(b *testing.B) {
		meta, out := map[string]any{"traceparent": clientParent}, map[string]any{}
		b.ReportAllocs()
		for b.Loop() {
			c := trace.Extract(ctx, meta, nil)
			clear(out)
			_ = trace.Inject(c, out)
		}
	})
}
