package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/toolid"
)

// issueServer is a small GitHub-like upstream with typed schemas.
func issueServer() *server.MCPServer {
	s := server.NewMCPServer("issues", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("create_issue",
		mcp.WithDescription("Create a new issue in a repository"),
		mcp.WithString("repo", mcp.Required(), mcp.Description("owner/name")),
		mcp.WithString("title", mcp.Required()),
		mcp.WithString("state", mcp.Enum("open", "closed")),
		mcp.WithNumber("priority", mcp.Min(1), mcp.Max(5)),
	), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		b, _ := json.Marshal(req.GetArguments())
		return mcp.NewToolResultText("created " + string(b)), nil
	})
	s.AddTool(mcp.NewTool("list_pull_requests", mcp.WithDescription("List open pull requests of a repository"),
		mcp.WithString("repo", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("no pull requests"), nil
		})
	// A tool that shadows a meta-tool's name must not replace it.
	s.AddTool(mcp.NewTool("tool_call", mcp.WithDescription("an upstream tool that happens to be called tool_call")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("upstream tool_call"), nil
		})
	return s
}

// fileServer has a tool in the default core set.
func fileServer() *server.MCPServer {
	s := server.NewMCPServer("files", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("read_file", mcp.WithDescription("Read a file"), mcp.WithString("path", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("contents of " + req.GetString("path", "")), nil
		})
	return s
}

func bridgeConfig() *config.Config {
	cfg := testConfig()
	cfg.Mode = config.ModeOn
	return cfg
}

func startBridge(t *testing.T, cfg *config.Config) (*Gateway, *client.Client) {
	return startGateway(t, cfg, map[string]*server.MCPServer{
		"issues": issueServer(), "files": fileServer(), "alpha": echoServer("alpha"),
	})
}

func TestBridgeModeListsCoreAndMetaToolsInStableOrder(t *testing.T) {
	_, c := startBridge(t, bridgeConfig())
	got := strings.Join(toolNames(t, c), " ")
	if want := "read_file tool_call tool_describe tool_search"; got != want {
		t.Fatalf("bridge tools/list = %s, want %s", got, want)
	}
	first, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(first.Tools)
	b, _ := json.Marshal(second.Tools)
	if string(a) != string(b) {
		t.Fatal("two tools/list calls differ: prompt caches would break")
	}
}

func TestUpstreamToolShadowingAMetaToolIsQualified(t *testing.T) {
	g, c := startBridge(t, bridgeConfig())
	tool, ok := g.Catalog().ByID("issues::tool_call")
	if !ok || tool.Exposed != "issues__tool_call" {
		t.Fatalf("issues::tool_call exposed as %+v", tool)
	}
	_, text := callText(t, c, "tool_call", map[string]any{"tool_name": "issues::tool_call"})
	if text != "upstream tool_call" {
		t.Fatalf("calling the upstream tool_call through the meta-tool: %q", text)
	}
}

func TestToolSearch(t *testing.T) {
	_, c := startBridge(t, bridgeConfig())
	tests := []struct {
		name      string
		args      map[string]any
		wantFirst string // first hit's id; "" for none
		wantText  []string
		wantError bool
	}{
		{name: "keywords", args: map[string]any{"query": "create issue"}, wantFirst: "issues::create_issue",
			wantText: []string{"issues::create_issue", "repo*: string", `state: enum["open","closed"]`}},
		{name: "exact id", args: map[string]any{"query": "issues::list_pull_requests"}, wantFirst: "issues::list_pull_requests"},
		{name: "typo", args: map[string]any{"query": "creat_isue"}, wantFirst: "issues::create_issue"},
		// A core tool is found, marked as listed already, without its
		// definition; before, "read_file" found nothing.
		{name: "core tools are found as listed", args: map[string]any{"query": "read_file"}, wantFirst: "files::read_file",
			wantText: []string{"1. read_file — already listed: call it directly"}},
		{name: "empty query browses", args: map[string]any{"query": ""}, wantText: []string{"- issues (3):", "create_issue"}},
		{name: "no match lists the catalog", args: map[string]any{"query": "zzzqqq"}, wantText: []string{"No tool matches", "- alpha ("}},
		{name: "partial match says so and lists the catalog", args: map[string]any{"query": "zzzqqq isues"}, wantFirst: "issues::create_issue",
			wantText: []string{"No tool matches \"zzzqqq isues\" as written", "1. issues::", "The catalog by server:", "- alpha ("}},
		{name: "limit as string", args: map[string]any{"query": "echo", "limit": "1"}, wantFirst: "alpha::echo"},
		{name: "query not a string", args: map[string]any{"query": 42}, wantError: true, wantText: []string{"query must be a string"}},
		{name: "limit garbage", args: map[string]any{"query": "x", "limit": []int{1}}, wantError: true, wantText: []string{"limit must be a whole number"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, text := callText(t, c, toolid.MetaSearch, tt.args)
			if res.IsError != tt.wantError {
				t.Fatalf("isError = %v, want %v: %s", res.IsError, tt.wantError, text)
			}
			for _, w := range tt.wantText {
				if !strings.Contains(text, w) {
					t.Errorf("text lacks %q:\n%s", w, text)
				}
			}
			if tt.wantError {
				return
			}
			var sr SearchResult
			b, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(b, &sr); err != nil {
				t.Fatalf("structuredContent: %v", err)
			}
			if sr.TotalDeferred != 7 { // alpha's 4 tools and issues' 3
				t.Errorf("total_deferred = %d, want 7", sr.TotalDeferred)
			}
			first := ""
			if len(sr.Tools) > 0 {
				first = sr.Tools[0].ID
			}
			if first != tt.wantFirst {
				t.Errorf("first hit = %q, want %q (%s)", first, tt.wantFirst, text)
			}
		})
	}
}

func TestToolSearchLimit(t *testing.T) {
	_, c := startBridge(t, bridgeConfig())
	tests := []struct {
		limit   any
		hits    int    // when not an error: how many hits at most (the catalog has fewer than 20)
		wantErr string // substring of the isError text
	}{
		{nil, 5, ""},
		{1, 1, ""},
		{"1", 1, ""}, // a number in a string is a common slip
		{"7", 7, ""},
		{1e30, 20, ""}, // capped at search.max_limit, as documented
		{1000, 20, ""},
		{0, 0, "limit must be a whole number from 1 to 20"},
		{-1, 0, "limit must be a whole number from 1 to 20"},
		{2.5, 0, "got 2.5"},
		{"seven", 0, "limit must be a whole number"},
		{true, 0, "limit must be a whole number"},
	}
	for _, tt := range tests {
		args := map[string]any{"query": "tool"}
		if tt.limit != nil {
			args["limit"] = tt.limit
		}
		res, text := callText(t, c, toolid.MetaSearch, args)
		if tt.wantErr != "" {
			if !res.IsError || !strings.Contains(text, tt.wantErr) {
				t.Errorf("limit %v: isError=%v %q, want an error containing %q", tt.limit, res.IsError, text, tt.wantErr)
			}
			continue
		}
		var sr SearchResult
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &sr)
		if res.IsError || len(sr.Tools) < 1 || len(sr.Tools) > tt.hits {
			t.Errorf("limit %v: isError=%v, %d hits, want 1..%d: %s", tt.limit, res.IsError, len(sr.Tools), tt.hits, text)
		}
	}
}

