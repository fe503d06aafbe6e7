package trace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	oteltrace "go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/toolbridge/toolbridge/config"
)

// instrumentationName is the scope of every span and metric we make.
const instrumentationName = "github.com/toolbridge/toolbridge/trace"

// durationBuckets are the explicit bucket boundaries the MCP conventions
// give for the operation duration histograms, in seconds.
var durationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// Telemetry holds the tracer and meter of one gateway. It owns the SDK
// providers it created (Setup) and nothing global: the otel global
// providers and propagator are never read or set.
//
// A nil *Telemetry, like one from Disabled, records nothing; every method
// is safe to call on it.
type Telemetry struct {
	enabled       bool
	recordContent bool
	tracer        oteltrace.Tracer
	serverDur     metric.Float64Histogram
	clientDur     metric.Float64Histogram
	logger        *slog.Logger

	// shutdown and flush are the owned providers' methods, in order.
	shutdown []func(context.Context) error
	flush    []func(context.Context) error
	// abort cancels exports still in flight when Shutdown's context ends,
	// so an unreachable collector cannot hold the process past it.
	abort context.CancelFunc
	// once makes Shutdown idempotent; shutdownErr is its first result.
	once        sync.Once
	shutdownErr error
}

// Option tunes Setup and New.
type Option func(*options)

type options struct {
	logger         *slog.Logger
	writer         io.Writer
	recordContent  bool
	serviceVersion string
}

// WithLogger sets where export failures are reported (rate limited).
// Default: slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithWriter sets where the stdout exporter writes. The default is
// os.Stderr, not os.Stdout: in stdio mode stdout carries the MCP stream
// and a span there would corrupt it.
func WithWriter(w io.Writer) Option { return func(o *options) { o.writer = w } }

// WithRecordContent records queries, arguments and results on spans, as
// telemetry.record_content does for Setup. Meant for New.
func WithRecordContent(on bool) Option { return func(o *options) { o.recordContent = on } }

// WithServiceVersion sets the service.version resource attribute.
func WithServiceVersion(v string) Option { return func(o *options) { o.serviceVersion = v } }

func buildOptions(opts []Option) options {
	o := options{writer: os.Stderr}
	for _, f := range opts {
		f(&o)
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	return o
}

// Setup builds the Telemetry that cfg asks for. Exporter "" or none (and
// OTEL_SDK_DISABLED=true) give a disabled Telemetry that costs next to
// nothing. otlp and stdout export spans in batches and metrics
// periodically; the OTEL_* variables are read from environ, never from
// the process environment (see doc.go for the list).
//
// Setup never dials: an unreachable collector shows up later as a logged
// export error, never as a failed or slowed call. Call Shutdown to flush.
func Setup(ctx context.Context, cfg config.Telemetry, environ []string, opts ...Option) (*Telemetry, error) {
	o := buildOptions(opts)
	switch cfg.Exporter {
	case "", config.ExporterNone:
		return Disabled(), nil
	case config.ExporterOTLP, config.ExporterStdout:
	default:
		return nil, fmt.Errorf("telemetry.exporter %q: want %s, %s or %s",
			cfg.Exporter, config.ExporterNone, config.ExporterOTLP, config.ExporterStdout)
	}
	st, err := parseSettings(environ)
	if err != nil {
		return nil, fmt.Errorf("reading OpenTelemetry environment: %w", err)
	}
	if st.sdkDisabled {
		o.logger.Info("telemetry disabled by OTEL_SDK_DISABLED", "exporter", cfg.Exporter)
		return Disabled(), nil
	}
	o.recordContent = cfg.RecordContent
	return newSDK(ctx, cfg.Exporter, st, o)
}

// Disabled returns a Telemetry that records nothing. It still carries a
// client's trace context through to upstreams (Extract and Inject work),
// so the gateway never breaks a trace it does not record.
func Disabled() *Telemetry {
	return &Telemetry{
		tracer: tracenoop.NewTracerProvider().Tracer(instrumentationName),
		logger: slog.New(slog.DiscardHandler),
	}
}

// New wraps providers the caller owns, for tests and for programs that
// configure the SDK themselves. mp may be nil (no metrics). Shutdown does
// not shut tp or mp down: their owner does.
func New(tp oteltrace.TracerProvider, mp metric.MeterProvider, opts ...Option) *Telemetry {
	o := buildOptions(opts)
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	t, err := newTelemetry(tp, mp, o)
	if err != nil {
		// Only a bad instrument definition fails, which is a bug here.
		panic(fmt.Sprintf("trace.New: %v", err))
	}
	return t
}

// newTelemetry creates the instruments on tp and mp.
func newTelemetry(tp oteltrace.TracerProvider, mp metric.MeterProvider, o options) (*Telemetry, error) {
	meter := mp.Meter(instrumentationName)
	server, err := meter.Float64Histogram("mcp.server.operation.duration",
		metric.WithUnit("s"),
		metric.WithDescription("MCP request duration as observed by the gateway, from receipt until the result is sent."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err != nil {
		return nil, fmt.Errorf("creating mcp.server.operation.duration: %w", err)
	}
	client, err := meter.Float64Histogram("mcp.client.operation.duration",
		metric.WithUnit("s"),
		metric.WithDescription("Duration of an MCP request the gateway sent upstream, until the response arrived."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err != nil {
		return nil, fmt.Errorf("creating mcp.client.operation.duration: %w", err)
	}
	return &Telemetry{
		enabled:       true,
		recordContent: o.recordContent,
		tracer:        tp.Tracer(instrumentationName),
		serverDur:     server,
		clientDur:     client,
		logger:        o.logger,
	}, nil
}

// Enabled reports whether spans and metrics are recorded.
func (t *Telemetry) Enabled() bool { return t != nil && t.enabled }

// RecordContent reports whether queries, arguments and results go on
// spans.
func (t *Telemetry) RecordContent() bool { return t.Enabled() && t.recordContent }

// Tracer is the tracer spans are made with, for callers that want extra
// spans of their own in the same scope.
func (t *Telemetry) Tracer() oteltrace.Tracer {
	if t == nil || t.tracer == nil {
		return tracenoop.NewTracerProvider().Tracer(instrumentationName)
	}
	return t.tracer
}

// Inject writes ctx's trace context into meta, the params._meta of a
// request going upstream; see the package function Inject.
func (t *Telemetry) Inject(ctx context.Context, meta map[string]any) map[string]any {
	return Inject(ctx, meta)
}

// ForceFlush exports every span and metric recorded so far. Tests use it
// before reading a collector; the gateway does not need it.
func (t *Telemetry) ForceFlush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	for _, f := range t.flush {
		errs = append(errs, f(ctx))
	}
	return errors.Join(errs...)
}

// Shutdown flushes what is buffered and stops the exporters. It returns
// when done or when ctx ends, whichever is first; exports still running
// then are cancelled, so a dead collector cannot hold the process.
// Calling it more than once is harmless.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil || len(t.shutdown) == 0 {
		return nil
	}
	t.once.Do(func() {
		stop := context.AfterFunc(ctx, t.abort)
		defer stop()
		var errs []error
		for _, f := range t.shutdown {
			errs = append(errs, f(ctx))
		}
		t.abort()
		if err := errors.Join(errs...); err != nil {
			t.shutdownErr = fmt.Errorf("shutting down telemetry: %w", err)
		}
	})
	return t.shutdownErr
}
