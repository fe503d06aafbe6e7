package bridge

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/state"
	"github.com/toolbridge/toolbridge/bridge/state/statetest"
	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/trace/tracetest"
)

// Values that must never appear in a scrape: the bearer token, an
// argument, a search query.
const (
	metricsToken = "tok-3c1d9e7f-never-in-metrics"
	metricsArg   = "ARG-5b2a-never-in-metrics"
	metricsQuery = "zqxvbnm-never-in-metrics"
)

// metricsNotes is the upstream of the metrics tests: add_note succeeds,
// fail_note answers isError.
func metricsNotes() *server.MCPServer {
	s := server.NewMCPServer("notes", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("add_note", mcp.WithDescription("Add a note to the notebook"), mcp.WithString("text")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("added"), nil
		})
	s.AddTool(mcp.NewTool("fail_note", mcp.WithDescription("Fail to archive a note"), mcp.WithString("text")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("archive is read-only"), nil
		})
	return s
}

// metricsGateway serves a bridge-mode gateway over HTTP on 127.0.0.1 with
// a bearer token, in front of notes and a server that never starts.
func metricsGateway(t *testing.T, edit func(*config.Config)) (g *Gateway, base string) {
	t.Helper()
	cfg := bridgeConfig()
	cfg.StateDir = t.TempDir()
	cfg.Timeouts.Call = 10 * time.Second
	cfg.Timeouts.Connect = 5 * time.Second
	cfg.Serve.Transport = config.ServeHTTP
	cfg.Serve.AuthToken = metricsToken
	cfg.Serve.ReplicaID = "replica-a"
	cfg.Servers = map[string]config.Server{"broken": {Command: filepath.Join(t.TempDir(), "no-such-server")}}
	if edit != nil {
		edit(cfg)
	}
	g, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	specs := append(upstream.SpecsFromConfig(cfg), upstream.Spec{Name: "notes", InProcess: metricsNotes()})
	_ = g.Connect(context.Background(), specs) // broken fails; notes serves
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- g.ServeHTTP(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		<-served
		_ = g.Close()
	})
	return g, "http://" + ln.Addr().String()
}

// metricsClient opens an MCP session over HTTP with the test's token.
func metricsClient(t *testing.T, base string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(base+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + metricsToken}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// 2025-11-25, which has sessions (2026-07-28 has none to count).
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	return c
}

func bearer() http.Header { return http.Header{"Authorization": {"Bearer " + metricsToken}} }

