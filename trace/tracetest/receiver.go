// Package tracetest is an in-process OTLP receiver for tests: it listens
// on 127.0.0.1 for OTLP/gRPC and OTLP/HTTP (protobuf or JSON), keeps
// every span and metric it is sent, and lets a test wait for them and
// assert names, kinds, parent links and attributes. It is what a real
// collector (Jaeger, the OpenTelemetry Collector) sees, without one.
//
//	r := tracetest.Start(t)
//	tel, _ := trace.Setup(ctx, config.Telemetry{Exporter: "otlp"}, r.Environ(trace.ProtocolGRPC))
//	... make calls, then tel.Shutdown(ctx) (or ForceFlush) ...
//	spans := r.WaitForSpans(ctx, 3)
//	srv, _ := tracetest.Find(spans, "tools/call tool_call")
package tracetest

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// defaultWait bounds WaitForSpans and WaitForMetric when ctx has no
// deadline, so a broken test fails instead of hanging.
const defaultWait = 30 * time.Second

// Receiver collects what OTLP exporters send it. Its methods are safe for
// concurrent use.
type Receiver struct {
	t        testing.TB
	grpcAddr string
	httpAddr string

	mu      sync.Mutex
	spans   []Span
	metrics []Metric
	exports int
	changed chan struct{} // closed and replaced on every export
}

// Start listens on two 127.0.0.1 ports, gRPC and HTTP, and stops both when
// the test ends.
func Start(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{t: t, changed: make(chan struct{})}

	glis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("tracetest: listening for OTLP/gRPC: %v", err)
	}
	hlis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		glis.Close()
		t.Fatalf("tracetest: listening for OTLP/HTTP: %v", err)
	}
	r.grpcAddr, r.httpAddr = glis.Addr().String(), hlis.Addr().String()

	gs := grpc.NewServer()
	colltrace.RegisterTraceServiceServer(gs, traceService{r: r})
	collmetrics.RegisterMetricsServiceServer(gs, metricsService{r: r})
	hs := &http.Server{Handler: r.httpHandler(), ReadHeaderTimeout: 5 * time.Second}

	var wg sync.WaitGroup
	wg.Go(func() { _ = gs.Serve(glis) })
	wg.Go(func() {
		if err := hs.Serve(hlis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("tracetest: serving OTLP/HTTP: %v", err)
		}
	})
	t.Cleanup(func() {
		stopped := make(chan struct{})
		go func() { gs.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(2 * time.Second):
			gs.Stop() // an exporter that never hangs up must not stall the test
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := hs.Shutdown(ctx); err != nil {
			_ = hs.Close()
		}
		wg.Wait()
	})
	return r
}

// Endpoint is the OTLP/gRPC endpoint, "http://127.0.0.1:port", the form
// OTEL_EXPORTER_OTLP_ENDPOINT takes.
func (r *Receiver) Endpoint() string { return "http://" + r.grpcAddr }

// HTTPEndpoint is the OTLP/HTTP base URL, "http://127.0.0.1:port";
// exporters append /v1/traces and /v1/metrics.
func (r *Receiver) HTTPEndpoint() string { return "http://" + r.httpAddr }

// Environ is an environment that points an OTLP exporter here with
// protocol "grpc" or "http/protobuf", exporting quickly (100 ms batches
// and metric intervals) so tests do not wait on the 5 s and 60 s
// defaults.
func (r *Receiver) Environ(protocol string) []string {
	endpoint := r.Endpoint()
	if protocol != "grpc" {
		endpoint = r.HTTPEndpoint()
	}
	return []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + endpoint,
		"OTEL_EXPORTER_OTLP_PROTOCOL=" + protocol,
		"OTEL_BSP_SCHEDULE_DELAY=100",
		"OTEL_METRIC_EXPORT_INTERVAL=100",
	}
}

// Spans returns a copy of every span received so far, in arrival order.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans)
}

// Metrics returns a copy of every metric received so far, in arrival
// order; a metric exported periodically appears once per export.
func (r *Receiver) Metrics() []Metric {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.metrics)
}

// Exports counts the export requests received (gRPC and HTTP, both
// signals).
func (r *Receiver) Exports() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.exports
}

// Reset forgets everything received.
func (r *Receiver) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spans, r.metrics, r.exports = nil, nil, 0
}

// WaitForSpans waits until at least n spans have arrived and returns them
// all. If ctx ends first (or, without a deadline, after 30 s) it fails
// the test, listing what did arrive. Call it from the test's goroutine.
func (r *Receiver) WaitForSpans(ctx context.Context, n int) []Span {
	r.t.Helper()
	var got []Span
	ok := r.wait(ctx, func() bool {
		got = slices.Clone(r.spans)
		return len(got) >= n
	})
	if !ok {
		r.t.Fatalf("tracetest: waited for %d spans, got %d: %v", n, len(got), got)
	}
	return got
}

// WaitForMetric waits until a metric named name has arrived with at least
// one data point and returns its latest export. It fails the test like
// WaitForSpans.
func (r *Receiver) WaitForMetric(ctx context.Context, name string) Metric {
	r.t.Helper()
	var got Metric
	ok := r.wait(ctx, func() bool {
		for i := len(r.metrics) - 1; i >= 0; i-- {
			if m := r.metrics[i]; m.Name == name && len(m.Points) > 0 {
				got = m
				return true
			}
		}
		return false
	})
	if !ok {
		r.t.Fatalf("tracetest: waited for metric %q; it did not arrive", name)
	}
	return got
}

// wait calls done (under the lock) after every export until it reports
// true or ctx ends.
func (r *Receiver) wait(ctx context.Context, done func() bool) bool {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultWait)
		defer cancel()
	}
	for {
		r.mu.Lock()
		ok, changed := done(), r.changed
		r.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			r.mu.Lock()
			ok = done()
			r.mu.Unlock()
			return ok
		}
	}
}

// add stores what one export request carried and wakes waiters.
func (r *Receiver) add(spans []Span, metrics []Metric) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spans = append(r.spans, spans...)
	r.metrics = append(r.metrics, metrics...)
	r.exports++
	close(r.changed)
	r.changed = make(chan struct{})
}

// traceService is the OTLP/gRPC trace collector service.
type traceService struct {
	colltrace.UnimplementedTraceServiceServer
	r *Receiver
}

// Export receives spans.
func (s traceService) Export(_ context.Context, req *colltrace.ExportTraceServiceRequest) (*colltrace.ExportTraceServiceResponse, error) {
	s.r.add(spansFrom(req), nil)
	return &colltrace.ExportTraceServiceResponse{}, nil
}

// metricsService is the OTLP/gRPC metrics collector service.
type metricsService struct {
	collmetrics.UnimplementedMetricsServiceServer
	r *Receiver
}

// Export receives metrics.
func (s metricsService) Export(_ context.Context, req *collmetrics.ExportMetricsServiceRequest) (*collmetrics.ExportMetricsServiceResponse, error) {
	s.r.add(nil, metricsFrom(req))
	return &collmetrics.ExportMetricsServiceResponse{}, nil
}
