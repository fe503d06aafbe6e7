package trace_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/trace"
	"github.com/toolbridge/toolbridge/trace/tracetest"
)

// newTestMetrics builds metrics with fixed observed values and serves
// them on 127.0.0.1.
func newTestMetrics(t *testing.T, sessions *atomic.Int64, ups func() []trace.UpstreamStatus) (*trace.Metrics, string) {
	t.Helper()
	m, err := trace.NewMetrics(trace.MetricsOptions{
		Replica: "gw-1", Version: "v9.9.9",
		Methods:   []string{"tools/list", "tools/call"},
		Sessions:  func() int { return int(sessions.Load()) },
		Upstreams: ups,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown(context.Background()) })
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	return m, srv.URL + "/metrics"
}

func scrape(t *testing.T, url string) *tracetest.Scrape {
	t.Helper()
	s, err := tracetest.ScrapeURL(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func want(t *testing.T, s *tracetest.Scrape, v float64, name string, labels ...string) {
	t.Helper()
	got, ok := s.Value(name, labels...)
	if !ok {
		t.Errorf("%s%q: absent; families: %v", name, labels, s.Names("toolbridge_"))
		return
	}
	if got != v {
		t.Errorf("%s%q = %v, want %v", name, labels, got, v)
	}
}

func TestMetricsScrape(t *testing.T) {
	var sessions atomic.Int64
	sessions.Store(3)
	ups := func() []trace.UpstreamStatus {
		return []trace.UpstreamStatus{
			{Server: "notes", State: trace.UpstreamUp, Tools: 4, Held: 1},
			{Server: "gh", State: trace.UpstreamNeedsLogin},
		}
	}
	m, url := newTestMetrics(t, &sessions, ups)

	s := scrape(t, url)
	if _, ok := s.Value("toolbridge_tool_calls_total"); ok {
		t.Error("toolbridge_tool_calls_total present before any call")
	}
	if _, ok := s.Value("toolbridge_redis_up"); ok {
		t.Error("toolbridge_redis_up present with no Redis configured")
	}
	want(t, s, 1, "toolbridge_replica_info", "replica", "gw-1", "version", "v9.9.9")
	want(t, s, 3, "toolbridge_sessions")
	want(t, s, 1, "toolbridge_upstream_up", "server", "notes")
	want(t, s, 0, "toolbridge_upstream_up", "server", "gh")
	want(t, s, 1, "toolbridge_upstream_state", "server", "gh", "state", "needs_login")
	want(t, s, 0, "toolbridge_upstream_state", "server", "gh", "state", "up")
	want(t, s, 1, "toolbridge_upstream_state", "server", "notes", "state", "up")
	want(t, s, 4, "toolbridge_upstream_tools", "server", "notes")
	want(t, s, 1, "toolbridge_upstream_tools_held", "server", "notes")
	if s.Families["go_goroutines"] == nil || s.Families["process_start_time_seconds"] == nil {
		t.Error("the Go and process collectors are missing")
	}

	m.RecordCall("notes", "add_note", 3*time.Millisecond, false)
	m.RecordCall("notes", "add_note", 2*time.Second, false)
	m.RecordCall("notes", "add_note", time.Millisecond, true)
	m.RecordCall("gh", "create_issue", time.Millisecond, true)
	m.RecordSearch(false)
	m.RecordSearch(true)
	m.RecordSearch(false)
	m.RecordRequest("tools/call")
	m.RecordRequest("tools/call")
	m.RecordRequest("tools/list")
	m.RecordRequest("x/made-up-by-a-client")
	m.RecordRequest("x/another-one")
	sessions.Store(1)
	var redisErr atomic.Pointer[error]
	m.ObserveRedis(func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			return errors.New("no deadline on the probe")
		}
		if e := redisErr.Load(); e != nil {
			return *e
		}
		return nil
	})

	s = scrape(t, url)
	want(t, s, 3, "toolbridge_tool_calls_total", "server", "notes", "tool", "add_note")
	want(t, s, 1, "toolbridge_tool_call_errors_total", "server", "notes", "tool", "add_note")
	want(t, s, 1, "toolbridge_tool_calls_total", "server", "gh", "tool", "create_issue")
	want(t, s, 1, "toolbridge_tool_call_errors_total", "server", "gh", "tool", "create_issue")
	want(t, s, 3, "toolbridge_tool_call_duration_seconds", "server", "notes", "tool", "add_note")
	h := s.Metric("toolbridge_tool_call_duration_seconds", "server", "notes", "tool", "add_note").GetHistogram()
	if sum := h.GetSampleSum(); sum < 2.004 || sum > 2.0041 {
		t.Errorf("duration sum = %v, want 2.004", sum)
	}
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() == 0.001 && b.GetCumulativeCount() != 1 {
			t.Errorf("le=0.001 bucket = %d, want 1 (the 1 ms call)", b.GetCumulativeCount())
		}
	}
	want(t, s, 3, "toolbridge_searches_total")
	want(t, s, 1, "toolbridge_searches_no_hit_total")
	want(t, s, 1, "toolbridge_sessions")
	want(t, s, 1, "toolbridge_redis_up")
	want(t, s, 2, "toolbridge_requests_total", "method", "tools/call")
	want(t, s, 1, "toolbridge_requests_total", "method", "tools/list")
	want(t, s, 2, "toolbridge_requests_total", "method", "other")
	if strings.Contains(s.Body, "made-up") {
		t.Error("a method no MCP server knows became a label")
	}

	down := errors.New("connection refused")
	redisErr.Store(&down)
	s = scrape(t, url)
	want(t, s, 0, "toolbridge_redis_up")
	m.ObserveRedis(nil)
	s = scrape(t, url)
	if _, ok := s.Value("toolbridge_redis_up"); ok {
		t.Error("toolbridge_redis_up still present after the check was removed")
	}

	// Labels are the documented ones: no otel_scope_* on every series.
	for name, wantLabels := range map[string][]string{
		"toolbridge_tool_calls_total":           {"server", "tool"},
		"toolbridge_tool_call_duration_seconds": {"server", "tool"},
		"toolbridge_searches_total":             {},
		"toolbridge_upstream_state":             {"server", "state"},
		"toolbridge_replica_info":               {"replica", "version"},
	} {
		if got := s.LabelNames(name); !slices.Equal(got, wantLabels) {
			t.Errorf("%s labels = %q, want %q", name, got, wantLabels)
		}
	}
	if strings.Contains(s.Body, "otel_scope") {
		t.Error("scrape carries otel_scope labels")
	}
}

