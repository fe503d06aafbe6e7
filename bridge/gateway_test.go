package bridge

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
)

// echoServer is a small upstream: echo returns its text, slow waits for
// the context, progress reports two steps.
func echoServer(name string) *server.MCPServer {
	s := server.NewMCPServer(name, "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo",
		mcp.WithDescription("Echo the text back"),
		mcp.WithString("text", mcp.Required(), mcp.Description("text to echo")),
	), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{
			Content:           []mcp.Content{mcp.NewTextContent(name + ":" + req.GetString("text", ""))},
			StructuredContent: map[string]any{"server": name, "text": req.GetString("text", "")},
		}, nil
	})
	s.AddTool(mcp.Tool{
		Name:           "raw_schema",
		Description:    "A tool whose schema uses keywords mcp-go does not model",
		RawInputSchema: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","title":"T","properties":{"n":{"type":"integer","minimum":1}},"additionalProperties":false}`),
	}, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	})
	s.AddTool(mcp.NewTool("slow"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	s.AddTool(mcp.NewTool("progress"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		token := req.Params.Meta.ProgressToken
		for i := 1; i <= 2; i++ {
			_ = server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress",
				map[string]any{"progressToken": token, "progress": i, "total": 2})
		}
		// The in-process transport hands notifications over on a goroutine
		// of its own, so they can trail the response; stdio
		// and HTTP keep wire order. Give them time to arrive first, since
		// the gateway rightly drops progress for a call that has returned.
		time.Sleep(100 * time.Millisecond)
		return mcp.NewToolResultText("done"), nil
	})
	return s
}

func testConfig() *config.Config {
	cfg := config.Default()
	cfg.Timeouts.Call = 300 * time.Millisecond
	return &cfg
}

// startGateway connects a gateway to the given in-process upstreams and
// returns a downstream client talking to it in process.
func startGateway(t *testing.T, cfg *config.Config, upstreams map[string]*server.MCPServer) (*Gateway, *client.Client) {
	t.Helper()
	ctx := context.Background()
	g, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var specs []upstream.Spec
	for name, s := range upstreams {
		specs = append(specs, upstream.Spec{Name: name, InProcess: s})
	}
	if err := g.Connect(ctx, specs); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g, connectClient(t, g, mcp.ClientCapabilities{})
}

// connectClient attaches one more in-process client to g, declaring caps.
func connectClient(t *testing.T, g *Gateway, caps mcp.ClientCapabilities) *client.Client {
	t.Helper()
	return connectClientWith(t, g, caps, ClientHandlers{})
}

// connectClientWith is connectClient for a client whose handlers (for
// elicitation, sampling) are h.
func connectClientWith(t *testing.T, g *Gateway, caps mcp.ClientCapabilities, h ClientHandlers) *client.Client {
	t.Helper()
	ctx := context.Background()
	c := g.InProcessClient(h)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.Capabilities = caps
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func toolNames(t *testing.T, c *client.Client) []string {
	t.Helper()
	res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func callText(t *testing.T, c *client.Client, name string, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	var texts []string
	for _, content := range res.Content {
		if tc, ok := content.(mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return res, strings.Join(texts, "\n")
}

func TestPassThroughListsAndQualifiesCollisions(t *testing.T) {
	_, c := startGateway(t, testConfig(), map[string]*server.MCPServer{"alpha": echoServer("alpha"), "beta": echoServer("beta")})
	got := strings.Join(toolNames(t, c), " ")
	want := "alpha__echo alpha__progress alpha__raw_schema alpha__slow beta__echo beta__progress beta__raw_schema beta__slow"
	if got != want {
		t.Fatalf("tools/list names:\n got %s\nwant %s", got, want)
	}
}

func TestPassThroughForwardsUnderOriginalNameAndKeepsResult(t *testing.T) {
	_, c := startGateway(t, testConfig(), map[string]*server.MCPServer{"alpha": echoServer("alpha"), "beta": echoServer("beta")})
	res, text := callText(t, c, "beta__echo", map[string]any{"text": "hi"})
	if res.IsError || text != "beta:hi" {
		t.Fatalf("result = %q (isError %v), want beta:hi", text, res.IsError)
	}
	sc, _ := json.Marshal(res.StructuredContent)
	if string(sc) != `{"server":"beta","text":"hi"}` {
		t.Fatalf("structuredContent = %s", sc)
	}
}

func TestPassThroughKeepsRawSchema(t *testing.T) {
	_, c := startGateway(t, testConfig(), map[string]*server.MCPServer{"alpha": echoServer("alpha")})
	res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name != "raw_schema" {
			continue
		}
		// The client decodes into mcp-go's typed schema too, so check the
		// keywords it keeps plus the wire bytes of the whole tool.
		b, _ := json.Marshal(tool)
		if !strings.Contains(string(b), `"additionalProperties":false`) {
			t.Fatalf("schema lost additionalProperties: %s", b)
		}
		return
	}
	t.Fatal("raw_schema not listed")
}

func TestUpstreamSchemaBytesAreKept(t *testing.T) {
	g, _ := startGateway(t, testConfig(), map[string]*server.MCPServer{"alpha": echoServer("alpha")})
	tool, ok := g.Catalog().ByID("alpha::raw_schema")
	if !ok {
		t.Fatal("alpha::raw_schema not in catalog")
	}
	want := `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","title":"T","properties":{"n":{"type":"integer","minimum":1}},"additionalProperties":false}`
	if string(tool.Tool.RawInputSchema) != want {
		t.Fatalf("raw schema changed:\n got %s\nwant %s", tool.Tool.RawInputSchema, want)
	}
}

func TestCallTimeoutIsAToolErrorNamingTheServer(t *testing.T) {
	_, c := startGateway(t, testConfig(), map[string]*server.MCPServer{"alpha": echoServer("alpha")})
	res, text := callText(t, c, "slow", nil)
	if !res.IsError || !strings.Contains(text, "alpha::slow") || !strings.Contains(text, "300ms") {
		t.Fatalf("want isError naming alpha::slow and the timeout, got %q (isError %v)", text, res.IsError)
	}
}

func TestCallToDisconnectedServerIsAToolError(t *testing.T) {
	g, c := startGateway(t, testConfig(), map[string]*server.MCPServer{"alpha": echoServer("alpha")})
	u, _ := g.pool.Get("alpha")
	_ = u.Close()
	res, text := callText(t, c, "echo", map[string]any{"text": "x"})
	if !res.IsError || !strings.Contains(text, `"alpha"`) {
		t.Fatalf("want isError naming alpha, got %q (isError %v)", text, res.IsError)
	}
}

func TestProgressIsRelayedWithTheClientsToken(t *testing.T) {
	_, c := startGateway(t, testConfig(), map[string]*server.MCPServer{"alpha": echoServer("alpha")})
	var mu sync.Mutex
	var tokens []any
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			mu.Lock()
			tokens = append(tokens, n.Params.AdditionalFields["progressToken"])
			mu.Unlock()
		}
	})
	req := mcp.CallToolRequest{}
	req.Params.Name = "progress"
	req.Params.Meta = &mcp.Meta{ProgressToken: "client-token-7"}
	if _, err := c.CallTool(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(tokens)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(tokens) != 2 {
		t.Fatalf("got %d progress notifications, want 2", len(tokens))
	}
	for _, tok := range tokens {
		if tok != "client-token-7" {
			t.Fatalf("progress token = %v, want the client's own", tok)
		}
	}
}

func TestListChangedRefreshesCatalog(t *testing.T) {
	up := echoServer("alpha")
	g, c := startGateway(t, testConfig(), map[string]*server.MCPServer{"alpha": up})
	changed := make(chan struct{}, 4)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			changed <- struct{}{}
		}
	})
	up.AddTool(mcp.NewTool("added_later"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("late"), nil
	})
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("client got no tools/list_changed after the upstream added a tool")
	}
	if _, ok := g.Catalog().ByID("alpha::added_later"); !ok {
		t.Fatal("catalog lacks alpha::added_later")
	}
	if _, text := callText(t, c, "added_later", nil); text != "late" {
		t.Fatalf("added_later = %q", text)
	}
}

