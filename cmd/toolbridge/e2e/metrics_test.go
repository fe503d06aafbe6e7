package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
	"github.com/toolbridge/toolbridge/trace/tracetest"
)

// What must never be in a scrape.
const (
	e2eMetricsToken = "e2e-tok-8d41c2-never-scraped"
	e2eMetricsArg   = "e2e-arg-77f0b3 never scraped"
	e2eMetricsQuery = "qqzzxvvkkwj"
)

// metricValue fails the test unless the scrape has the sample.
func metricValue(t *testing.T, s *tracetest.Scrape, name string, labels ...string) float64 {
	t.Helper()
	v, ok := s.Value(name, labels...)
	if !ok {
		t.Errorf("%s%q absent from the scrape; toolbridge families: %v", name, labels, s.Names("toolbridge_"))
	}
	return v
}

// TestMetricsFromTheBinary runs `toolbridge serve --transport http` with
// a bearer token and the demo servers, makes calls and searches through
// it with mcp-go's client, and scrapes /metrics as Prometheus would,
// parsing it with Prometheus' own text parser: the counters move by what
// was done, under the real tool's name, a search with no hit counts, the
// replica is named, and no token, argument, query or session id is in it.
func TestMetricsFromTheBinary(t *testing.T) {
	cfg := demoConfig(t, "state_dir: "+t.TempDir()+"\nserve:\n  auth_token: "+e2eMetricsToken+"\n  replica_id: e2e-replica-1\n", "")
	g := startHTTP(t, "-c", cfg, "--mode", "on")
	auth := http.Header{"Authorization": {"Bearer " + e2eMetricsToken}}
	scrape := func() *tracetest.Scrape {
		t.Helper()
		s, err := tracetest.ScrapeURL(g.base+"/metrics", auth)
		if err != nil {
			t.Fatalf("%v\nstderr:\n%s", err, g.stderr)
		}
		return s
	}

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c, err := client.NewStreamableHttpClient(g.url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + e2eMetricsToken}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25" // a session, for the sessions gauge
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v\nstderr:\n%s", err, g.stderr)
	}
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		res, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v\nstderr:\n%s", name, err, g.stderr)
		}
		return res
	}
	// tools/list waits for the servers (TOOLBRIDGE_STARTUP_WAIT): after
	// it, both are up.
	if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}

	before := scrape()
	if v := metricValue(t, before, "toolbridge_replica_info", "replica", "e2e-replica-1"); v != 1 {
		t.Errorf("toolbridge_replica_info = %v, want 1", v)
	}
	for _, server := range []string{"math", "text"} {
		if v := metricValue(t, before, "toolbridge_upstream_up", "server", server); v != 1 {
			t.Errorf("toolbridge_upstream_up{server=%s} = %v, want 1", server, v)
		}
		if v := metricValue(t, before, "toolbridge_upstream_tools", "server", server); v < 5 {
			t.Errorf("toolbridge_upstream_tools{server=%s} = %v, want the demo server's tools", server, v)
		}
	}
	if v := metricValue(t, before, "toolbridge_requests_total", "method", "tools/list"); v < 1 {
		t.Errorf("toolbridge_requests_total{method=tools/list} = %v after a tools/list, want at least 1", v)
	}
	if v := metricValue(t, before, "toolbridge_sessions"); v < 1 {
		t.Errorf("toolbridge_sessions = %v with a session open", v)
	}
	addsBefore, _ := before.Value("toolbridge_tool_calls_total", "server", "math", "tool", "add")
	requestsBefore, _ := before.Value("toolbridge_requests_total", "method", "tools/call")
	searchesBefore, _ := before.Value("toolbridge_searches_total")
	missesBefore, _ := before.Value("toolbridge_searches_no_hit_total")

	for range 2 {
		if res := call("tool_call", map[string]any{"tool_name": "math::add", "tool_args": map[string]any{"a": 2, "b": 3}}); res.IsError {
			t.Fatalf("math::add: %s", textOf(res))
		}
	}
	if res := call("tool_call", map[string]any{"tool_name": "math::divide", "tool_args": map[string]any{"a": 1, "b": 0}}); !res.IsError {
		t.Fatalf("math::divide by zero did not fail: %s", textOf(res))
	}
	if res := call("tool_call", map[string]any{"tool_name": "text::word_count", "tool_args": map[string]any{"text": e2eMetricsArg}}); res.IsError {
		t.Fatalf("text::word_count: %s", textOf(res))
	}
	if res := call("tool_search", map[string]any{"query": "add two numbers"}); !strings.Contains(textOf(res), "math::add") {
		t.Fatalf("search for add two numbers: %s", textOf(res))
	}
	if res := call("tool_search", map[string]any{"query": e2eMetricsQuery}); len(res.StructuredContent.(map[string]any)["tools"].([]any)) != 0 {
		t.Fatalf("the nonsense query found tools: %s", textOf(res))
	}

	after := scrape()
	if d := metricValue(t, after, "toolbridge_tool_calls_total", "server", "math", "tool", "add") - addsBefore; d != 2 {
		t.Errorf("math::add calls went up by %v, want 2", d)
	}
	if v := metricValue(t, after, "toolbridge_tool_call_errors_total", "server", "math", "tool", "divide"); v != 1 {
		t.Errorf("math::divide errors = %v, want 1", v)
	}
	if _, ok := after.Value("toolbridge_tool_call_errors_total", "server", "math", "tool", "add"); ok {
		t.Error("errors counted for math::add, which never failed")
	}
	if v := metricValue(t, after, "toolbridge_tool_calls_total", "server", "text", "tool", "word_count"); v != 1 {
		t.Errorf("text::word_count calls = %v, want 1", v)
	}
	if v := metricValue(t, after, "toolbridge_tool_call_duration_seconds", "server", "math", "tool", "add"); v < 2 {
		t.Errorf("math::add duration samples = %v, want at least 2", v)
	}
	if d := metricValue(t, after, "toolbridge_requests_total", "method", "tools/call") - requestsBefore; d != 6 {
		t.Errorf("tools/call requests went up by %v, want 6 (4 calls, 2 searches)", d)
	}
	if d := metricValue(t, after, "toolbridge_searches_total") - searchesBefore; d != 2 {
		t.Errorf("searches went up by %v, want 2", d)
	}
	if d := metricValue(t, after, "toolbridge_searches_no_hit_total") - missesBefore; d != 1 {
		t.Errorf("searches with no hit went up by %v, want 1 (the nonsense query)", d)
	}
	for _, f := range []string{"toolbridge_tool_calls_total", "toolbridge_tool_call_errors_total", "toolbridge_tool_call_duration_seconds"} {
		if got := strings.Join(after.LabelNames(f), ","); got != "server,tool" {
			t.Errorf("%s labels = %s, want server,tool", f, got)
		}
		for _, m := range after.Families[f].GetMetric() {
			if tool := tracetest.Label(m, "tool"); strings.HasPrefix(tool, "tool_") {
				t.Errorf("%s counted under the meta-tool %q, not the real tool", f, tool)
			}
		}
	}
	for _, secret := range []string{e2eMetricsToken, e2eMetricsArg, "e2e-arg-77f0b3", e2eMetricsQuery, c.GetSessionId()} {
		if secret != "" && strings.Contains(after.Body, secret) {
			t.Errorf("the scrape contains %q", secret)
		}
	}

	// Without the token: 401, and no metrics.
	resp, err := http.Get(g.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || strings.Contains(string(body), "toolbridge_") {
		t.Errorf("GET /metrics without the token: %s, want 401 and no metrics", resp.Status)
	}
}

