package trace

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/toolbridge/toolbridge/config"
)

// newSDK builds the SDK providers for exporter with the parsed settings.
func newSDK(ctx context.Context, exporter string, st settings, o options) (*Telemetry, error) {
	res, err := buildResource(ctx, st, o)
	if err != nil {
		return nil, err
	}
	abortCtx, abort := context.WithCancel(context.Background())
	report := newErrorReporter(o.logger)

	var (
		tp        oteltrace.TracerProvider = tracenoop.NewTracerProvider()
		mp        metric.MeterProvider     = metricnoop.NewMeterProvider()
		shutdowns []func(context.Context) error
		flushes   []func(context.Context) error
	)
	fail := func(err error) (*Telemetry, error) {
		for _, f := range shutdowns {
			_ = f(abortCtx)
		}
		abort()
		return nil, err
	}

	if !st.traces.disabled {
		se, err := spanExporter(ctx, exporter, st.traces, o)
		if err != nil {
			return fail(fmt.Errorf("creating the %s span exporter: %w", exporter, err))
		}
		stp := sdktrace.NewTracerProvider(
			sdktrace.WithBatcher(&guardedSpanExporter{next: se, abort: abortCtx, report: report},
				sdktrace.WithBatchTimeout(st.batchDelay),
				sdktrace.WithExportTimeout(st.exportTimeout),
				sdktrace.WithMaxQueueSize(st.queueSize),
				sdktrace.WithMaxExportBatchSize(min(st.batchSize, st.queueSize)),
			),
			sdktrace.WithResource(res),
			sdktrace.WithSampler(st.sampler),
			// Explicit limits: NewSpanLimits would read OTEL_SPAN_* from
			// the process environment.
			sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{
				AttributeValueLengthLimit:   -1,
				AttributeCountLimit:         sdktrace.DefaultAttributeCountLimit,
				EventCountLimit:             sdktrace.DefaultEventCountLimit,
				LinkCountLimit:              sdktrace.DefaultLinkCountLimit,
				AttributePerEventCountLimit: sdktrace.DefaultAttributePerEventCountLimit,
				AttributePerLinkCountLimit:  sdktrace.DefaultAttributePerLinkCountLimit,
			}),
		)
		tp = stp
		shutdowns = append(shutdowns, stp.Shutdown)
		flushes = append(flushes, stp.ForceFlush)
	}
	if !st.metrics.disabled {
		me, err := metricExporter(ctx, exporter, st.metrics, o)
		if err != nil {
			return fail(fmt.Errorf("creating the %s metric exporter: %w", exporter, err))
		}
		smp := sdkmetric.NewMeterProvider(
			sdkmetric.WithReader(sdkmetric.NewPeriodicReader(
				&guardedMetricExporter{Exporter: me, abort: abortCtx, report: report},
				sdkmetric.WithInterval(st.metricEvery),
				sdkmetric.WithTimeout(st.metricTimeout),
			)),
			sdkmetric.WithResource(res),
		)
		mp = smp
		shutdowns = append(shutdowns, smp.Shutdown)
		flushes = append(flushes, smp.ForceFlush)
	}

	t, err := newTelemetry(tp, mp, o)
	if err != nil {
		return fail(err)
	}
	t.shutdown, t.flush, t.abort = shutdowns, flushes, abort
	return t, nil
}

// buildResource describes this process: service.name (OTEL_SERVICE_NAME,
// default toolbridge), OTEL_RESOURCE_ATTRIBUTES from environ and the SDK's
// own telemetry.sdk.* attributes.
func buildResource(ctx context.Context, st settings, o options) (*resource.Resource, error) {
	attrs := append([]attribute.KeyValue{}, st.resource...)
	attrs = append(attrs, attribute.String("service.name", st.serviceName))
	if o.serviceVersion != "" {
		attrs = append(attrs, attribute.String("service.version", o.serviceVersion))
	}
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(attrs...))
	if err != nil {
		return nil, fmt.Errorf("building the telemetry resource: %w", err)
	}
	return res, nil
}

// spanExporter creates the span exporter. Every OTLP setting is passed
// explicitly so the exporter's own reading of the process environment is
// overridden by what environ said.
func spanExporter(ctx context.Context, exporter string, sig signal, o options) (sdktrace.SpanExporter, error) {
	if exporter == config.ExporterStdout {
		return stdouttrace.New(stdouttrace.WithWriter(o.writer))
	}
	if sig.protocol == ProtocolGRPC {
		opts := []otlptracegrpc.Option{
			otlptracegrpc.WithEndpointURL(sig.endpoint),
			otlptracegrpc.WithHeaders(sig.headers),
			otlptracegrpc.WithTimeout(sig.timeout),
			otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{
				Enabled: true, InitialInterval: time.Second, MaxInterval: 5 * time.Second, MaxElapsedTime: sig.timeout,
			}),
		}
		if sig.compression == "gzip" {
			opts = append(opts, otlptracegrpc.WithCompressor("gzip"))
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	comp := otlptracehttp.NoCompression
	if sig.compression == "gzip" {
		comp = otlptracehttp.GzipCompression
	}
	return otlptracehttp.New(ctx,
		otlptracehttp.WithEndpointURL(sig.endpoint),
		otlptracehttp.WithHeaders(sig.headers),
		otlptracehttp.WithTimeout(sig.timeout),
		otlptracehttp.WithCompression(comp),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{
			Enabled: true, InitialInterval: time.Second, MaxInterval: 5 * time.Second, MaxElapsedTime: sig.timeout,
		}),
	)
}

// metricExporter creates the metric exporter, like spanExporter.
func metricExporter(ctx context.Context, exporter string, sig signal, o options) (sdkmetric.Exporter, error) {
	if exporter == config.ExporterStdout {
		return stdoutmetric.New(stdoutmetric.WithWriter(o.writer))
	}
	if sig.protocol == ProtocolGRPC {
		opts := []otlpmetricgrpc.Option{
			otlpmetricgrpc.WithEndpointURL(sig.endpoint),
			otlpmetricgrpc.WithHeaders(sig.headers),
			otlpmetricgrpc.WithTimeout(sig.timeout),
			otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{
				Enabled: true, InitialInterval: time.Second, MaxInterval: 5 * time.Second, MaxElapsedTime: sig.timeout,
			}),
		}
		if sig.compression == "gzip" {
			opts = append(opts, otlpmetricgrpc.WithCompressor("gzip"))
		}
		return otlpmetricgrpc.New(ctx, opts...)
	}
	comp := otlpmetrichttp.NoCompression
	if sig.compression == "gzip" {
		comp = otlpmetrichttp.GzipCompression
	}
	return otlpmetrichttp.New(ctx,
		otlpmetrichttp.WithEndpointURL(sig.endpoint),
		otlpmetrichttp.WithHeaders(sig.headers),
		otlpmetrichttp.WithTimeout(sig.timeout),
		otlpmetrichttp.WithCompression(comp),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{
			Enabled: true, InitialInterval: time.Second, MaxInterval: 5 * time.Second, MaxElapsedTime: sig.timeout,
		}),
	)
}
