package bridge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/trace"
)

// This file is the gateway's side of the operator metrics (trace.Metrics):
// what it records per call and search, what it reports at scrape time,
// and where /metrics is served.
//
// Where /metrics is served, and why:
//
//   - telemetry.metrics_listen set: on that listener only, with no token,
//     in stdio mode too. This is what a platform team runs: Prometheus
//     scrapes each replica's own metrics port (pod discovery), the port
//     is not routed through the load balancer or ingress, and a
//     NetworkPolicy or firewall says who reaches it, as with Envoy's admin
//     port or any exporter. Nobody has to hand the scraper a credential
//     that could also call tools. The Host and Origin checks still apply
//     (DNS rebinding): Prometheus scrapes by IP, or by a name listed in
//     serve.allowed_hosts.
//   - otherwise, over HTTP: at GET /metrics on the main listener, behind
//     the same checks as /mcp, serve.auth_token included (Prometheus sends
//     it with authorization.credentials_file). Whoever holds that token
//     can already list and call every tool, so the metrics tell them
//     nothing new.
//   - but not on the main listener with serve.oauth: the MCP endpoint is
//     then usually public, a scraper has no user's token, and a user's
//     token must not show every caller's tool usage, which access rules
//     may hide from them (the status page is closed for the same reason).
//     The endpoint answers 403 and says to set telemetry.metrics_listen.
//
// The metrics carry no secret: label values are server names, tool names
// from the upstreams' lists, the states, the replica id and the version;
// never arguments, queries, session ids, callers or tokens.

// newMetrics builds the operator metrics for cfg; nil when
// telemetry.prometheus is off.
func (g *Gateway) newMetrics(cfg *config.Config, redis func(context.Context) error) error {
	if !cfg.Telemetry.Prometheus {
		return nil
	}
	m, err := trace.NewMetrics(trace.MetricsOptions{
		Replica: cfg.Serve.EffectiveReplicaID(), Version: Version,
		Sessions:  g.callers.count,
		Upstreams: g.upstreamMetrics,
		Methods:   requestMethods,
		Logger:    g.logger,
	})
	if err != nil {
		return fmt.Errorf("setting up metrics: %w", err)
	}
	m.ObserveRedis(redis)
	g.metrics = m
	return nil
}

// requestMethods are the MCP methods counted by name in
// toolbridge_requests_total (the ones mcp-go's server dispatches).
var requestMethods = []string{
	string(mcp.MethodInitialize), string(mcp.MethodPing), string(mcp.MethodServerDiscover),
	string(mcp.MethodSubscriptionsListen), string(mcp.MethodSetLogLevel),
	string(mcp.MethodResourcesList), string(mcp.MethodResourcesTemplatesList), string(mcp.MethodResourcesRead),
	string(mcp.MethodResourcesSubscribe), string(mcp.MethodResourcesUnsubscribe),
	string(mcp.MethodPromptsList), string(mcp.MethodPromptsGet),
	string(mcp.MethodToolsList), string(mcp.MethodToolsCall),
	string(mcp.MethodTasksGet), string(mcp.MethodTasksList), string(mcp.MethodTasksResult), string(mcp.MethodTasksCancel),
	string(mcp.MethodCompletionComplete),
}

// countRequest counts an MCP request by its method (a BeforeAny hook).
func (g *Gateway) countRequest(_ context.Context, _ any, method mcp.MCPMethod, _ any) {
	g.metrics.RecordRequest(string(method))
}

// Metrics returns the operator metrics; nil with telemetry.prometheus
// off. The serve wiring feeds it what the gateway does not know itself,
// such as Redis health (Metrics().ObserveRedis).
func (g *Gateway) Metrics() *trace.Metrics { return g.metrics }

// countCall records a finished tool call by its server and its own name
// (as spans do: tool_call is unwrapped). Every isError answer counts as
// an error: a failure of the tool, of the upstream, or a refusal.
func (g *Gateway) countCall(c call, start time.Time, res *mcp.CallToolResult, err error) {
	g.metrics.RecordCall(c.tool.Server, c.tool.Name, time.Since(start), err != nil || res == nil || res.IsError)
}

// countSearch records a tool_search: a query that found no tool is a
// miss; an empty query lists the catalog and is none.
func (g *Gateway) countSearch(query string, res SearchResult) {
	g.metrics.RecordSearch(len(res.Tools) == 0 && strings.TrimSpace(query) != "")
}

// count is the number of MCP sessions registered on this gateway.
func (c *callers) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// upstreamMetrics is each server's state, tools and held tools, for a
// scrape.
func (g *Gateway) upstreamMetrics() []trace.UpstreamStatus {
	held := map[string]int{}
	for _, rm := range g.Catalog().Removed {
		if rm.Kind == RemovedQuarantined {
			held[rm.Server]++
		}
	}
	statuses := g.pool.Statuses()
	out := make([]trace.UpstreamStatus, 0, len(statuses))
	for _, s := range statuses {
		st := trace.UpstreamDown
		switch {
		case s.NeedsLogin:
			st = trace.UpstreamNeedsLogin
		case s.Connected:
			st = trace.UpstreamUp
		case s.Connecting:
			st = trace.UpstreamConnecting
		}
		out = append(out, trace.UpstreamStatus{Server: s.Name, State: st, Tools: s.Tools, Held: held[s.Name]})
	}
	return out
}

// mountMetrics serves GET /metrics on the main HTTP listener's mux, unless
// metrics are off or have a listener of their own (see the top of this
// file).
func (g *Gateway) mountMetrics(mux *http.ServeMux) {
	if g.metrics == nil || g.settings().cfg.Telemetry.MetricsListen != "" {
		return
	}
	metrics := g.metrics.Handler()
	mux.Handle("GET /metrics", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read per request: a reload may turn serve.oauth on.
		if g.settings().cfg.Serve.OAuth.Enabled() {
			http.Error(w, "toolbridge: with serve.oauth, metrics are not served on the MCP listener; set telemetry.metrics_listen (such as \":9464\") and scrape that port", http.StatusForbidden)
			return
		}
		metrics.ServeHTTP(w, r)
	}))
}

// ServeMetrics serves GET /metrics alone on ln (telemetry.metrics_listen)
// until ctx ends; see the top of this file for who may reach it.
func (g *Gateway) ServeMetrics(ctx context.Context, ln net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", g.metrics.Handler())
	serve := g.settings().cfg.Serve
	srv := &http.Server{
		Handler:           guardHTTP(config.Serve{AllowedOrigins: serve.AllowedOrigins, AllowedHosts: serve.AllowedHosts}, mux),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving metrics: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), flushGrace)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving metrics: %w", err)
	}
	return nil
}
