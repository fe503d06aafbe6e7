package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"github.com/toolbridge/toolbridge/bridge/access"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/ui"
	"github.com/toolbridge/toolbridge/config"
)

func uiConfig(t *testing.T) *config.Config {
	cfg := testConfig()
	cfg.StateDir = t.TempDir()
	cfg.Mode = config.ModeOn
	cfg.CoreTools = []string{"echo"}
	cfg.Telemetry.UIURL = "http://127.0.0.1:16686"
	return cfg
}

func getJSON(t *testing.T, h http.Handler, path string, v any) {
	t.Helper()
	rec := httptest.NewRecorder()
	// By IP, as a browser on this machine asks: httptest's default Host,
	// example.com, is a name the Host check refuses (DNS rebinding).
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1"+path, nil))
	if rec.Code != 200 {
		t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// TestStatusPageShowsTheGateway checks the page's state against the
// gateway's: servers, tool counts, the bridge decision, the tools with
// their class, and the calls and searches recorded as they happen.
func TestStatusPageShowsTheGateway(t *testing.T) {
	g, c := startGateway(t, uiConfig(t), map[string]*server.MCPServer{"alpha": echoServer("alpha"), "beta": echoServer("beta")})
	h := g.HTTPHandler()
	var snap ui.Snapshot
	getJSON(t, h, "/ui/api/state", &snap)
	if len(snap.Servers) != 2 || snap.Servers[0].Name != "alpha" || snap.Servers[0].State != ui.StateConnected || snap.Servers[0].Tools != 4 {
		t.Fatalf("servers = %+v", snap.Servers)
	}
	if snap.Servers[0].Tokens <= 0 {
		t.Errorf("alpha tokens = %d, want its tools' tokens", snap.Servers[0].Tokens)
	}
	d := snap.Decision
	if !d.Bridge || d.FullTokens <= 0 || d.ClientTokens <= 0 || d.ClientTokens >= d.FullTokens+1000 || d.ThresholdTokens != 20000 {
		t.Errorf("decision = %+v", d)
	}
	if len(snap.Tools) != 8 || snap.TraceUI != "http://127.0.0.1:16686" {
		t.Fatalf("%d tools, trace_ui %q", len(snap.Tools), snap.TraceUI)
	}
	statuses := map[string]string{}
	for _, tool := range snap.Tools {
		statuses[tool.ID] = tool.Status + "/" + tool.Class
		if tool.ID == "alpha::raw_schema" && !strings.Contains(string(tool.Schema), `"minimum":1`) {
			t.Errorf("raw_schema's schema = %s", tool.Schema)
		}
	}
	if statuses["alpha::echo"] != "listed/core" || !strings.HasPrefix(statuses["beta::slow"], "deferred/") {
		t.Errorf("statuses = %v", statuses)
	}

	// A search and a call show up on the event stream.
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/ui/api/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	callText(t, c, "tool_search", map[string]any{"query": "echo text back"})
	callText(t, c, "tool_search", map[string]any{"query": "zzzqqq"})
	callText(t, c, "tool_call", map[string]any{"name": "beta::raw_schema", "arguments": map[string]any{"n": 2}})
	callText(t, c, "tool_call", map[string]any{"name": "beta::slow", "arguments": map[string]any{}})
	r := bufio.NewReader(resp.Body)
	var events []string
	for len(events) < 4 {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("after %v: %v", events, err)
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			events = append(events, strings.TrimSpace(data))
		}
	}
	var hit, miss struct {
		Query string   `json:"query"`
		Hits  []string `json:"hits"`
		Total int      `json:"total"`
	}
	var ok, slow struct {
		Tool, Server, Via, Error string
	}
	for i, v := range []any{&hit, &miss, &ok, &slow} {
		if err := json.Unmarshal([]byte(events[i]), v); err != nil {
			t.Fatal(err)
		}
	}
	if hit.Query != "echo text back" || hit.Total == 0 || len(hit.Hits) == 0 || miss.Total != 0 {
		t.Errorf("searches: %s / %s", events[0], events[1])
	}
	if ok.Tool != "beta::raw_schema" || ok.Server != "beta" || ok.Via != "tool_call" || ok.Error != "" {
		t.Errorf("call: %s", events[2])
	}
	if slow.Tool != "beta::slow" || !strings.Contains(slow.Error, "timed out") && !strings.Contains(slow.Error, "timeout") {
		t.Errorf("failed call: %s", events[3])
	}
}

// TestRecordingAllocatesNothing is the call path's cost of the status
// page when no one watches: recording a call or a search allocates
// nothing.
func TestRecordingAllocatesNothing(t *testing.T) {
	g, err := New(uiConfig(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	tool := &Tool{ID: "alpha::echo", Server: "alpha", Name: "echo"}
	c := call{tool: tool, via: "tool_call"}
	res := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("ok")}}
	found := SearchResult{Tools: []SearchHit{{ID: "alpha::echo"}, {ID: "beta::echo"}}}
	ctx := context.Background()
	start := time.Now()
	if n := testing.AllocsPerRun(1000, func() {
		g.recordCall(ctx, c, start, res, nil)
		g.recordSearch(ctx, "echo", found)
	}); n != 0 {
		t.Errorf("%v allocations per recorded call and search, want 0", n)
	}
}

// BenchmarkRecordCallGateway is what the call path pays the status page
// per call, with no viewer and with one connected over HTTP: 0 allocs/op
// either way (the viewer's encoding runs on its own goroutine and shows
// as a few bytes/op averaged in).
func BenchmarkRecordCallGateway(b *testing.B) {
	cfg := testConfig()
	cfg.StateDir = b.TempDir()
	g, err := New(cfg, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	c := call{tool: &Tool{ID: "alpha::echo", Server: "alpha", Name: "echo"}, via: "tool_call"}
	res := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("ok")}}
	ctx := context.Background()
	run := func(b *testing.B) {
		b.ReportAllocs()
		start := time.Now()
		for b.Loop() {
			g.recordCall(ctx, c, start, res, nil)
		}
	}
	b.Run("no-viewer", run)
	b.Run("viewer", func(b *testing.B) {
		srv := httptest.NewServer(g.HTTPHandler())
		defer srv.Close()
		resp, err := http.Get(srv.URL + "/ui/api/events")
		if err != nil {
			b.Fatal(err)
		}
		go func() { _, _ = bufio.NewReader(resp.Body).WriteTo(discard{}) }()
		for !g.Activity().Watched() {
			time.Sleep(time.Millisecond)
		}
		run(b)
		g.Activity().EndStreams()
		resp.Body.Close()
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestStatusPageIsBehindTheMCPChecks: over HTTP, /ui/ asks for the same
// bearer token and Origin as /mcp.
func TestStatusPageIsBehindTheMCPChecks(t *testing.T) {
	cfg := uiConfig(t)
	cfg.Serve.AuthToken = "ui-s3cret-token"
	g, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := httptest.NewServer(g.HTTPHandler())
	defer srv.Close()
	for _, tc := range []struct {
		path, auth, origin string
		want               int
	}{
		{"/ui/", "", "", 401},
		{"/ui/api/state", "Bearer wrong", "", 401},
		{"/ui/api/events", "", "", 401},
		{"/ui/", "Bearer ui-s3cret-token", "", 200},
		{"/ui/api/state", "Bearer ui-s3cret-token", "https://evil.example", 403},
		{"/ui/api/state", "Bearer ui-s3cret-token", "", 200},
	} {
		req, _ := http.NewRequest("GET", srv.URL+tc.path, nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body strings.Builder
		_, _ = bufio.NewReader(resp.Body).WriteTo(&body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s (auth %q, origin %q): %d, want %d", tc.path, tc.auth, tc.origin, resp.StatusCode, tc.want)
		}
		if strings.Contains(body.String(), "ui-s3cret-token") {
			t.Errorf("%s: the answer quotes the token", tc.path)
		}
	}
}

// TestServeUIOnLoopbackOnly: the stdio mode listener answers loopback
// Host names only (DNS rebinding) and foreign Origins not at all.
func TestServeUIOnLoopbackOnly(t *testing.T) {
	g, err := New(uiConfig(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.ServeUI(ctx, ln) }()
	base := "http://" + ln.Addr().String()
	for _, tc := range []struct {
		path, host, origin string
		want               int
	}{
		{"/ui/", "", "", 200},
		{"/ui/api/state", "localhost:1234", "", 200},
		{"/ui/api/state", "attacker.example:1234", "", 421},
		{"/ui/api/state", "", "https://evil.example", 403},
		{"/mcp", "", "", 404},
	} {
		req, _ := http.NewRequest("GET", base+tc.path, nil)
		if tc.host != "" {
			req.Host = tc.host
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s (host %q, origin %q): %d, want %d", tc.path, tc.host, tc.origin, resp.StatusCode, tc.want)
		}
	}
	// An open event stream does not hold shutdown up.
	resp, err := http.Get(base + "/ui/api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for !g.Activity().Watched() {
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ServeUI did not return with a viewer connected")
	}
}

// TestStatusPageNamesTheCaller: a call and a search made by an identified
// caller show its subject on the event stream, and recording them still
// allocates nothing.
func TestStatusPageNamesTheCaller(t *testing.T) {
	g, err := New(uiConfig(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx := access.NewContext(context.Background(), &access.Identity{Subject: "alice@example.com", Groups: []string{"dev"}})
	c := call{tool: &Tool{ID: "alpha::echo", Server: "alpha", Name: "echo"}, via: "tool_call"}
	res := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("ok")}}
	found := SearchResult{Tools: []SearchHit{{ID: "alpha::echo"}}}
	if n := testing.AllocsPerRun(100, func() {
		g.recordCall(ctx, c, time.Now(), res, nil)
		g.recordSearch(ctx, "echo", found)
	}); n != 0 {
		t.Errorf("%v allocations per recorded call and search with a caller, want 0", n)
	}
	srv := httptest.NewServer(g.HTTPHandler())
	defer srv.Close()
	rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, "GET", srv.URL+"/ui/api/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	for seen := 0; seen < 2; {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the backlog: %v", err)
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		seen++
		if !strings.Contains(data, `"caller":"alice@example.com"`) {
			t.Errorf("event without the caller: %s", data)
		}
	}
}