// TestMetricsOnStdio: a stdio gateway serves its metrics on
// telemetry.metrics_listen, with no token, and they count its calls.
func TestMetricsOnStdio(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	cfg := demoConfig(t, "state_dir: "+t.TempDir()+"\ntelemetry: {metrics_listen: \""+addr+"\"}\n", "")
	g := startStdio(t, nil, "serve", "-c", cfg, "--mode", "on")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	want := "toolbridge: metrics at http://" + addr + "/metrics"
	if out := g.stderr.WaitFor(ctx, func(s string) bool { return strings.Contains(s, want) }); !strings.Contains(out, want) {
		t.Fatalf("stderr lacks %q:\n%s", want, out)
	}
	g.toolNames(t) // waits for the servers
	if res, text := g.call(t, "tool_call", map[string]any{"tool_name": "math::multiply", "tool_args": map[string]any{"a": 6, "b": 7}}); res.IsError {
		t.Fatalf("math::multiply: %s", text)
	}
	s, err := tracetest.ScrapeURL("http://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := metricValue(t, s, "toolbridge_tool_calls_total", "server", "math", "tool", "multiply"); v != 1 {
		t.Errorf("math::multiply calls = %v, want 1", v)
	}
	if v := metricValue(t, s, "toolbridge_sessions"); v != 1 {
		t.Errorf("toolbridge_sessions = %v on stdio, want 1", v)
	}
}
