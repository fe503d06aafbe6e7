package trace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
)

// Operator metrics: what a platform team scrapes from every replica with
// Prometheus. They are made with the OpenTelemetry metrics API and read
// through OTel's Prometheus exporter, on a meter provider of their own,
// apart from the OTLP one that Setup builds: an operator gets /metrics
// with telemetry.exporter none, and turning traces on or off does not
// change what Prometheus sees.
//
// Every label value comes from the config or from the upstreams' tool
// lists (bounded by max_tools_per_server), never from a request:
// arguments, queries, session ids and callers are not labels, so a
// client cannot grow the series, and no secret can reach a scrape.

// Label names on the operator metrics. They are short Prometheus-style
// names rather than the span attributes' OTel names, since PromQL is
// where they are read.
const (
	LabelServer  = "server"
	LabelTool    = "tool"
	LabelState   = "state"
	LabelReplica = "replica"
	LabelVersion = "version"
	LabelMethod  = "method"
)

// MethodOther is the method label of a request whose method is not one
// of the MCP methods NewMetrics was given.
const MethodOther = "other"

// Upstream states, the values of toolbridge_upstream_state's state label.
const (
	UpstreamUp         = "up"
	UpstreamConnecting = "connecting"
	UpstreamDown       = "down"
	UpstreamNeedsLogin = "needs_login"
)

// upstreamStates are the states in the order they are reported.
var upstreamStates = []string{UpstreamUp, UpstreamConnecting, UpstreamDown, UpstreamNeedsLogin}

// maxSeries bounds the series of one instrument (the SDK's cardinality
// limit). Labels are bounded by the catalog already; this is the backstop
// for a gateway whose upstreams keep renaming tools for months: past it
// the SDK folds new series into one marked otel_metric_overflow="true"
// instead of growing.
const maxSeries = 20000

// callBuckets are the tool call duration histogram's bucket boundaries,
// in seconds: the MCP conventions' buckets start at 10 ms, but a stdio
// server on the same machine answers in about one, and an operator wants
// to see that apart from 9 ms.
var callBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// redisProbeTimeout bounds one Redis health check made for a scrape.
const redisProbeTimeout = 2 * time.Second

// UpstreamStatus is one upstream server as the metrics report it.
type UpstreamStatus struct {
	// Server is the server's name (the config key).
	Server string
	// State is UpstreamUp, UpstreamConnecting, UpstreamDown or
	// UpstreamNeedsLogin.
	State string
	// Tools is how many of its tools are in the catalog; Held how many
	// trust quarantines.
	Tools, Held int
}

// MetricsOptions describe the process the metrics come from and where
// the observed values are read. Every func is called at scrape time,
// never on a request's path; nil leaves its metric out.
type MetricsOptions struct {
	// Replica identifies this replica (serve.replica_id); Version is the
	// build's version. Both go on toolbridge_replica_info.
	Replica, Version string
	// Sessions reports the open MCP sessions.
	Sessions func() int
	// Upstreams reports each upstream server.
	Upstreams func() []UpstreamStatus
	// Methods are the MCP methods toolbridge_requests_total counts by
	// name; any other counts as MethodOther, so that a client cannot add
	// series by sending made-up methods.
	Methods []string
	// Logger receives collection problems; nil discards them.
	Logger *slog.Logger
}

// Metrics records the operator metrics and serves them to Prometheus. A
// nil *Metrics records nothing, and every method is safe on it.
type Metrics struct {
	provider *sdkmetric.MeterProvider
	handler  http.Handler

	calls    metric.Int64Counter
	errors   metric.Int64Counter
	duration metric.Float64Histogram
	searches metric.Int64Counter
	noHit    metric.Int64Counter
	requests metric.Int64Counter
	// methods holds the options of each known method's label, built once
	// (read-only after NewMetrics).
	methods map[string][]metric.AddOption

	// redis is the Redis health check (see ObserveRedis); nil when no
	// Redis is configured, and then toolbridge_redis_up is absent.
	redis atomic.Pointer[func(context.Context) error]

	// labels caches the attribute options of each (server, tool), so
	// that recording a call allocates nothing once the tool was seen.
	labelsMu sync.RWMutex
	labels   map[toolKey]*toolLabels
}

type toolKey struct{ server, tool string }

// toolLabels are one tool's measurement options, built once.
type toolLabels struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