func TestToolDescribe(t *testing.T) {
	g, c := startBridge(t, bridgeConfig())
	res, text := callText(t, c, toolid.MetaDescribe, map[string]any{"tool_name": "alpha::raw_schema"})
	if res.IsError {
		t.Fatal(text)
	}
	// The text block carries the schema's bytes in the upstream's own key
	// order (the in-process client re-encodes structuredContent, so that
	// cannot show it).
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(text)); err != nil {
		t.Fatalf("describe text is not JSON: %v\n%s", err, text)
	}
	tool, _ := g.Catalog().ByID("alpha::raw_schema")
	if !strings.Contains(compact.String(), `"inputSchema":`+string(tool.Tool.RawInputSchema)) {
		t.Fatalf("described schema differs from the upstream's:\n got %s\nwant %s", compact.String(), tool.Tool.RawInputSchema)
	}

	res, text = callText(t, c, toolid.MetaDescribe, map[string]any{"tool_names": []string{"issues::create_issue", "nope_tool"}, "format": "openai"})
	if res.IsError || !strings.Contains(text, `"type":"function"`) || !strings.Contains(text, "Not found") {
		t.Fatalf("openai form with one unknown name: %s", text)
	}
	for _, bad := range []map[string]any{
		{},
		{"tool_name": 7},
		{"tool_names": "issues::create_issue"},
		{"tool_name": "issues::create_issue", "format": "yaml"},
		{"tool_names": make([]string, 11)},
	} {
		if res, text := callText(t, c, toolid.MetaDescribe, bad); !res.IsError {
			t.Errorf("%v: want isError, got %s", bad, text)
		}
	}
}

