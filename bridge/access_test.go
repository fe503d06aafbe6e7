package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolbridge/toolbridge/bridge/access/accesstest"
	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/trace"
)

// teamServer is an upstream of one team: tools, a prompt, a resource and a
// resource template, every name carrying the team's words so that a leak
// shows in any answer.
func teamServer(name string, tools ...string) *server.MCPServer {
	s := server.NewMCPServer(name, "1.0.0", server.WithToolCapabilities(true),
		server.WithPromptCapabilities(true), server.WithResourceCapabilities(true, true))
	for _, tool := range tools {
		s.AddTool(mcp.NewTool(tool, mcp.WithDescription(name+" "+strings.ReplaceAll(tool, "_", " ")), mcp.WithString("x")),
			func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText(name + " ran " + tool), nil
			})
	}
	s.AddPrompt(mcp.NewPrompt(name+"_prompt", mcp.WithPromptDescription(name+" prompt")),
		func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult(name, []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(name))}), nil
		})
	s.AddResource(mcp.NewResource("mem://"+name+"/readme", name+" readme"),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: "mem://" + name + "/readme", Text: name}}, nil
		})
	s.AddResourceTemplate(mcp.NewResourceTemplate("mem://"+name+"/{id}", name+" items"),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: "mem://" + name + "/1", Text: name}}, nil
		})
	return s
}

// teamGateway is an OAuth-protected gateway over HTTP in front of the
// github (dev) and k8s (ops) servers.
type teamGateway struct {
	g     *Gateway
	url   string // the /mcp endpoint, also the audience
	iss   *accesstest.Issuer
	spans *tracetest.InMemoryExporter
	logs  *logBuffer
	audit string
	ups   map[string]*server.MCPServer
}