// NewMetrics builds the operator metrics on a private Prometheus
// registry (the process-wide default registry is never touched), with
// the Go runtime and process collectors beside them.
func NewMetrics(o MetricsOptions) (*Metrics, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("registering the Go collector: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("registering the process collector: %w", err)
	}
	exp, err := otelprom.New(
		otelprom.WithRegisterer(reg),
		// Prometheus names (toolbridge_tool_calls_total, _seconds), and
		// no otel_scope_* labels on every series: one scope makes them all.
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
		otelprom.WithoutScopeInfo(),
	)
	if err != nil {
		return nil, fmt.Errorf("creating the Prometheus exporter: %w", err)
	}
	// The resource is given whole: resource.Default would read
	// OTEL_RESOURCE_ATTRIBUTES from the process environment into every
	// scrape's target_info.
	res := resource.NewSchemaless(
		attribute.String("service.name", "toolbridge"),
		attribute.String("service.version", o.Version),
		attribute.String("service.instance.id", o.Replica),
	)
	mp := sdkmetric.NewMeterProvider(
		sdkmetric.WithReader(exp),
		sdkmetric.WithResource(res),
		sdkmetric.WithCardinalityLimit(maxSeries),
	)
	m := &Metrics{provider: mp, labels: map[toolKey]*toolLabels{}, methods: map[string][]metric.AddOption{}}
	for _, method := range append(o.Methods, MethodOther) {
		m.methods[method] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String(LabelMethod, method)))}
	}
	if err := m.instruments(mp.Meter(instrumentationName), o); err != nil {
		_ = mp.Shutdown(context.Background())
		return nil, err
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:      promLogger{logger},
		ErrorHandling: promhttp.ContinueOnError,
		// Scrapes are cheap, but a storm of them must not pile up.
		MaxRequestsInFlight: 4,
	})
	return m, nil
}

// instruments creates the instruments and the callbacks of the observed
// ones.
func (m *Metrics) instruments(meter metric.Meter, o MetricsOptions) error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	var err error
	m.calls, err = meter.Int64Counter("toolbridge.tool.calls", metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls the gateway forwarded, by upstream server and the real tool's own name, whether called directly or through the bridge."))
	add(err)
	m.errors, err = meter.Int64Counter("toolbridge.tool.call.errors", metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls that ended in an error: an isError result, a failed or refused call, or the server down."))
	add(err)
	m.duration, err = meter.Float64Histogram("toolbridge.tool.call.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from the gateway resolving a tool call to its answer, policy hooks included."),
		metric.WithExplicitBucketBoundaries(callBuckets...))
	add(err)
	m.requests, err = meter.Int64Counter("toolbridge.requests", metric.WithUnit("{request}"),
		metric.WithDescription("MCP requests this replica received, by method (tools/list, tools/call, initialize...)."))
	add(err)
	m.searches, err = meter.Int64Counter("toolbridge.searches", metric.WithUnit("{search}"),
		metric.WithDescription("tool_search requests answered."))
	add(err)
	m.noHit, err = meter.Int64Counter("toolbridge.searches.no_hit", metric.WithUnit("{search}"),
		metric.WithDescription("tool_search requests with a query that found no tool (a search with an empty query lists the catalog and is not counted here)."))
	add(err)

	replica := metric.WithAttributeSet(attribute.NewSet(
		attribute.String(LabelReplica, o.Replica), attribute.String(LabelVersion, o.Version)))
	_, err = meter.Int64ObservableGauge("toolbridge.replica.info",
		metric.WithDescription("Always 1; its labels name this replica (serve.replica_id) and its version."),
		metric.WithInt64Callback(func(_ context.Context, obs metric.Int64Observer) error {
			obs.Observe(1, replica)
			return nil
		}))
	add(err)

	if o.Sessions != nil {
		_, err = meter.Int64ObservableGauge("toolbridge.sessions", metric.WithUnit("{session}"),
			metric.WithDescription("MCP sessions open on this replica."),
			metric.WithInt64Callback(func(_ context.Context, obs metric.Int64Observer) error {
				obs.Observe(int64(o.Sessions()))
				return nil
			}))
		add(err)
	}

	redisUp, err := meter.Int64ObservableGauge("toolbridge.redis.up",
		metric.WithDescription("1 while Redis (redis.url) answers, 0 while it does not; absent without Redis."))
	add(err)
	if err == nil {
		_, err = meter.RegisterCallback(func(ctx context.Context, obs metric.Observer) error {
			probe := m.redis.Load()
			if probe == nil {
				return nil
			}
			// The exporter collects with no deadline of its own.
			ctx, cancel := context.WithTimeout(ctx, redisProbeTimeout)
			defer cancel()
			up := int64(1)
			if (*probe)(ctx) != nil {
				up = 0
			}
			obs.ObserveInt64(redisUp, up)
			return nil
		}, redisUp)
		add(err)
	}

	if o.Upstreams != nil {
		upG, err := meter.Int64ObservableGauge("toolbridge.upstream.up",
			metric.WithDescription("1 while the upstream server is connected, else 0."))
		add(err)
		stateG, err2 := meter.Int64ObservableGauge("toolbridge.upstream.state",
			metric.WithDescription("1 for the upstream server's current state (up, connecting, down, needs_login), 0 for the others."))
		add(err2)
		toolsG, err3 := meter.Int64ObservableGauge("toolbridge.upstream.tools", metric.WithUnit("{tool}"),
			metric.WithDescription("Tools the upstream server adds to the catalog."))
		add(err3)
		heldG, err4 := meter.Int64ObservableGauge("toolbridge.upstream.tools.held", metric.WithUnit("{tool}"),
			metric.WithDescription("The upstream server's tools that trust quarantines until approved."))
		add(err4)
		if err == nil && err2 == nil && err3 == nil && err4 == nil {
			_, err = meter.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
				for _, s := range o.Upstreams() {
					server := attribute.String(LabelServer, s.Server)
					one := metric.WithAttributes(server)
					up := int64(0)
					if s.State == UpstreamUp {
						up = 1
					}
					obs.ObserveInt64(upG, up, one)
					obs.ObserveInt64(toolsG, int64(s.Tools), one)
					obs.ObserveInt64(heldG, int64(s.Held), one)
					for _, st := range upstreamStates {
						v := int64(0)
						if st == s.State {
							v = 1
						}
						obs.ObserveInt64(stateG, v, metric.WithAttributes(server, attribute.String(LabelState, st)))
					}
				}
				return nil
			}, upG, stateG, toolsG, heldG)
			add(err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("creating the operator metrics: %w", err)
	}
	return nil
}

