package trace

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// reportEvery bounds how often a failing exporter is logged: a collector
// that is down fails every batch, and one line per batch would drown the
// gateway's log.
const reportEvery = time.Minute

// errorReporter logs export failures through the gateway's logger, rate
// limited. Exporters wrapped with it return nil to the SDK so the otel
// global error handler (which would print to the standard logger) is never
// involved.
type errorReporter struct {
	logger *slog.Logger
	mu     sync.Mutex
	last   time.Time
	missed int
}

func newErrorReporter(l *slog.Logger) *errorReporter { return &errorReporter{logger: l} }

// report logs err unless one was logged within reportEvery; the next line
// says how many were not.
func (r *errorReporter) report(signal string, err error) {
	r.mu.Lock()
	now := time.Now()
	if !r.last.IsZero() && now.Sub(r.last) < reportEvery {
		r.missed++
		r.mu.Unlock()
		return
	}
	missed := r.missed
	r.last, r.missed = now, 0
	r.mu.Unlock()
	r.logger.Warn("telemetry export failed; data is dropped, tool calls are not affected",
		"signal", signal, "err", err, "failures_not_logged", missed)
}

// abortable derives a context from ctx that also ends when abort does.
func abortable(ctx, abort context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if abort.Err() != nil {
		// AfterFunc would cancel too, but from another goroutine, later.
		cancel()
	}
	stop := context.AfterFunc(abort, cancel)
	return ctx, func() { stop(); cancel() }
}

// Backoff of the span export circuit breaker.
const (
	breakerMin = time.Second
	breakerMax = 30 * time.Second
)

// guardedSpanExporter cancels exports when the Telemetry is shut down past
// its deadline and reports failures instead of returning them.
//
// It is also a circuit breaker: after a failed export it drops batches
// without trying (1 s, doubling to 30 s while failures go on). Without it
// an exporter that fails fast (OTLP/HTTP to a closed port is not retried)
// would convert and send every batch the moment it fills, burning the CPU
// the tool calls need on a collector that is not there.
type guardedSpanExporter struct {
	next   sdktrace.SpanExporter
	abort  context.Context
	report *errorReporter

	mu      sync.Mutex
	until   time.Time     // drop batches until then
	backoff time.Duration // the last pause; 0 when healthy
	dropped int           // spans dropped by the open breaker
}

// ExportSpans exports through the wrapped exporter unless the breaker is
// open.
func (g *guardedSpanExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	g.mu.Lock()
	if time.Now().Before(g.until) {
		g.dropped += len(spans)
		g.mu.Unlock()
		return nil
	}
	g.mu.Unlock()

	ctx, done := abortable(ctx, g.abort)
	defer done()
	err := g.next.ExportSpans(ctx, spans)

	g.mu.Lock()
	defer g.mu.Unlock()
	if err == nil {
		g.backoff, g.until = 0, time.Time{}
		return nil
	}
	g.backoff = min(max(2*g.backoff, breakerMin), breakerMax)
	g.until = time.Now().Add(g.backoff)
	dropped := g.dropped
	g.dropped = 0
	g.report.report("traces", fmt.Errorf("%w (%d spans dropped unsent since the last failure; next try in %s)", err, dropped, g.backoff))
	return nil
}

// Shutdown shuts the wrapped exporter down.
func (g *guardedSpanExporter) Shutdown(ctx context.Context) error {
	ctx, done := abortable(ctx, g.abort)
	defer done()
	return g.next.Shutdown(ctx)
}

// guardedMetricExporter is guardedSpanExporter for metrics.
type guardedMetricExporter struct {
	sdkmetric.Exporter
	abort  context.Context
	report *errorReporter
}

// Export exports through the wrapped exporter.
func (g *guardedMetricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	ctx, done := abortable(ctx, g.abort)
	defer done()
	if err := g.Exporter.Export(ctx, rm); err != nil {
		g.report.report("metrics", err)
	}
	return nil
}

// ForceFlush flushes the wrapped exporter.
func (g *guardedMetricExporter) ForceFlush(ctx context.Context) error {
	ctx, done := abortable(ctx, g.abort)
	defer done()
	return g.Exporter.ForceFlush(ctx)
}

// Shutdown shuts the wrapped exporter down.
func (g *guardedMetricExporter) Shutdown(ctx context.Context) error {
	ctx, done := abortable(ctx, g.abort)
	defer done()
	return g.Exporter.Shutdown(ctx)
}