// TestClientCancellationReachesUpstream: a client that gives up on a call
// makes the gateway cancel its upstream request too, so the server stops
// working. In process the cancellation travels as the context on both hops;
// over stdio the gateway sends the upstream notifications/cancelled (see
// upstream.request), which this test does not observe on the wire.
func TestClientCancellationReachesUpstream(t *testing.T) {
	stopped := make(chan struct{})
	up := server.NewMCPServer("up", "1.0.0", server.WithToolCapabilities(true))
	up.AddTool(mcp.NewTool("wait"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		close(stopped)
		return nil, ctx.Err()
	})
	cfg := testConfig()
	cfg.Timeouts.Call = time.Minute // only the client's cancellation may end the call
	_, c := startGateway(t, cfg, map[string]*server.MCPServer{"up": up})

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "wait"
	if _, err := c.CallTool(ctx, req); err == nil {
		t.Fatal("the call returned without error although the client cancelled it")
	}
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream's handler was not cancelled within 10s of the client's cancellation")
	}
}

// TestCallToServerThatNeverListedSaysItIsDown: a configured server that
// never connected has no tools in the catalog; a call to one of its ids
// says the server is down, not that the tool is unknown. An id on a
// server that is not configured is still an unknown tool.
func TestCallToServerThatNeverListedSaysItIsDown(t *testing.T) {
	cfg := bridgeConfig()
	cfg.Timeouts.Connect = 5 * time.Second
	cfg.Servers = map[string]config.Server{"broken": {Command: filepath.Join(t.TempDir(), "no-such-server")}}
	g, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	specs := append(upstream.SpecsFromConfig(cfg), upstream.Spec{Name: "issues", InProcess: issueServer()})
	_ = g.Connect(context.Background(), specs) // broken fails; issues serves
	c := connectClient(t, g, mcp.ClientCapabilities{})
	eventually(t, "broken is reported down", func() bool {
		why, _ := g.pool.Down("broken")
		return why != "" && why != "not connected"
	})

	res, text := callText(t, c, "tool_call", map[string]any{"tool_name": "broken::do_thing"})
	if !res.IsError || !strings.Contains(text, `Server "broken" is down`) || strings.Contains(text, "Unknown tool") {
		t.Errorf("call to a tool of a down server: isError %v, %q; want it to say the server is down", res.IsError, text)
	}
	res, text = callText(t, c, "tool_call", map[string]any{"tool_name": "nosuch::do_thing"})
	if !res.IsError || !strings.Contains(text, "Unknown tool") {
		t.Errorf("call on a server that is not configured: isError %v, %q; want Unknown tool", res.IsError, text)
	}
}