// Handler serves the metrics in the Prometheus text format (or
// OpenMetrics, as the scraper asks). Where it is mounted, and who may
// read it, is the caller's choice.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return m.handler
}

// RecordCall records one finished tool call of tool (its name on the
// upstream, never tool_call) on server: it counts the call, its error if
// failed, and its duration. After a tool's first call it allocates
// nothing.
func (m *Metrics) RecordCall(server, tool string, d time.Duration, failed bool) {
	if m == nil {
		return
	}
	l := m.toolLabels(server, tool)
	ctx := context.Background()
	m.calls.Add(ctx, 1, l.add...)
	if failed {
		m.errors.Add(ctx, 1, l.add...)
	}
	m.duration.Record(ctx, d.Seconds(), l.record...)
}

// toolLabels returns the cached options of (server, tool).
func (m *Metrics) toolLabels(server, tool string) *toolLabels {
	k := toolKey{server, tool}
	m.labelsMu.RLock()
	l, ok := m.labels[k]
	m.labelsMu.RUnlock()
	if ok {
		return l
	}
	set := metric.WithAttributeSet(attribute.NewSet(
		attribute.String(LabelServer, clean(server)), attribute.String(LabelTool, clean(tool))))
	l = &toolLabels{add: []metric.AddOption{set}, record: []metric.RecordOption{set}}
	m.labelsMu.Lock()
	defer m.labelsMu.Unlock()
	if len(m.labels) < maxSeries {
		m.labels[k] = l
	}
	return l
}

// RecordRequest counts one MCP request received, by its method.
func (m *Metrics) RecordRequest(method string) {
	if m == nil {
		return
	}
	opts, ok := m.methods[method]
	if !ok {
		opts = m.methods[MethodOther]
	}
	m.requests.Add(context.Background(), 1, opts...)
}

// RecordSearch records one tool_search; noHit says it looked for
// something and found no tool.
func (m *Metrics) RecordSearch(noHit bool) {
	if m == nil {
		return
	}
	ctx := context.Background()
	m.searches.Add(ctx, 1)
	if noHit {
		m.noHit.Add(ctx, 1)
	}
}

// ObserveRedis sets the health check behind toolbridge_redis_up: it is
// called at each scrape, with a deadline, and Redis counts as up when it
// returns nil. nil (the default, for a gateway without redis.url) leaves
// the metric out.
func (m *Metrics) ObserveRedis(check func(context.Context) error) {
	if m == nil {
		return
	}
	if check == nil {
		m.redis.Store(nil)
		return
	}
	m.redis.Store(&check)
}

// Shutdown stops the meter provider; scrapes after it serve only the Go
// and process collectors.
func (m *Metrics) Shutdown(ctx context.Context) error {
	if m == nil {
		return nil
	}
	if err := m.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("shutting down the operator metrics: %w", err)
	}
	return nil
}

// promLogger passes promhttp's errors to slog.
type promLogger struct{ l *slog.Logger }

func (p promLogger) Println(v ...any) { p.l.Warn("serving /metrics", "error", fmt.Sprint(v...)) }
