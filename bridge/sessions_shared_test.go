package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/state"
	"github.com/toolbridge/toolbridge/bridge/state/statetest"
	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
)

// lockedLog is a log sink the gateways and the test share.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// replicas serves n gateways over real HTTP on 127.0.0.1, each with its
// own Store on the one real server redis (Redis or Valkey), as n replicas
// behind a load balancer, and returns their /mcp URLs.
func replicas(t *testing.T, redis *statetest.Server, n int, cfg *config.Config, upstreams func() map[string]*server.MCPServer) (urls []string, logs *lockedLog) {
	t.Helper()
	urls, _, logs = replicaGateways(t, redis, n, cfg, upstreams)
	return urls, logs
}

// replicaGateways is replicas, with the gateways.
func replicaGateways(t *testing.T, redis *statetest.Server, n int, cfg *config.Config, upstreams func() map[string]*server.MCPServer) (urls []string, gateways []*Gateway, logs *lockedLog) {
	t.Helper()
	logs = &lockedLog{}
	cfg.StateDir = t.TempDir()
	cfg.Redis = config.Redis{URL: redis.URL(), KeyPrefix: "tb-test:"}
	for range n {
		log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		st, err := state.Open(t.Context(), cfg.Redis, false, log)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		g, err := New(cfg, Options{State: st, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		var specs []upstream.Spec
		for name, s := range upstreams() {
			specs = append(specs, upstream.Spec{Name: name, InProcess: s})
		}
		if err := g.Connect(context.Background(), specs); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = g.Close() })
		srv := httptest.NewServer(g.HTTPHandler())
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL+"/mcp")
		gateways = append(gateways, g)
	}
	return urls, gateways, logs
}

// rpcResult is the JSON-RPC answer in a response body, plain JSON or SSE.
func rpcResult(t *testing.T, body string) (result json.RawMessage, rpcErr *struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}) {
	t.Helper()
	for _, line := range append([]string{body}, strings.Split(body, "\n")...) {
		line = strings.TrimPrefix(strings.TrimSpace(line), "data: ")
		var msg struct {
			ID     any             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(line), &msg) == nil && (msg.Result != nil || msg.Error != nil) {
			return msg.Result, msg.Error
		}
	}
	t.Fatalf("no JSON-RPC answer in %q", body)
	return nil, nil
}

func callBody(id int, tool string, args map[string]any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	return string(b)
}