func TestToolCallResolvesNamesAndArguments(t *testing.T) {
	_, c := startBridge(t, bridgeConfig())
	good := map[string]any{"repo": "a/b", "title": "bug"}
	tests := []struct {
		name string
		args map[string]any
		want string // substring of the result; isError iff wantError
		err  bool
	}{
		{"canonical id", map[string]any{"tool_name": "issues::create_issue", "tool_args": good}, `created {"repo":"a/b","title":"bug"}`, false},
		{"bare name", map[string]any{"tool_name": "create_issue", "tool_args": good}, "created", false},
		{"server__tool", map[string]any{"tool_name": "issues__create_issue", "tool_args": good}, "created", false},
		{"mcp__server__tool", map[string]any{"tool_name": "mcp__issues__create_issue", "tool_args": good}, "created", false},
		{"other case", map[string]any{"tool_name": "Issues::Create_Issue", "tool_args": good}, "created", false},
		{"backticks", map[string]any{"tool_name": "`issues::create_issue`", "tool_args": good}, "created", false},
		{"quotes", map[string]any{"tool_name": `"create_issue"`, "tool_args": good}, "created", false},
		{"args as JSON string", map[string]any{"tool_name": "create_issue", "tool_args": `{"repo":"a/b","title":"bug"}`}, "created", false},
		{"flat args", map[string]any{"tool_name": "create_issue", "repo": "a/b", "title": "bug"}, "created", false},
		{"name/arguments aliases", map[string]any{"name": "create_issue", "arguments": good}, "created", false},
		{"core tool through tool_call", map[string]any{"tool_name": "read_file", "tool_args": map[string]any{"path": "/x"}}, "contents of /x", false},
		{"missing required", map[string]any{"tool_name": "create_issue", "tool_args": map[string]any{"repo": "a/b"}}, "missing property 'title'", true},
		{"wrong enum and range", map[string]any{"tool_name": "create_issue", "tool_args": map[string]any{"repo": "a/b", "title": "t", "state": "maybe", "priority": 9}}, "at /priority", true},
		{"number as a string is converted", map[string]any{"tool_name": "create_issue", "tool_args": map[string]any{"repo": "a/b", "title": "t", "priority": "3"}}, `created {"priority":3,"repo":"a/b","title":"t"}`, false},
		{"number as a string that does not parse", map[string]any{"tool_name": "create_issue", "tool_args": map[string]any{"repo": "a/b", "title": "t", "priority": "high"}}, "at /priority: got string, want number", true},
		{"converted number still range-checked", map[string]any{"tool_name": "create_issue", "tool_args": map[string]any{"repo": "a/b", "title": "t", "priority": "9"}}, "at /priority", true},
		{"schema shown on invalid args", map[string]any{"tool_name": "create_issue", "tool_args": map[string]any{}}, `"required":["repo","title"]`, true},
		{"args not an object", map[string]any{"tool_name": "create_issue", "tool_args": []int{1}}, "must be a JSON object", true},
		{"ambiguous flat and nested", map[string]any{"tool_name": "create_issue", "tool_args": good, "title": "x"}, "put every argument inside tool_args", true},
		{"unknown tool with did-you-mean", map[string]any{"tool_name": "creat_isue"}, "issues::create_issue", true},
		{"unknown tool without candidates", map[string]any{"tool_name": "qqqzzz"}, "tool_search", true},
		{"meta-tool through tool_call", map[string]any{"tool_name": "tool_search", "tool_args": map[string]any{"query": "x"}}, "call it directly", true},
		{"no tool_name", map[string]any{"tool_args": good}, "needs tool_name", true},
		{"tool_name not a string", map[string]any{"tool_name": 3}, "must be a string", true},
		{"upstream timeout", map[string]any{"tool_name": "alpha::slow"}, "did not answer within 300ms", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, text := callText(t, c, toolid.MetaCall, tt.args)
			if res.IsError != tt.err || !strings.Contains(text, tt.want) {
				t.Fatalf("got isError=%v %q\nwant isError=%v containing %q", res.IsError, text, tt.err, tt.want)
			}
		})
	}
}