func mustScrape(t *testing.T, url string, h http.Header) *tracetest.Scrape {
	t.Helper()
	s, err := tracetest.ScrapeURL(url, h)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func value(s *tracetest.Scrape, name string, labels ...string) float64 {
	v, _ := s.Value(name, labels...)
	return v
}

// TestMetricsAfterRealCalls scrapes /metrics over HTTP before and after
// calls and searches made by a client through the gateway, and checks
// every value moved as it should, the labels are the real tool's (not
// tool_call), and no token, argument, query or session id is in it.
func TestMetricsAfterRealCalls(t *testing.T) {
	g, base := metricsGateway(t, nil)
	c := metricsClient(t, base)
	eventually(t, "broken is reported down", func() bool {
		why, _ := g.pool.Down("broken")
		return why != "" && why != "not connected"
	})

	before := mustScrape(t, base+"/metrics", bearer())
	if v := value(before, "toolbridge_replica_info", "replica", "replica-a", "version", Version); v != 1 {
		t.Errorf("toolbridge_replica_info{replica=replica-a,version=%s} = %v, want 1", Version, v)
	}
	if _, ok := before.Value("toolbridge_tool_calls_total"); ok {
		t.Error("calls counted before any call")
	}
	if _, ok := before.Value("toolbridge_redis_up"); ok {
		t.Error("toolbridge_redis_up present without Redis")
	}
	if v := value(before, "toolbridge_sessions"); v < 1 {
		t.Errorf("toolbridge_sessions = %v with a session open, want at least 1", v)
	}
	for _, want := range []struct {
		server, state string
		v             float64
	}{{"notes", "up", 1}, {"broken", "down", 1}, {"broken", "up", 0}} {
		if v, ok := before.Value("toolbridge_upstream_state", "server", want.server, "state", want.state); !ok || v != want.v {
			t.Errorf("toolbridge_upstream_state{server=%s,state=%s} = %v (present %v), want %v", want.server, want.state, v, ok, want.v)
		}
	}
	if v := value(before, "toolbridge_upstream_tools", "server", "notes"); v != 2 {
		t.Errorf("toolbridge_upstream_tools{server=notes} = %v, want 2", v)
	}

	for range 3 {
		if res, text := callText(t, c, "tool_call", map[string]any{"tool_name": "notes::add_note", "tool_args": map[string]any{"text": metricsArg}}); res.IsError {
			t.Fatalf("add_note: %s", text)
		}
	}
	if res, _ := callText(t, c, "tool_call", map[string]any{"tool_name": "notes::fail_note", "tool_args": map[string]any{"text": metricsArg}}); !res.IsError {
		t.Fatal("fail_note did not fail")
	}
	// A call that never reaches a tool (unknown name) is no tool's call:
	// the name is the client's to choose and must not become a label.
	if res, _ := callText(t, c, "tool_call", map[string]any{"tool_name": "notes::" + metricsArg}); !res.IsError {
		t.Fatal("a call of an unknown tool succeeded")
	}
	if _, text := callText(t, c, "tool_search", map[string]any{"query": "add a note"}); !strings.Contains(text, "notes::add_note") {
		t.Fatalf("search for add a note: %s", text)
	}
	callText(t, c, "tool_search", map[string]any{"query": metricsQuery})
	callText(t, c, "tool_search", map[string]any{"query": ""}) // lists the catalog: not a miss

	after := mustScrape(t, base+"/metrics", bearer())
	checks := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"toolbridge_tool_calls_total", []string{"server", "notes", "tool", "add_note"}, 3},
		{"toolbridge_tool_call_errors_total", []string{"server", "notes", "tool", "fail_note"}, 1},
		{"toolbridge_tool_calls_total", []string{"server", "notes", "tool", "fail_note"}, 1},
		{"toolbridge_tool_call_duration_seconds", []string{"server", "notes", "tool", "add_note"}, 3},
		{"toolbridge_searches_total", nil, 3},
		{"toolbridge_searches_no_hit_total", nil, 1},
		// 5 calls and 3 searches, each a tools/call request.
		{"toolbridge_requests_total", []string{"method", "tools/call"}, 8},
		{"toolbridge_requests_total", []string{"method", "initialize"}, 1},
	}
	for _, c := range checks {
		if v, ok := after.Value(c.name, c.labels...); !ok || v != c.want {
			t.Errorf("%s%q = %v (present %v), want %v", c.name, c.labels, v, ok, c.want)
		}
	}
	if _, ok := after.Value("toolbridge_tool_call_errors_total", "server", "notes", "tool", "add_note"); ok {
		t.Error("an error counted for add_note, which never failed")
	}
	for _, m := range after.Families["toolbridge_tool_calls_total"].GetMetric() {
		if tool := tracetest.Label(m, "tool"); tool != "add_note" && tool != "fail_note" {
			t.Errorf("calls counted under tool %q; want only the real tools", tool)
		}
	}
	if got := after.LabelNames("toolbridge_tool_calls_total"); !slices.Equal(got, []string{"server", "tool"}) {
		t.Errorf("toolbridge_tool_calls_total labels %q, want [server tool]", got)
	}
	for _, secret := range []string{metricsToken, metricsArg, metricsQuery, c.GetSessionId(), `tool="tool_call"`, `tool="tool_search"`} {
		if secret != "" && strings.Contains(after.Body, secret) {
			t.Errorf("the scrape contains %q", secret)
		}
	}
	if c.GetSessionId() == "" {
		t.Error("no session id to look for")
	}
}

// TestMetricsNeedTheToken: /metrics on the main listener is behind
// serve.auth_token like /mcp.
func TestMetricsNeedTheToken(t *testing.T) {
	_, base := metricsGateway(t, nil)
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || strings.Contains(string(body), "toolbridge_") {
		t.Errorf("GET /metrics without the token: %s %q, want 401 and no metrics", resp.Status, body)
	}
}

// TestMetricsOff: telemetry.prometheus: false serves no /metrics.
func TestMetricsOff(t *testing.T) {
	g, base := metricsGateway(t, func(c *config.Config) { c.Telemetry.Prometheus = false })
	if g.Metrics() != nil {
		t.Error("metrics built with telemetry.prometheus off")
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	req.Header = bearer()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /metrics with metrics off: %s, want 404", resp.Status)
	}
}