// listedNames is the tool names in a tools/list answer.
func listedNames(t *testing.T, a rawAnswer) []string {
	t.Helper()
	if a.status != http.StatusOK {
		t.Fatalf("tools/list: %d %s", a.status, a.body)
	}
	res, rpcErr := rpcResult(t, a.body)
	if rpcErr != nil {
		t.Fatalf("tools/list: %+v", rpcErr)
	}
	var list mcp.ListToolsResult
	if err := json.Unmarshal(res, &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// toolText is the text of a tools/call answer, and whether it is an error.
func toolText(t *testing.T, a rawAnswer) (string, bool) {
	t.Helper()
	if a.status != http.StatusOK {
		t.Fatalf("tools/call: %d %s", a.status, a.body)
	}
	res, rpcErr := rpcResult(t, a.body)
	if rpcErr != nil {
		t.Fatalf("tools/call: %+v", rpcErr)
	}
	var r struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, c := range r.Content {
		text = append(text, c.Text)
	}
	return strings.Join(text, "\n"), r.IsError
}

// TestSessionsAcrossReplicas: with redis.url, a 2025-11-25 session opened
// on replica A works on replica B (list, search, call, the tools revealed
// on A), stays bound to its principal, and a DELETE on B ends it on A. A
// forged id is 404 on both. Without the shared table, B answered 404 to
// every request of A's session.
func TestSessionsAcrossReplicas(t *testing.T) { statetest.ForEach(t, testSessionsAcrossReplicas) }

func testSessionsAcrossReplicas(t *testing.T, srv *statetest.Server) {
	cfg := bridgeConfig()
	cfg.Disclosure = config.DisclosureActivate
	urls, _ := replicas(t, srv, 2, cfg, func() map[string]*server.MCPServer {
		return map[string]*server.MCPServer{"issues": issueServer(), "files": fileServer(), "alpha": echoServer("alpha")}
	})
	a, b := urls[0], urls[1]
	const alice = "Bearer alice"
	sid := openSession(t, a, alice)

	if names := listedNames(t, rawHTTP{session: sid, auth: alice, body: listBody}.do(t, b)); !slices.Equal(names, []string{"read_file", "tool_call", "tool_describe", "tool_search"}) {
		t.Fatalf("tools/list on B with A's session: %v", names)
	}
	text, isErr := toolText(t, rawHTTP{session: sid, auth: alice, body: callBody(3, "tool_search", map[string]any{"query": "echo text", "limit": 1})}.do(t, b))
	if isErr || !strings.Contains(text, "alpha::echo") {
		t.Fatalf("tool_search on B: %s", text)
	}
	text, isErr = toolText(t, rawHTTP{session: sid, auth: alice, body: callBody(4, "tool_call", map[string]any{"tool_name": "alpha::echo", "tool_args": map[string]any{"text": "hi"}})}.do(t, b))
	if isErr || !strings.Contains(text, "alpha:hi") {
		t.Fatalf("tool_call on B: %s", text)
	}
	// tool_search on B revealed alpha's echo (disclosure: activate): A lists it.
	if names := listedNames(t, rawHTTP{session: sid, auth: alice, body: listBody}.do(t, a)); !slices.Contains(names, "echo") {
		t.Fatalf("the tool revealed on B is missing from A's list: %v", names)
	}
	// ... and a reveal on A shows on B.
	toolText(t, rawHTTP{session: sid, auth: alice, body: callBody(5, "tool_search", map[string]any{"query": "create issue", "limit": 1})}.do(t, a))
	if names := listedNames(t, rawHTTP{session: sid, auth: alice, body: listBody}.do(t, b)); !slices.Contains(names, "echo") || !slices.Contains(names, "create_issue") {
		t.Fatalf("the tools revealed on A and B, listed on B: %v", names)
	}
	// The revealed tool is callable directly on either replica.
	if text, isErr := toolText(t, rawHTTP{session: sid, auth: alice, body: callBody(6, "create_issue", map[string]any{"repo": "a/b", "title": "t"})}.do(t, b)); isErr {
		t.Fatalf("calling a revealed tool on B: %s", text)
	}

	// Another session (same principal) sees none of them.
	other := openSession(t, b, alice)
	if names := listedNames(t, rawHTTP{session: other, auth: alice, body: listBody}.do(t, a)); len(names) != 4 {
		t.Fatalf("another session sees this one's revealed tools: %v", names)
	}

	for _, url := range urls {
		for name, req := range map[string]rawHTTP{
			"another principal": {session: sid, auth: "Bearer bob", body: listBody},
			"no credential":     {session: sid, body: listBody},
			"a forged id":       {session: "mcp-session-" + strings.Repeat("A", 26), auth: alice, body: listBody},
		} {
			if got := req.do(t, url); got.status != http.StatusNotFound {
				t.Errorf("%s on %s: %d %s, want 404", name, url, got.status, got.body)
			}
		}
	}

	if got := (rawHTTP{method: http.MethodDelete, session: sid, auth: alice}).do(t, b); got.status != http.StatusOK {
		t.Fatalf("DELETE on B: %d %s", got.status, got.body)
	}
	for _, url := range urls {
		if got := (rawHTTP{session: sid, auth: alice, body: listBody}).do(t, url); got.status != http.StatusNotFound {
			t.Errorf("after DELETE on B, %s answers %d, want 404", url, got.status)
		}
	}
	if got := (rawHTTP{session: other, auth: alice, body: listBody}).do(t, a); got.status != http.StatusOK {
		t.Errorf("ending one session ended another: %d", got.status)
	}
}

// TestSessionClientStateAcrossReplicas: what initialize and
// logging/setLevel told replica A reaches replica B. The client declared
// elicitation on A; on B, policy.destructive: confirm asks it (the
// elicitation request arrives on B's answer stream and the client's
// answer, posted to B, lets the call run). Without the shared
// capabilities, B refused the call because "this client cannot ask the
// user".
func TestSessionClientStateAcrossReplicas(t *testing.T) {
	statetest.ForEach(t, testSessionClientStateAcrossReplicas)
}

func testSessionClientStateAcrossReplicas(t *testing.T, redis *statetest.Server) {
	cfg := testConfig()
	cfg.Policy.Destructive = config.DestructiveConfirm
	urls, _ := replicas(t, redis, 2, cfg, func() map[string]*server.MCPServer {
		return map[string]*server.MCPServer{"alpha": echoServer("alpha")}
	})
	a, b := urls[0], urls[1]
	const alice = "Bearer alice"
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"replica-test","version":"7"}}}`
	ans := rawHTTP{body: init, auth: alice}.do(t, a)
	sid := ans.session
	if ans.status != http.StatusOK || sid == "" {
		t.Fatalf("initialize on A: %d %s", ans.status, ans.body)
	}
	if got := (rawHTTP{session: sid, auth: alice, body: `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}}`}).do(t, a); got.status != http.StatusOK {
		t.Fatalf("setLevel on A: %d %s", got.status, got.body)
	}

	// The call on B: its answer is an SSE stream that first carries the
	// elicitation request.
	req, err := http.NewRequest(http.MethodPost, b, strings.NewReader(callBody(3, "echo", map[string]any{"text": "careful"})))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		mcp.HeaderProtocolVersion: "2025-11-25", sessionIDHeader: sid, "Authorization": alice} {
		req.Header.Set(k, v)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := bufio.NewScanner(resp.Body)
	next := func() map[string]any {
		for events.Scan() {
			line, ok := strings.CutPrefix(events.Text(), "data: ")
			if !ok {
				if strings.HasPrefix(events.Text(), "{") {
					line = events.Text() // a plain JSON answer
				} else {
					continue
				}
			}
			var msg map[string]any
			if err := json.Unmarshal([]byte(line), &msg); err != nil {
				t.Fatalf("bad event %q: %v", line, err)
			}
			return msg
		}
		t.Fatalf("the stream ended: %v", events.Err())
		return nil
	}
	msg := next()
	if msg["method"] != string(mcp.MethodElicitationCreate) {
		t.Fatalf("B did not ask the client to confirm (it did not know the client can elicit): %v", msg)
	}
	answer, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msg["id"], "result": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}})
	if got := (rawHTTP{session: sid, auth: alice, body: string(answer)}).do(t, b); got.status != http.StatusAccepted {
		t.Fatalf("posting the elicitation answer to B: %d %s", got.status, got.body)
	}
	msg = next()
	res, _ := json.Marshal(msg["result"])
	if !strings.Contains(string(res), "alpha:careful") {
		t.Fatalf("the confirmed call on B: %v", msg)
	}

	// An answer that reaches a replica with nothing pending for it (the
	// balancer did not stick the session) is refused with 409 saying so,
	// not 404, which would tell the client its session is gone.
	stray := `{"jsonrpc":"2.0","id":12345,"result":{"action":"accept","content":{"confirm":true}}}`
	if got := (rawHTTP{session: sid, auth: alice, body: stray}).do(t, b); got.status != http.StatusConflict || !strings.Contains(got.body, "Mcp-Session-Id") {
		t.Errorf("an answer B did not ask for: %d %s; want 409 naming the stickiness", got.status, got.body)
	}
	// The same while the session has a stream open on B: mcp-go then
	// answers 400 ("no pending request"), not 404, and which one a stray
	// answer met depended on whether B's last stream had closed yet.
	stream := openStream(ctx, t, b, sid, alice)
	if got := (rawHTTP{session: sid, auth: alice, body: stray}).do(t, b); got.status != http.StatusConflict || !strings.Contains(got.body, "Mcp-Session-Id") {
		t.Errorf("an answer B did not ask for, with a stream open on B: %d %s; want 409 naming the stickiness", got.status, got.body)
	}
	_ = stream.Body.Close()
	if got := (rawHTTP{session: sid, auth: alice, body: listBody}).do(t, b); got.status != http.StatusOK {
		t.Errorf("the session after a stray answer: %d", got.status)
	}

	// The level and the client's info are in the shared table for the
	// next replica; they were not known to B's mcp-go otherwise.
	st, err := state.Open(t.Context(), config.Redis{URL: redis.URL(), KeyPrefix: "tb-test:"}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fields, err := st.Sessions(time.Hour, 0).Touch(t.Context(), sid, principalOf(&http.Request{Header: http.Header{"Authorization": {alice}}}))
	if err != nil {
		t.Fatal(err)
	}
	if fields[fieldLevel] != "debug" || !strings.Contains(fields[fieldClientInfo], "replica-test") || !strings.Contains(fields[fieldCaps], "elicitation") || fields[fieldVersion] != "2025-11-25" {
		t.Errorf("shared fields = %v", fields)
	}
}

// TestSessionsWhenRedisFails: with Redis killed, a request on a session
// and an initialize get a prompt 503 whose JSON-RPC error names Redis
// (not a 404 that would make the client drop its session, not a hang); a
// 2026-07-28 request and /healthz are still served; the outage is logged
// once. Once Redis is back, empty, the old session is 404 and a new
// initialize works, on either replica.
func TestSessionsWhenRedisFails(t *testing.T) { statetest.ForEach(t, testSessionsWhenRedisFails) }

func testSessionsWhenRedisFails(t *testing.T, redis *statetest.Server) {
	urls, logs := replicas(t, redis, 2, testConfig(), func() map[string]*server.MCPServer {
		return map[string]*server.MCPServer{"alpha": echoServer("alpha")}
	})
	a, b := urls[0], urls[1]
	const alice = "Bearer alice"
	sid := openSession(t, a, alice)
	redis.Kill()

	modern := `{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	for _, url := range urls {
		for name, req := range map[string]rawHTTP{
			"a request on a session": {session: sid, auth: alice, body: listBody},
			"initialize":             {auth: alice, body: initializeBody},
			"DELETE":                 {method: http.MethodDelete, session: sid, auth: alice},
		} {
			got := req.do(t, url) // do fails the test after 10 s: no hang
			if got.status != http.StatusServiceUnavailable {
				t.Errorf("%s with Redis down: %d %s, want 503", name, got.status, got.body)
				continue
			}
			var msg struct {
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(got.body), &msg); err != nil || !strings.Contains(msg.Error.Message, "Redis") || msg.Error.Code == 0 {
				t.Errorf("%s with Redis down: the answer is not a JSON-RPC error naming Redis: %s", name, got.body)
			}
		}
		if status, body := modernList(t, url, alice, modern); status != http.StatusOK || !strings.Contains(body, `"tools"`) {
			t.Errorf("a 2026-07-28 request with Redis down: %d %s", status, body)
		}
		health, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/healthz")
		if err != nil || health.StatusCode != http.StatusOK {
			t.Errorf("/healthz with Redis down: %v %v", health, err)
		}
		if health != nil {
			health.Body.Close()
		}
	}
	// One line per replica (each has its own Store), not one per request.
	if n := strings.Count(logs.String(), "Redis is unavailable"); n != 2 {
		t.Errorf("the outage was logged %d times for 2 replicas:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), sid) || strings.Contains(logs.String(), strings.TrimPrefix(sid, "mcp-session-")) {
		t.Error("a session id reached the log")
	}

	redis.Restart()
	for _, url := range urls {
		if got := (rawHTTP{session: sid, auth: alice, body: listBody}).do(t, url); got.status != http.StatusNotFound {
			t.Errorf("the session from before the restart on %s: %d, want 404 (Redis came back empty)", url, got.status)
		}
	}
	fresh := openSession(t, b, alice)
	if names := listedNames(t, rawHTTP{session: fresh, auth: alice, body: listBody}.do(t, a)); len(names) == 0 {
		t.Error("a new session after the restart lists nothing")
	}
	if n := strings.Count(logs.String(), "Redis is reachable again"); n != 2 {
		t.Errorf("the recovery was logged %d times for 2 replicas:\n%s", n, logs.String())
	}
}

// TestSharedSessionIdleExpiry: a session used on either replica more often
// than its idle timeout lives on; left idle, it expires (Redis's TTL) and
// both replicas answer 404.
func TestSharedSessionIdleExpiry(t *testing.T) { statetest.ForEach(t, testSharedSessionIdleExpiry) }

func testSharedSessionIdleExpiry(t *testing.T, srv *statetest.Server) {
	cfg := testConfig()
	cfg.Serve.SessionIdleTimeout = 600 * time.Millisecond
	urls, _ := replicas(t, srv, 2, cfg, func() map[string]*server.MCPServer {
		return map[string]*server.MCPServer{"alpha": echoServer("alpha")}
	})
	const alice = "Bearer alice"
	sid := openSession(t, urls[0], alice)
	for i := range 6 {
		time.Sleep(200 * time.Millisecond)
		if got := (rawHTTP{session: sid, auth: alice, body: listBody}).do(t, urls[i%2]); got.status != http.StatusOK {
			t.Fatalf("a session in use expired: %d", got.status)
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		time.Sleep(700 * time.Millisecond)
		got := rawHTTP{session: sid, auth: alice, body: listBody}.do(t, urls[1])
		if got.status == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("an idle session did not expire: %d", got.status)
		}
	}
}

// modernList posts a 2026-07-28 request, which has no session.
func modernList(t *testing.T, url, auth, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		mcp.HeaderProtocolVersion: mcp.ProtocolVersion20260728, mcp.HeaderMethod: "tools/list", "Authorization": auth} {
		req.Header.Set(k, v)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// openStream opens session sid's GET stream on url, as auth, until ctx
// ends; the response's body is closed when the test ends.
func openStream(ctx context.Context, t *testing.T, url, sid, auth string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, "2025-11-25")
	req.Header.Set(sessionIDHeader, sid)
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream on %s: %d", url, resp.StatusCode)
	}
	return resp
}