// TestMetricsServerLeftOut: a server that is gone from the pool (a
// reload removed it) is gone from the next scrape's upstream gauges.
func TestMetricsServerLeftOut(t *testing.T) {
	var sessions atomic.Int64
	var gone atomic.Bool
	_, url := newTestMetrics(t, &sessions, func() []trace.UpstreamStatus {
		out := []trace.UpstreamStatus{{Server: "a", State: trace.UpstreamUp}}
		if !gone.Load() {
			out = append(out, trace.UpstreamStatus{Server: "b", State: trace.UpstreamDown})
		}
		return out
	})
	want(t, scrape(t, url), 0, "toolbridge_upstream_up", "server", "b")
	gone.Store(true)
	if _, ok := scrape(t, url).Value("toolbridge_upstream_up", "server", "b"); ok {
		t.Error("a removed server is still reported")
	}
}

// TestRecordCallAllocatesNothing: once a tool was seen, recording its
// calls allocates nothing, so metrics cost no garbage per call.
func TestRecordCallAllocatesNothing(t *testing.T) {
	var sessions atomic.Int64
	m, _ := newTestMetrics(t, &sessions, nil)
	m.RecordCall("notes", "add_note", time.Millisecond, false)
	if n := testing.AllocsPerRun(100, func() { m.RecordCall("notes", "add_note", time.Millisecond, true) }); n != 0 {
		t.Errorf("RecordCall allocates %v times per call, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { m.RecordRequest("tools/call"); m.RecordRequest("nope") }); n != 0 {
		t.Errorf("RecordRequest allocates %v times per call, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { m.RecordSearch(true) }); n != 0 {
		t.Errorf("RecordSearch allocates %v times per call, want 0", n)
	}
}

func TestNilMetrics(t *testing.T) {
	var m *trace.Metrics
	m.RecordCall("a", "b", time.Second, true)
	m.RecordSearch(true)
	m.RecordRequest("tools/call")
	m.ObserveRedis(func(context.Context) error { return nil })
	if err := m.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 404 {
		t.Errorf("nil metrics handler: %d, want 404", rec.Code)
	}
}

// BenchmarkRecordCall is the per-call cost of the operator metrics: one
// call counted, its duration recorded (and an error counted in /error),
// against not recording (/off: a nil *Metrics, what
// telemetry.prometheus: false gives).
func BenchmarkRecordCall(b *testing.B) {
	m, err := trace.NewMetrics(trace.MetricsOptions{Replica: "r", Version: "v"})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = m.Shutdown(context.Background()) }()
	tools := []string{"add_note", "search_notes", "delete_note", "list_notes"}
	for _, tool := range tools {
		m.RecordCall("notes", tool, time.Millisecond, false)
	}
	for _, c := range []struct {
		name   string
		m      *trace.Metrics
		failed bool
	}{{"off", nil, false}, {"ok", m, false}, {"error", m, true}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				c.m.RecordCall("notes", tools[i%len(tools)], time.Millisecond, c.failed)
				i++
			}
		})
	}
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				m.RecordCall("notes", tools[i%len(tools)], time.Millisecond, false)
				i++
			}
		})
	})
}