// TestMetricsOwnListener: with telemetry.metrics_listen, /metrics is
// served there without a token (and only there), checks Host against
// DNS rebinding, and reports Redis health once the serve wiring sets it.
func TestMetricsOwnListener(t *testing.T) {
	g, base := metricsGateway(t, func(c *config.Config) { c.Telemetry.MetricsListen = "127.0.0.1:0" })
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	req.Header = bearer()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /metrics on the MCP listener with metrics_listen set: %s, want 404", resp.Status)
	}
	url := serveMetrics(t, g)
	redisErr := errors.New("dial tcp 127.0.0.1:6379: connection refused")
	var redisDown atomic.Bool
	g.Metrics().ObserveRedis(func(context.Context) error {
		if redisDown.Load() {
			return redisErr
		}
		return nil
	})
	s := mustScrape(t, url, nil)
	if v, ok := s.Value("toolbridge_redis_up"); !ok || v != 1 {
		t.Errorf("toolbridge_redis_up = %v (present %v), want 1", v, ok)
	}
	redisDown.Store(true)
	if v := value(mustScrape(t, url, nil), "toolbridge_redis_up"); v != 0 {
		t.Errorf("toolbridge_redis_up = %v with Redis down, want 0", v)
	}
	if strings.Contains(s.Body, "6379") {
		t.Error("the Redis error reached the scrape")
	}
	req, _ = http.NewRequest(http.MethodGet, url, nil)
	req.Host = "rebound.attacker.example"
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET /metrics with a foreign Host: %s, want 403", resp.Status)
	}
}

// serveMetrics serves g's metrics on their own listener on 127.0.0.1 and
// returns the /metrics URL.
func serveMetrics(t *testing.T, g *Gateway) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.ServeMetrics(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeMetrics: %v", err)
		}
	})
	return "http://" + ln.Addr().String() + "/metrics"
}

// TestMetricsWithOAuth: with serve.oauth the MCP listener does not serve
// /metrics, even to a valid user token (it would show every caller's
// usage), and says where they are; metrics_listen serves them, and no
// caller's identity or token is in them.
func TestMetricsWithOAuth(t *testing.T) {
	tg := startTeamGateway(t, nil)
	tok := tg.iss.Mint(t, "alice-subject-never-in-metrics", tg.url, []string{"dev"}, "mcp:tools")
	c := tg.client(t, tok)
	callText(t, c, "tool_call", map[string]any{"tool_name": "github::create_issue", "tool_args": map[string]any{"x": "y"}})

	req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(tg.url, "/mcp")+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "telemetry.metrics_listen") {
		t.Errorf("GET /metrics with serve.oauth: %s %q, want 403 naming telemetry.metrics_listen", resp.Status, body)
	}
	s := mustScrape(t, serveMetrics(t, tg.g), nil)
	if v := value(s, "toolbridge_tool_calls_total", "server", "github", "tool", "create_issue"); v != 1 {
		t.Errorf("github create_issue calls = %v, want 1", v)
	}
	for _, secret := range []string{"alice-subject-never-in-metrics", tok} {
		if strings.Contains(s.Body, secret) {
			t.Errorf("the scrape contains %q", secret)
		}
	}
}

// TestMetricsRedisHealthFromARealRedis: the hook fed with bridge/state's
// Store.Ping against Debian's redis-server, as the serve wiring will:
// toolbridge_redis_up is 1, 0 once the server is killed, and 1 again
// after it restarts; Redis's address is never in the scrape.
func TestMetricsRedisHealthFromARealRedis(t *testing.T) {
	statetest.ForEach(t, testMetricsRedisHealthFromARealRedis)
}

func testMetricsRedisHealthFromARealRedis(t *testing.T, srv *statetest.Server) {
	store, err := state.Open(t.Context(), config.Redis{URL: srv.URL(), KeyPrefix: "tb:"}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	cfg := testConfig()
	cfg.StateDir = t.TempDir()
	g, err := New(cfg, Options{RedisHealth: store.Ping})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	metricsURL := serveMetrics(t, g)
	up := func() float64 {
		t.Helper()
		s := mustScrape(t, metricsURL, nil)
		if strings.Contains(s.Body, srv.Addr()) {
			t.Error("the scrape shows Redis's address")
		}
		v, ok := s.Value("toolbridge_redis_up")
		if !ok {
			t.Fatal("toolbridge_redis_up absent with Redis configured")
		}
		return v
	}
	if v := up(); v != 1 {
		t.Fatalf("toolbridge_redis_up = %v with redis-server running, want 1", v)
	}
	srv.Kill()
	if v := up(); v != 0 {
		t.Errorf("toolbridge_redis_up = %v with redis-server killed, want 0", v)
	}
	srv.Restart()
	eventually(t, "toolbridge_redis_up is 1 after the restart", func() bool { return up() == 1 })
}