func TestDirectCallOfDeferredToolIsRouted(t *testing.T) {
	_, c := startBridge(t, bridgeConfig())
	res, text := callText(t, c, "create_issue", map[string]any{"repo": "a/b", "title": "direct"})
	if res.IsError || !strings.Contains(text, `"title":"direct"`) {
		t.Fatalf("direct call of a deferred tool: isError=%v %q", res.IsError, text)
	}
	// Validated like tool_call.
	res, text = callText(t, c, "create_issue", map[string]any{"repo": "a/b"})
	if !res.IsError || !strings.Contains(text, "title") {
		t.Fatalf("direct call with bad args: isError=%v %q", res.IsError, text)
	}
}

func TestCatalogHintStaysWithinBudget(t *testing.T) {
	cfg := bridgeConfig()
	g, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	specs := []upstream.Spec{{Name: "issues", InProcess: issueServer()}, {Name: "alpha", InProcess: echoServer("alpha")}}
	if err := g.Connect(context.Background(), specs); err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	cat := g.Catalog()
	counter := g.settings().counter
	full := catalogHint(cat, cat.Deferred, cfg.Search.HintTokens, counter)
	if !strings.Contains(full, "create_issue") {
		t.Fatalf("with the default budget the hint lists names:\n%s", full)
	}
	for _, budget := range []int{60, 40} {
		hint := catalogHint(cat, cat.Deferred, budget, counter)
		if strings.Contains(hint, "create_issue") {
			t.Errorf("budget %d: hint still lists names:\n%s", budget, hint)
		}
		if n := hintTokens(counter, hint); n > budget+15 { // the header always stays
			t.Errorf("budget %d: hint is %d tokens:\n%s", budget, n, hint)
		}
	}
}

func TestActivateRevealsPerSession(t *testing.T) {
	cfg := bridgeConfig()
	cfg.Disclosure = config.DisclosureActivate
	cfg.Search.RevealLimit = 2
	g, first := startBridge(t, cfg)
	second := g.InProcessClient(ClientHandlers{})
	ctx := context.Background()
	if err := second.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	if _, err := second.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}

	callText(t, first, toolid.MetaSearch, map[string]any{"query": "create issue", "limit": 1})
	if names := toolNames(t, first); !reflect.DeepEqual(names, []string{"create_issue", "read_file", "tool_call", "tool_describe", "tool_search"}) {
		t.Fatalf("first session after search: %v", names)
	}
	if names := toolNames(t, second); len(names) != 4 {
		t.Fatalf("second session sees another session's revealed tools: %v", names)
	}
	// The revealed tool is callable directly.
	if res, text := callText(t, first, "create_issue", map[string]any{"repo": "a/b", "title": "t"}); res.IsError {
		t.Fatal(text)
	}
	// Bounded: two more reveals push the oldest out.
	callText(t, first, toolid.MetaSearch, map[string]any{"query": "pull requests", "limit": 1})
	callText(t, first, toolid.MetaSearch, map[string]any{"query": "echo text", "limit": 1})
	names := toolNames(t, first)
	if len(names) != 6 || contains(names, "create_issue") {
		t.Fatalf("after 3 reveals with limit 2: %v", names)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