type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func startTeamGateway(t *testing.T, edit func(*config.Config)) *teamGateway {
	t.Helper()
	tg := &teamGateway{iss: accesstest.New(t), logs: &logBuffer{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tg.url = "http://" + ln.Addr().String() + "/mcp"
	cfg := testConfig()
	cfg.Timeouts.Call = 10 * time.Second
	cfg.StateDir = t.TempDir()
	cfg.Mode = config.ModeOn
	cfg.Disclosure = config.DisclosureActivate
	cfg.Serve.Transport = config.ServeHTTP
	cfg.Serve.OAuth = config.OAuth{Issuer: tg.iss.URL, Audience: tg.url, GroupsClaim: "groups", RequiredScopes: []string{"mcp:tools"}}
	cfg.Tools = []config.ToolRule{{Match: "github::list_issues", Class: config.ClassCore}, {Match: "k8s::get_pods", Class: config.ClassCore}}
	cfg.Access = []config.AccessRule{
		{Groups: []string{"dev"}, Allow: []string{"github::*"}},
		{Groups: []string{"ops"}, Allow: []string{"k8s::*"}, Deny: []string{"k8s::drain_node"}},
	}
	tg.audit = filepath.Join(t.TempDir(), "audit.jsonl")
	cfg.Audit.File = tg.audit
	if edit != nil {
		edit(cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	tg.spans = tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tg.spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	logger := slog.New(slog.NewJSONHandler(tg.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	g, err := New(cfg, Options{Telemetry: trace.New(tp, sdkmetric.NewMeterProvider()), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	tg.ups = map[string]*server.MCPServer{
		"github": teamServer("github", "create_issue", "list_issues", "close_issue", "merge_pull_request"),
		"k8s":    teamServer("k8s", "get_pods", "delete_pod", "scale_deployment", "drain_node"),
	}
	specs := []upstream.Spec{{Name: "github", InProcess: tg.ups["github"]}, {Name: "k8s", InProcess: tg.ups["k8s"]}}
	if err := g.Connect(context.Background(), specs); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- g.ServeHTTP(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		<-served
		_ = g.Close()
		// The test's requests and the validator's fetches of the issuer's
		// keys use the default transport: close what they keep alive.
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	})
	tg.g = g
	return tg
}

// client connects with token as its bearer token.
func (tg *teamGateway) client(t *testing.T, token string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(tg.url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// everything renders a result or error as text, for leak checks.
func everything(v any, err error) string {
	b, _ := json.Marshal(v)
	if err != nil {
		return string(b) + " error: " + err.Error()
	}
	return string(b)
}

// TestAccessEveryPath is the table: two identities, in group dev
// and group ops, each see only their team's server on every path, and a
// hidden tool is answered exactly like one that does not exist.
func TestAccessEveryPath(t *testing.T) {
	tg := startTeamGateway(t, nil)
	type team struct {
		group, own, other  string
		ownCore, otherCore string // the core (listed) tool of each
		ownDeferred        string // a deferred tool of its own
		otherDeferred      string
		otherQuery         string // matches only the other team's tools
		otherWords         []string
		deferred           int // how many deferred tools the caller may see
	}
	teams := []team{
		{group: "dev", own: "github", other: "k8s", ownCore: "list_issues", otherCore: "get_pods",
			ownDeferred: "create_issue", otherDeferred: "delete_pod", otherQuery: "pods deployment node",
			otherWords: []string{"k8s", "pod", "deployment", "drain", "node"}, deferred: 3},
		{group: "ops", own: "k8s", other: "github", ownCore: "get_pods", otherCore: "list_issues",
			ownDeferred: "delete_pod", otherDeferred: "create_issue", otherQuery: "issue pull request merge",
			otherWords: []string{"github", "issue", "pull", "merge"}, deferred: 2},
	}
	ctx := context.Background()
	for _, tm := range teams {
		t.Run(tm.group, func(t *testing.T) {
			token := tg.iss.Mint(t, tm.group+"-user@example.com", tg.url, []string{tm.group}, "mcp:tools")
			c := tg.client(t, token)
			var seen []string // every answer, for the leak check at the end
			// noLeak checks an answer, less the caller's own words it
			// echoes back.
			noLeak := func(path, text string, echoes ...string) {
				t.Helper()
				for _, e := range echoes {
					if e != "" {
						text = strings.ReplaceAll(text, e, "ECHO")
					}
				}
				seen = append(seen, text)
				for _, w := range tm.otherWords {
					if strings.Contains(strings.ToLower(text), w) {
						t.Errorf("%s shows %q of the other team's server:\n%s", path, w, clip(text, 2000))
					}
				}
			}

			// tools/list, with the catalog hint in tool_search's description.
			list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			noLeak("tools/list", listedText(list))
			names := map[string]bool{}
			for _, tool := range list.Tools {
				names[tool.Name] = true
			}
			if !names[tm.ownCore] || !names["tool_search"] || names[tm.otherCore] {
				t.Errorf("tools/list = %v, want %s and the meta-tools, not %s", names, tm.ownCore, tm.otherCore)
			}

			// tool_search: a query matching only the other team's tools,
			// an empty query (the catalog by server), one of its own.
			for _, q := range []string{tm.otherQuery, "", tm.otherDeferred, tm.other} {
				res, err := c.CallTool(ctx, callReq("tool_search", map[string]any{"query": q}))
				noLeak("tool_search "+q, everything(res, err), `\"`+q+`\"`)
			}
			res, err := c.CallTool(ctx, callReq("tool_search", map[string]any{"query": strings.ReplaceAll(tm.ownDeferred, "_", " ")}))
			text := everything(res, err)
			noLeak("tool_search own", text)
			if !strings.Contains(text, tm.own+"::"+tm.ownDeferred) {
				t.Errorf("tool_search does not find the caller's own %s: %s", tm.ownDeferred, clip(text, 500))
			}
			// The answer counts only the caller's tools.
			var sr SearchResult
			if b, _ := json.Marshal(res.StructuredContent); json.Unmarshal(b, &sr) != nil || sr.TotalDeferred != tm.deferred {
				t.Errorf("total_deferred = %d, want %d (the caller's own)", sr.TotalDeferred, tm.deferred)
			}

			// disclosure: activate revealed only what the caller may see.
			list, err = c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			noLeak("tools/list after search", listedText(list))

			// tool_describe, tool_call, direct calls: a hidden tool is
			// answered as a made-up one of the same shape.
			unknown := func(name string) string { return strings.ReplaceAll(name, tm.other, "nosuch") }
			for _, id := range []string{tm.other + "::" + tm.otherDeferred, tm.other + "::" + tm.otherCore, tm.otherDeferred, tm.otherCore} {
				for _, meta := range []string{"tool_describe", "tool_call"} {
					hidden, err1 := c.CallTool(ctx, callReq(meta, map[string]any{"tool_name": id}))
					made, err2 := c.CallTool(ctx, callReq(meta, map[string]any{"tool_name": unknown(id) + "_zz"}))
					h, m := everything(hidden, err1), everything(made, err2)
					noLeak(meta+" "+id, strings.ReplaceAll(h, id, "ID"))
					if !hidden.IsError || strings.ReplaceAll(h, id, "ID") != strings.ReplaceAll(m, unknown(id)+"_zz", "ID") {
						t.Errorf("%s %s is not answered like an unknown tool:\n hidden: %s\nunknown: %s", meta, id, h, m)
					}
				}
			}
			for _, name := range []string{tm.otherCore, tm.otherDeferred} {
				_, errHidden := c.CallTool(ctx, callReq(name, nil))
				_, errMade := c.CallTool(ctx, callReq("nosuch_"+name, nil))
				if errHidden == nil || errMade == nil || strings.ReplaceAll(errHidden.Error(), name, "N") != strings.ReplaceAll(errMade.Error(), "nosuch_"+name, "N") {
					t.Errorf("direct call of hidden %s: %v; of an unknown tool: %v", name, errHidden, errMade)
				}
			}
			// The caller's own tools run, directly and through tool_call.
			res, text = callText(t, c, tm.ownCore, nil)
			if res.IsError || !strings.Contains(text, tm.own+" ran "+tm.ownCore) {
				t.Errorf("own core tool: %s", text)
			}
			res, text = callText(t, c, "tool_call", map[string]any{"tool_name": tm.own + "::" + tm.ownDeferred})
			if res.IsError || !strings.Contains(text, tm.own+" ran "+tm.ownDeferred) {
				t.Errorf("own deferred tool: %s", text)
			}

			// prompts, resources, templates and completions of the hidden server.
			prompts, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
			noLeak("prompts/list", everything(prompts, err))
			if err != nil || len(prompts.Prompts) != 1 {
				t.Errorf("prompts/list = %v, %v; want the caller's one prompt", everything(prompts, nil), err)
			}
			gp := mcp.GetPromptRequest{}
			gp.Params.Name = tm.other + "_prompt"
			_, errHidden := c.GetPrompt(ctx, gp)
			gp.Params.Name = "nosuch_prompt"
			_, errMade := c.GetPrompt(ctx, gp)
			if errHidden == nil || strings.ReplaceAll(errHidden.Error(), tm.other+"_prompt", "P") != strings.ReplaceAll(errMade.Error(), "nosuch_prompt", "P") {
				t.Errorf("prompts/get of a hidden prompt: %v; of an unknown one: %v", errHidden, errMade)
			}
			resources, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
			noLeak("resources/list", everything(resources, err))
			if err != nil || len(resources.Resources) != 1 {
				t.Errorf("resources/list = %s, %v; want the caller's one resource", everything(resources, nil), err)
			}
			templates, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
			noLeak("resources/templates/list", everything(templates, err))
			rr := mcp.ReadResourceRequest{}
			rr.Params.URI = "mem://" + tm.other + "/readme"
			read, err := c.ReadResource(ctx, rr)
			if err == nil {
				t.Errorf("resources/read of the hidden server's resource answered: %s", everything(read, nil))
			} else if !strings.Contains(err.Error(), "resource not found") {
				t.Errorf("resources/read of a hidden resource: %v, want resource not found", err)
			}
			comp := mcp.CompleteRequest{}
			comp.Params.Ref = mcp.PromptReference{Type: "ref/prompt", Name: tm.other + "_prompt"}
			comp.Params.Argument.Name = "a"
			done, err := c.Complete(ctx, comp)
			noLeak("completion/complete", everything(done, err))

			_ = seen
		})
	}

	// The audit log and the spans name the caller, never a token.
	audit, err := os.ReadFile(tg.audit)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(audit), `"subject":"dev-user@example.com"`) || !strings.Contains(string(audit), `"subject":"ops-user@example.com"`) {
		t.Errorf("the audit log does not name the callers:\n%s", audit)
	}
	found := false
	for _, s := range tg.spans.GetSpans() {
		if attr(s, "enduser.id") == "dev-user@example.com" {
			found = true
		}
	}
	if !found {
		t.Error("no span carries enduser.id")
	}
}

// listedText is what a tools/list shows of the catalog: the tools other
// than the meta-tools, and the catalog hint in tool_search's description
// (the meta-tools' own text has fixed examples).
func listedText(list *mcp.ListToolsResult) string {
	var b strings.Builder
	for _, tool := range list.Tools {
		switch {
		case tool.Name == "tool_search":
			_, hint, _ := strings.Cut(tool.Description, "\n\n")
			b.WriteString(hint + "\n")
		case metaNames[tool.Name]:
		default:
			b.WriteString(everything(tool, nil) + "\n")
		}
	}
	return b.String()
}

func callReq(name string, args map[string]any) mcp.CallToolRequest {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	return req
}

// TestProtectedResource: the RFC 9728 metadata, the 401 that points at
// it, the 403 that asks for a scope, and every bad token refused without
// any token reaching a log, span or audit line.
func TestProtectedResource(t *testing.T) {
	tg := startTeamGateway(t, nil)
	base := strings.TrimSuffix(tg.url, "/mcp")
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		var meta map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&meta)
		resp.Body.Close()
		if resp.StatusCode != 200 || meta["resource"] != tg.url || fmt.Sprint(meta["authorization_servers"]) != "["+tg.iss.URL+"]" ||
			fmt.Sprint(meta["scopes_supported"]) != "[mcp:tools]" {
			t.Errorf("GET %s: %d %v", path, resp.StatusCode, meta)
		}
	}
	post := func(token string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, tg.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	wantMeta := `resource_metadata="` + base + `/.well-known/oauth-protected-resource/mcp"`
	resp := post("")
	if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != "Bearer "+wantMeta {
		t.Errorf("no token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	now := time.Now()
	bad := map[string]string{
		"expired":      tg.iss.MintClaims(t, accesstest.Claims{"sub": "x", "aud": tg.url, "scope": "mcp:tools", "exp": now.Add(-time.Hour).Unix()}),
		"nbf":          tg.iss.MintClaims(t, accesstest.Claims{"sub": "x", "aud": tg.url, "scope": "mcp:tools", "nbf": now.Add(time.Hour).Unix()}),
		"upstream aud": tg.iss.Mint(t, "x", "https://api.github.example/mcp", []string{"dev"}, "mcp:tools"),
		"wrong iss":    tg.iss.MintClaims(t, accesstest.Claims{"sub": "x", "aud": tg.url, "scope": "mcp:tools", "iss": "https://evil.example"}),
		"garbage":      "garbage-token-value",
	}
	var tokens []string
	for name, tok := range bad {
		tokens = append(tokens, tok)
		resp := post(tok)
		h := resp.Header.Get("WWW-Authenticate")
		if resp.StatusCode != 401 || !strings.Contains(h, wantMeta) || !strings.Contains(h, `error="invalid_token"`) {
			t.Errorf("%s: %d %q", name, resp.StatusCode, h)
		}
	}
	noScope := tg.iss.Mint(t, "x", tg.url, []string{"dev"}, "openid")
	tokens = append(tokens, noScope)
	resp = post(noScope)
	if h := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 403 || !strings.Contains(h, `error="insufficient_scope"`) || !strings.Contains(h, `scope="mcp:tools"`) {
		t.Errorf("token without the scope: %d %q", resp.StatusCode, h)
	}
	good := tg.iss.Mint(t, "dev-user@example.com", tg.url, []string{"dev"}, "mcp:tools")
	tokens = append(tokens, good)
	c := tg.client(t, good)
	if res, text := callText(t, c, "list_issues", nil); res.IsError {
		t.Fatalf("call with a good token: %s", text)
	}
	// /readyz names the upstreams: without a token, a probe learns only
	// whether the gateway is ready; a bad token is refused.
	r, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 200 || strings.TrimSpace(string(body)) != `{"ready":true}` {
		t.Errorf("/readyz without a token: %d %s, want 200 and the status alone", r.StatusCode, body)
	}
	for tok, want := range map[string]int{"not-a-jwt": 401, good: 200} {
		req, _ := http.NewRequest(http.MethodGet, base+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != want || (want == 200 && !strings.Contains(string(body), `"servers"`)) {
			t.Errorf("/readyz with a good token (%v): %d %s, want %d (and the servers with a good one)", tok == good, r.StatusCode, body, want)
		}
	}

	// The status page shows every caller's activity: not without a token,
	// and not at all while access rules are in force.
	for tok, want := range map[string]int{"": 401, good: 403} {
		req, _ := http.NewRequest(http.MethodGet, base+"/ui/", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != want {
			t.Errorf("GET /ui/ with token %v: %d, want %d", tok != "", r.StatusCode, want)
		}
	}

	// No token, and no token's signature, in any log, span or audit line.
	audit, _ := os.ReadFile(tg.audit)
	var spans strings.Builder
	for _, s := range tg.spans.GetSpans() {
		fmt.Fprintf(&spans, "%s %v %v\n", s.Name, s.Attributes, s.Events)
	}
	for _, tok := range tokens {
		parts := strings.Split(tok, ".")
		for where, text := range map[string]string{"log": tg.logs.String(), "audit": string(audit), "spans": spans.String()} {
			for _, p := range append(parts, tok) {
				if len(p) > 16 && strings.Contains(text, p) {
					t.Errorf("the %s holds a token (part %q...)", where, p[:16])
				}
			}
		}
	}
	if !strings.Contains(tg.logs.String(), "refused an access token") {
		t.Error("refused tokens are not logged at debug (the test would not see a leak)")
	}
}

// TestInFlightPerIdentity: sessionless callers of different identities no
// longer share one max_in_flight counter; one caller's slow calls do not
// starve another.
func TestInFlightPerIdentity(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 8)
	up := server.NewMCPServer("up", "1.0.0", server.WithToolCapabilities(true))
	up.AddTool(mcp.NewTool("block"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return mcp.NewToolResultText("done"), nil
	})
	up.AddTool(mcp.NewTool("quick"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("quick"), nil
	})
	g, err := New(func() *config.Config {
		c := testConfig()
		c.Serve.MaxInFlight = 2
		c.Timeouts.Call = 10 * time.Second
		return c
	}(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Connect(context.Background(), []upstream.Spec{{Name: "up", InProcess: up}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	// In process and without a session: each call's context carries its
	// identity, as the HTTP middleware gives it.
	h := g.srv.HandleMessage
	call := func(sub, tool string) string {
		ctx := accessContext(sub)
		msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q}}`, tool)
		out, _ := json.Marshal(h(ctx, []byte(msg)))
		return string(out)
	}
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	_ = h(context.Background(), []byte(init))
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { call("alice", "block") })
	}
	<-started
	<-started
	if out := call("alice", "quick"); !strings.Contains(out, "max_in_flight") {
		t.Errorf("alice's third call: %s, want the max_in_flight refusal", out)
	}
	if out := call("bob", "quick"); strings.Contains(out, "max_in_flight") || !strings.Contains(out, "quick") {
		t.Errorf("bob's call was refused for alice's calls: %s", out)
	}
	close(release)
	wg.Wait()
}

// TestAccessRulesReload: a reload (what SIGHUP does) changes what a
// caller sees at once, with the issuer's keys kept warm.
func TestAccessRulesReload(t *testing.T) {
	tg := startTeamGateway(t, nil)
	c := tg.client(t, tg.iss.Mint(t, "dev-user", tg.url, []string{"dev"}, "mcp:tools"))
	if _, text := callText(t, c, "tool_describe", map[string]any{"tool_name": "k8s::delete_pod"}); !strings.Contains(text, "Unknown tool") {
		t.Fatalf("before the reload dev sees k8s: %s", text)
	}
	cfg := *tg.g.settings().cfg
	cfg.Access = []config.AccessRule{{Groups: []string{"dev"}, Allow: []string{"github::*", "k8s::delete_pod"}}}
	specs := []upstream.Spec{
		{Name: "github", InProcess: teamServer("github", "create_issue", "list_issues", "close_issue", "merge_pull_request")},
		{Name: "k8s", InProcess: teamServer("k8s", "get_pods", "delete_pod", "scale_deployment", "drain_node")},
	}
	if _, err := tg.g.Reload(context.Background(), &cfg, specs); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if res, text := callText(t, c, "tool_describe", map[string]any{"tool_name": "k8s::delete_pod"}); res.IsError {
		t.Fatalf("after the reload dev does not see k8s::delete_pod: %s", text)
	}
	if _, text := callText(t, c, "tool_describe", map[string]any{"tool_name": "k8s::drain_node"}); !strings.Contains(text, "Unknown tool") {
		t.Fatalf("after the reload dev sees more than the new rule allows: %s", text)
	}
	if n := tg.iss.JWKSFetches.Load(); n != 1 {
		t.Errorf("the JWKS was fetched %d times, want once (the validator survives a reload)", n)
	}
}

// TestSessionFollowsTheSubject: a 2025-11-25 session is bound to who the
// token names: the same caller with a fresh token keeps it, another
// caller's valid token gets the 404 of an unknown session.
func TestSessionFollowsTheSubject(t *testing.T) {
	tg := startTeamGateway(t, nil)
	var mu sync.Mutex
	token := tg.iss.Mint(t, "dev-user", tg.url, []string{"dev"}, "mcp:tools")
	c, err := client.NewStreamableHttpClient(tg.url, transport.WithHTTPHeaderFunc(func(context.Context) map[string]string {
		mu.Lock()
		defer mu.Unlock()
		return map[string]string{"Authorization": "Bearer " + token}
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	setToken := func(tok string) {
		mu.Lock()
		token = tok
		mu.Unlock()
	}
	// A refreshed token of the same caller: the session goes on.
	setToken(tg.iss.MintEC(t, accesstest.Claims{"sub": "dev-user", "aud": tg.url, "groups": []string{"dev"}, "scope": "mcp:tools"}))
	if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		t.Fatalf("the same caller with a fresh token lost the session: %v", err)
	}
	// Another caller's valid token on this session: refused as unknown.
	setToken(tg.iss.Mint(t, "ops-user", tg.url, []string{"ops"}, "mcp:tools"))
	if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err == nil {
		t.Fatal("another caller's token was served on dev-user's session")
	}
}

// TestListChangedPerCaller: a change to tools only ops can see tells ops'
// session (tools/list_changed) and not dev's.
func TestListChangedPerCaller(t *testing.T) {
	tg := startTeamGateway(t, nil)
	ctx := context.Background()
	connect := func(group string) *atomic.Int64 {
		var n atomic.Int64
		tok := tg.iss.Mint(t, group+"-user", tg.url, []string{group}, "mcp:tools")
		c, err := client.NewStreamableHttpClient(tg.url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + tok}),
			transport.WithContinuousListening())
		if err != nil {
			t.Fatal(err)
		}
		c.OnNotification(func(n2 mcp.JSONRPCNotification) {
			if n2.Method == string(mcp.MethodNotificationToolsListChanged) {
				n.Add(1)
			}
		})
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		init := mcp.InitializeRequest{}
		init.Params.ProtocolVersion = "2025-11-25"
		res, err := c.Initialize(ctx, init)
		if err != nil {
			t.Fatal(err)
		}
		if res.Capabilities.Tools == nil || !res.Capabilities.Tools.ListChanged {
			t.Fatalf("initialize does not declare tools listChanged: %+v", res.Capabilities.Tools)
		}
		return &n
	}
	dev, ops := connect("dev"), connect("ops")
	time.Sleep(200 * time.Millisecond) // the GET streams open
	tg.ups["k8s"].AddTool(mcp.NewTool("restart_pod", mcp.WithDescription("k8s restart pod")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	})
	deadline := time.Now().Add(30 * time.Second)
	for ops.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if ops.Load() == 0 {
		t.Fatal("ops was not told of a change to its tools")
	}
	time.Sleep(300 * time.Millisecond) // give a wrong notification time to arrive
	if n := dev.Load(); n != 0 {
		t.Errorf("dev got %d tools/list_changed for a change to ops' tools only", n)
	}
}
