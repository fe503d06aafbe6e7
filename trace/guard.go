package trace

import (
	"context"
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
	stop := context.AfterFunc(abort, cancel)
	return ctx, func() { stop(); cancel() }
}

// guardedSpanExporter cancels exports when the Telemetry is shut down past
// its deadline and reports failures instead of returning them.
type guardedSpanExporter struct {
	next   sdktrace.SpanExporter
	abort  context.Context
	report *errorReporter
}

// ExportSpans exports through the wrapped exporter.
func (g *guardedSpanExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	ctx, done := abortable(ctx, g.abort)
	defer done()
	if err := g.next.ExportSpans(ctx, spans); err != nil {
		g.report.report("traces", err)
	}
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
