package trace

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// flakyExporter fails while err is set and counts its calls.
type flakyExporter struct {
	err   error
	calls int
	// seen is each call's context error at the time of the call.
	seen []error
}

func (f *flakyExporter) ExportSpans(ctx context.Context, _ []sdktrace.ReadOnlySpan) error {
	f.calls++
	f.seen = append(f.seen, ctx.Err())
	return f.err
}

func (f *flakyExporter) Shutdown(context.Context) error { return nil }

func TestBreaker(t *testing.T) {
	var logs bytes.Buffer // ExportSpans reports on the calling goroutine
	log := slog.New(slog.NewTextHandler(&logs, nil))
	next := &flakyExporter{err: errors.New("connection refused")}
	g := &guardedSpanExporter{next: next, abort: context.Background(), report: newErrorReporter(log)}
	batch := make([]sdktrace.ReadOnlySpan, 10)
	ctx := context.Background()

	for range 5 {
		if err := g.ExportSpans(ctx, batch); err != nil {
			t.Fatalf("ExportSpans returned %v; failures are reported, not returned", err)
		}
	}
	if next.calls != 1 {
		t.Fatalf("exporter called %d times while the breaker was open, want 1", next.calls)
	}
	if g.backoff != breakerMin || g.dropped != 40 {
		t.Errorf("backoff %v dropped %d, want %v and 40", g.backoff, g.dropped, breakerMin)
	}
	// Once the pause is over it tries again; a new failure doubles it.
	g.until = time.Now().Add(-time.Millisecond)
	g.ExportSpans(ctx, batch)
	if next.calls != 2 || g.backoff != 2*breakerMin {
		t.Errorf("calls %d backoff %v, want 2 and %v", next.calls, g.backoff, 2*breakerMin)
	}
	for range 10 {
		g.until = time.Time{}
		g.ExportSpans(ctx, batch)
	}
	if g.backoff != breakerMax {
		t.Errorf("backoff = %v, want it capped at %v", g.backoff, breakerMax)
	}
	// Success closes the breaker.
	next.err = nil
	g.until = time.Time{}
	g.ExportSpans(ctx, batch)
	g.ExportSpans(ctx, batch)
	if g.backoff != 0 || next.calls != 14 {
		t.Errorf("after success: backoff %v calls %d, want 0 and 14", g.backoff, next.calls)
	}
	// Rate limited: many failures, one line.
	if n := strings.Count(logs.String(), "telemetry export failed"); n != 1 {
		t.Errorf("%d log lines for 12 failures, want 1:\n%s", n, logs.String())
	}
}

func TestAbortCancelsExport(t *testing.T) {
	abort, cancel := context.WithCancel(context.Background())
	next := &flakyExporter{}
	g := &guardedSpanExporter{next: next, abort: abort, report: newErrorReporter(discardLogger())}
	g.ExportSpans(context.Background(), nil)
	cancel()
	g.ExportSpans(context.Background(), nil)
	if next.seen[0] != nil || !errors.Is(next.seen[1], context.Canceled) {
		t.Errorf("export contexts at call time: %v, want live then cancelled by abort", next.seen)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