// TestSharedSessionSubscriptionsFollowTheStream: a client subscribed to a
// resource through replica A; when its GET stream opens on replica B (A
// died, or the balancer moved it), B subscribes upstream too, so that
// resource updates reach the client through B. Without the shared
// subscriptions, B's upstream never heard of it.
func TestSharedSessionSubscriptionsFollowTheStream(t *testing.T) {
	statetest.ForEach(t, testSharedSessionSubscriptionsFollowTheStream)
}

func testSharedSessionSubscriptionsFollowTheStream(t *testing.T, srv *statetest.Server) {
	var mu sync.Mutex
	subscribed := []int{0, 0} // per replica's upstream
	replica := 0
	urls, _ := replicas(t, srv, 2, testConfig(), func() map[string]*server.MCPServer {
		i := replica
		replica++
		hooks := &server.Hooks{}
		hooks.AddAfterSubscribe(func(context.Context, any, *mcp.SubscribeRequest, *mcp.EmptyResult) {
			mu.Lock()
			subscribed[i]++
			mu.Unlock()
		})
		s := server.NewMCPServer("docs", "1.0.0", server.WithResourceCapabilities(true, true), server.WithHooks(hooks))
		s.AddResource(mcp.NewResource("mem://docs/readme", "readme"),
			func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
				return []mcp.ResourceContents{mcp.TextResourceContents{URI: "mem://docs/readme", Text: "hi"}}, nil
			})
		return map[string]*server.MCPServer{"docs": s}
	})
	count := func(i int) int {
		mu.Lock()
		defer mu.Unlock()
		return subscribed[i]
	}
	const alice = "Bearer alice"
	sid := openSession(t, urls[0], alice)
	if got := (rawHTTP{session: sid, auth: alice, body: `{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":"mem://docs/readme"}}`}).do(t, urls[0]); got.status != http.StatusOK {
		t.Fatalf("subscribe on A: %d %s", got.status, got.body)
	}
	if count(0) != 1 || count(1) != 0 {
		t.Fatalf("upstream subscriptions after subscribing on A: %v", subscribed)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	openStream(ctx, t, urls[1], sid, alice)
	deadline := time.Now().Add(30 * time.Second)
	for count(1) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("B's upstream was never subscribed after the session's stream moved to B: %v", subscribed)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSharedSessionsLeaveNothingBehind: what a replica keeps in memory for
// shared sessions goes when it is no longer needed. B, which set the log
// level of A's session on mcp-go's per-process table for a request, clears
// it when the request ends; A, which registered the session at initialize,
// lets go of it once a DELETE through B ended it, though the client never
// comes back to A.
func TestSharedSessionsLeaveNothingBehind(t *testing.T) {
	statetest.ForEach(t, testSharedSessionsLeaveNothingBehind)
}

func testSharedSessionsLeaveNothingBehind(t *testing.T, srv *statetest.Server) {
	cfg := testConfig()
	cfg.Serve.SessionIdleTimeout = 2 * time.Second // the sweep runs every second
	urls, gs, _ := replicaGateways(t, srv, 2, cfg, func() map[string]*server.MCPServer {
		return map[string]*server.MCPServer{"alpha": echoServer("alpha")}
	})
	const alice = "Bearer alice"
	sid := openSession(t, urls[0], alice)
	if got := (rawHTTP{session: sid, auth: alice, body: `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}}`}).do(t, urls[0]); got.status != http.StatusOK {
		t.Fatalf("setLevel on A: %d %s", got.status, got.body)
	}
	if got := (rawHTTP{session: sid, auth: alice, body: listBody}).do(t, urls[1]); got.status != http.StatusOK {
		t.Fatalf("tools/list on B: %d", got.status)
	}
	held := func(g *Gateway) (running, leveled, registered int) {
		g.replicaSessions.mu.Lock()
		defer g.replicaSessions.mu.Unlock()
		return len(g.replicaSessions.running), len(g.replicaSessions.leveled), len(g.replicaSessions.registered)
	}
	if r, l, reg := held(gs[1]); r != 0 || l != 0 || reg != 0 {
		t.Errorf("B still holds A's session after its request: running %d, leveled %d, registered %d", r, l, reg)
	}
	if _, _, reg := held(gs[0]); reg != 1 {
		t.Fatalf("A does not hold the session it issued (registered %d)", reg)
	}
	if got := (rawHTTP{method: http.MethodDelete, session: sid, auth: alice}).do(t, urls[1]); got.status != http.StatusOK {
		t.Fatalf("DELETE on B: %d", got.status)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, _, reg := held(gs[0]); reg == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("A still holds a session ended through B")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSharedSessionStreamEndsWithItsSession: a client's GET stream on
// replica A closes when its session is ended through replica B (here a
// DELETE), instead of staying open on a session that no replica accepts
// any more. Before, the stream stayed open until the client hung up.
func TestSharedSessionStreamEndsWithItsSession(t *testing.T) {
	statetest.ForEach(t, testSharedSessionStreamEndsWithItsSession)
}

func testSharedSessionStreamEndsWithItsSession(t *testing.T, srv *statetest.Server) {
	urls, gs, _ := replicaGateways(t, srv, 2, testConfig(), func() map[string]*server.MCPServer {
		return map[string]*server.MCPServer{"alpha": echoServer("alpha")}
	})
	gs[0].replicaSessions.mu.Lock()
	gs[0].replicaSessions.checkEvery = 50 * time.Millisecond
	gs[0].replicaSessions.mu.Unlock()
	const alice = "Bearer alice"
	sid := openSession(t, urls[0], alice)

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	resp := openStream(ctx, t, urls[0], sid, alice)
	closed := make(chan error, 1)
	go func() {
		_, err := bufio.NewReader(resp.Body).ReadString(0)
		closed <- err
	}()
	// The stream stays open while its session lives (several checks).
	select {
	case err := <-closed:
		t.Fatalf("the GET stream closed while its session lived: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if got := (rawHTTP{method: http.MethodDelete, session: sid, auth: alice}).do(t, urls[1]); got.status != http.StatusOK {
		t.Fatalf("DELETE on B: %d", got.status)
	}
	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatal("the GET stream on A stayed open after its session was ended through B")
	}
}
