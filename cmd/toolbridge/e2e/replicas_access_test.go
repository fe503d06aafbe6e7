package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/bridge/access/accesstest"
	"github.com/toolbridge/toolbridge/bridge/state/statetest"
	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
)

// modernProtocol is the stateless protocol: no session, any replica.
const modernProtocol = "2026-07-28"

// replicaStateServer is the shared state for a replicas test: Valkey when
// it is installed (and always under CI, which installs it), else Redis,
// so that the e2e tests run the replicas on both (TestReplicasBehindHAProxy
// runs them on Redis).
func replicaStateServer(t *testing.T) *statetest.Server {
	t.Helper()
	if _, err := exec.LookPath("valkey-server"); err == nil || os.Getenv("CI") == "true" {
		return statetest.StartServer(t, "valkey-server")
	}
	t.Log("no valkey-server on PATH: the replicas share a redis-server instead (CI runs this test on Valkey)")
	return statetest.Start(t)
}

// caller is one identity of TestAccessRulesAcrossReplicas.
type caller struct {
	name    string
	headers map[string]string // its Authorization
	// listed is what its tools/list must hold besides the meta-tools: its
	// own core tool, by the name clients call it.
	listed string
	// ownServer shows in its catalog; otherServers must not.
	ownServer    string
	otherServers []string
	// own is a deferred tool it may call through tool_call, with
	// arguments and what the answer contains.
	own     string
	ownArgs map[string]any
	ownWant string
	// hidden are tools of the other identity's (canonical ids), each
	// answered as an unknown tool; hiddenCore is the other's core tool by
	// its listed name, which it may not call directly either.
	hidden     []string
	hiddenCore string
}

// target is where a request is sent: the balancer or one replica.
type target struct{ name, url string }

// statelessRPC is one 2026-07-28 request: no session, the version in the
// header and in params._meta, and the method and tool name in Mcp-Method
// and Mcp-Name, as the protocol asks.
func statelessRPC(ctx context.Context, url string, headers map[string]string, method string, id int, params map[string]any) rpcAnswer {
	h := modernHeaders(method, params)
	for k, v := range headers {
		h[k] = v
	}
	p := map[string]any{}
	for k, v := range params {
		p[k] = v
	}
	p["_meta"] = modernMeta()
	return postRPCWith(ctx, url, h, "", method, id, p)
}

// modernMeta is the params._meta of a 2026-07-28 request: the version and
// what initialize used to carry.
func modernMeta() map[string]any {
	return map[string]any{
		mcp.MetaKeyProtocolVersion:    modernProtocol,
		mcp.MetaKeyClientInfo:         map[string]any{"name": "access-e2e", "version": "0"},
		mcp.MetaKeyClientCapabilities: map[string]any{},
	}
}

// modernHeaders are the headers 2026-07-28 asks of a POST of method.
func modernHeaders(method string, params map[string]any) map[string]string {
	h := map[string]string{mcp.HeaderProtocolVersion: modernProtocol, mcp.HeaderMethod: method}
	if name, ok := params["name"].(string); ok && method == "tools/call" {
		h[mcp.HeaderName] = name
	}
	return h
}

// shown renders an answer for comparison: its status, error and result,
// with the replica that answered left out.
func (a rpcAnswer) shown() string {
	return fmt.Sprintf("%d %s %s", a.status, a.err, a.result)
}

// TestAccessRulesAcrossReplicas (#22, #23): three `toolbridge serve`
// replicas with serve.oauth and access rules, sharing Valkey (Redis when
// Valkey is not installed, outside CI), behind HAProxy in round robin;
// tokens from a real issuer on 127.0.0.1 (accesstest: metadata, JWKS,
// RS256 JWTs). alice (group dev) may use math and stuck::stuck_forever,
// bob (group ops) text. For each of them, over 2025-11-25 (one session,
// its requests sent through HAProxy and to each replica directly, so they
// hop replicas) and over 2026-07-28 (stateless), on HAProxy and on every
// replica:
//   - tools/list is the same everywhere and holds the caller's core tool,
//     not the other's; the catalog (tool_search with an empty query)
//     names only its own server;
//   - tool_search, tool_describe and tool_call of a tool hidden from the
//     caller (by its id), and a direct call of the other's core tool, are
//     answered exactly as a made-up tool of the same shape, the same on
//     every replica; a tool_search by a hidden tool's words finds nothing
//     of its server;
//   - the caller's own tool runs everywhere.
//
// alice's session sent with bob's valid token is 404 on every replica.
// serve.max_in_flight (1) counts alice's calls on all replicas together:
// with her call held on replica 1, her calls on replicas 2 and 3 and
// through HAProxy are refused, bob's run, and hers run again once the
// held call ends. No replica logs a token.
func TestAccessRulesAcrossReplicas(t *testing.T) {
	store := replicaStateServer(t)
	t.Logf("shared state: %s", store.Program())
	iss := accesstest.New(t)
	const audience = "http://" + balancedHost + "/mcp"
	top := "mode: on\n" +
		"serve:\n  allowed_hosts: [" + balancedHost + "]\n  max_in_flight: 1\n" +
		"  oauth:\n    issuer: " + iss.URL + "\n    audience: " + audience + "\n    required_scopes: [mcp:tools]\n" +
		"redis:\n  url: " + store.URL() + "\n  key_prefix: \"e2e:\"\n" +
		"timeouts:\n  call: 10m\n" + // the held call ends when the test says
		"tools:\n  - match: \"math::add\"\n    class: core\n  - match: \"text::reverse_text\"\n    class: core\n" +
		"access:\n" +
		"  - groups: [dev]\n    allow: [\"math::*\", \"stuck::stuck_forever\"]\n" +
		"  - groups: [ops]\n    allow: [\"text::*\"]\n"
	cfg, called := stuckConfig(t, top)
	var replicas []*httpGateway
	var ports []int
	for range 3 {
		port := testenv.FreePort(t)
		replicas = append(replicas, startGateway(t, testEnv(t, nil), port, "serve", "-c", cfg))
		ports = append(ports, port)
	}
	url := startReplicasHAProxy(t, ports)
	stderrs := func() string { return replicaStderrs(replicas) }
	defer func() {
		if t.Failed() {
			t.Log(stderrs())
		}
	}()
	targets := []target{{"haproxy", url}}
	for i, r := range replicas {
		targets = append(targets, target{fmt.Sprintf("replica %d", i+1), r.url})
	}
	bearer := func(sub, group string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + iss.Mint(t, sub, audience, []string{group}, "mcp:tools")}
	}
	alice := caller{
		name: "alice", headers: bearer("alice@example.com", "dev"),
		listed: "add", ownServer: "math", otherServers: []string{"text"},
		own: "math::multiply", ownArgs: map[string]any{"a": 6, "b": 7}, ownWant: "42",
		hidden:     []string{"text::reverse_text", "text::base64_decode"},
		hiddenCore: "reverse_text",
	}
	bob := caller{
		name: "bob", headers: bearer("bob@example.com", "ops"),
		listed: "reverse_text", ownServer: "text", otherServers: []string{"math", "stuck"},
		own: "text::base64_decode", ownArgs: map[string]any{"data": "Ym9i"}, ownWant: "bob",
		hidden:     []string{"math::add", "math::multiply", "stuck::stuck_forever"},
		hiddenCore: "add",
	}
	ctx := t.Context()
	sessions := map[string]string{}
	for _, c := range []caller{alice, bob} {
		t.Run(c.name, func(t *testing.T) {
			s := openSessionWith(ctx, url, c.headers)
			if s.err != "" {
				t.Fatalf("initialize through HAProxy: %d %s", s.status, s.err)
			}
			sessions[c.name] = s.session
			for _, proto := range []string{sessionProtocol, modernProtocol} {
				t.Run(proto, func(t *testing.T) {
					checkAccessEverywhere(t, c, targets, func(ctx context.Context, url, method string, params map[string]any) rpcAnswer {
						if proto == modernProtocol {
							return statelessRPC(ctx, url, c.headers, method, 1, params)
						}
						return postRPCWith(ctx, url, c.headers, s.session, method, 1, params)
					})
				})
			}
		})
	}

	// alice's session with bob's token: the 404 of an unknown session,
	// on every replica; with hers it is still served.
	for _, tg := range targets {
		a := postRPCWith(ctx, tg.url, bob.headers, sessions["alice"], "tools/list", 1, map[string]any{})
		if a.status != http.StatusNotFound {
			t.Errorf("%s: alice's session with bob's token: %s, want 404", tg.name, a.shown())
		}
		if a := postRPCWith(ctx, tg.url, alice.headers, sessions["alice"], "tools/list", 1, map[string]any{}); a.err != "" {
			t.Errorf("%s: alice's session with her token after bob's try: %s", tg.name, a.shown())
		}
	}

	checkLimitAcrossReplicas(t, alice, bob, targets, called)

	// No replica logged a caller's token.
	for i, r := range replicas {
		for _, c := range []caller{alice, bob} {
			token := strings.TrimPrefix(c.headers["Authorization"], "Bearer ")
			if out := r.stderr.String(); strings.Contains(out, token[len(token)-16:]) || strings.Contains(out, "eyJ") {
				t.Errorf("replica %d's stderr holds %s's token or something like a JWT", i+1, c.name)
			}
		}
	}
}

// checkAccessEverywhere sends the same requests of c to every target
// through rpc and checks that each answer is the same on every target and
// is what c's access rules allow.
func checkAccessEverywhere(t *testing.T, c caller, targets []target, rpc func(ctx context.Context, url, method string, params map[string]any) rpcAnswer) {
	t.Helper()
	ctx := t.Context()
	// same sends one request to every target, fails unless every answer
	// is alike, and returns it.
	same := func(what, method string, params map[string]any) rpcAnswer {
		t.Helper()
		var first rpcAnswer
		for i, tg := range targets {
			a := rpc(ctx, tg.url, method, params)
			if i == 0 {
				first = a
				continue
			}
			if a.shown() != first.shown() {
				t.Errorf("%s differs between %s and %s:\n%s: %s\n%s: %s", what, targets[0].name, tg.name,
					targets[0].name, clipText(first.shown()), tg.name, clipText(a.shown()))
			}
		}
		return first
	}
	call := func(name string, args map[string]any) map[string]any {
		return map[string]any{"name": name, "arguments": args}
	}

	// tools/list: the caller's core tool and the meta-tools, not the other's.
	list := same("tools/list", "tools/list", map[string]any{})
	if list.err != "" {
		t.Fatalf("tools/list: %s", list.shown())
	}
	var tools struct {
		Tools []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(list.result, &tools); err != nil {
		t.Fatalf("tools/list: %v: %s", err, list.result)
	}
	var names []string
	hint := ""
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.Name == "tool_search" {
			hint = tool.Description
		}
	}
	for _, want := range []string{c.listed, "tool_search", "tool_describe", "tool_call"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list = %v, want %s in it", names, want)
		}
	}
	if slices.Contains(names, c.hiddenCore) {
		t.Errorf("tools/list = %v shows %s, the other identity's core tool", names, c.hiddenCore)
	}
	// The catalog by server, in tool_search's description and in its
	// answer to an empty query: its own server, never the others'.
	catalog := toolResult(t, same("tool_search with an empty query", "tools/call", call("tool_search", map[string]any{"query": "", "limit": 50})))
	for what, text := range map[string]string{"tool_search's catalog hint": hint, "tool_search with an empty query": catalog} {
		if !strings.Contains(text, "- "+c.ownServer+" (") {
			t.Errorf("%s for %s does not name its server %s:\n%s", what, c.name, c.ownServer, clipText(text))
		}
		for _, other := range c.otherServers {
			if strings.Contains(text, "- "+other+" (") {
				t.Errorf("%s for %s names server %s, hidden from it:\n%s", what, c.name, other, clipText(text))
			}
		}
	}

	// A hidden tool is answered as a made-up one of the same shape.
	for _, id := range c.hidden {
		server, tool, _ := strings.Cut(id, "::")
		made := "nosuch::" + tool + "_zz"
		for _, meta := range []string{"tool_describe", "tool_call"} {
			args := map[string]any{"tool_name": id}
			if meta == "tool_call" {
				args["tool_args"] = map[string]any{}
			}
			hidden := same(meta+" "+id, "tools/call", call(meta, args))
			args["tool_name"] = made
			unknown := same(meta+" "+made, "tools/call", call(meta, args))
			h := strings.ReplaceAll(hidden.shown(), id, "ID")
			m := strings.ReplaceAll(unknown.shown(), made, "ID")
			if h != m || !strings.Contains(h, `"isError":true`) {
				t.Errorf("%s of hidden %s is not answered like an unknown tool:\n hidden: %s\nunknown: %s", meta, id, clipText(h), clipText(m))
			}
		}
		// tool_search for the hidden tool's id answers as for the made-up
		// one, and a search by its words finds nothing of its server.
		hidden := same("tool_search "+id, "tools/call", call("tool_search", map[string]any{"query": id}))
		unknown := same("tool_search "+made, "tools/call", call("tool_search", map[string]any{"query": made}))
		if h, m := strings.ReplaceAll(hidden.shown(), id, "ID"), strings.ReplaceAll(unknown.shown(), made, "ID"); h != m {
			t.Errorf("tool_search for hidden %s is not answered as for an unknown tool:\n hidden: %s\nunknown: %s", id, clipText(h), clipText(m))
		}
		found := toolResult(t, same("tool_search "+tool, "tools/call", call("tool_search", map[string]any{"query": strings.ReplaceAll(tool, "_", " ")})))
		if strings.Contains(found, server+"::") {
			t.Errorf("tool_search %q shows a tool of %s, hidden from %s: %s", tool, server, c.name, clipText(found))
		}
	}
	// A direct call of the other's core tool: as a made-up name.
	hidden := same("direct call of "+c.hiddenCore, "tools/call", call(c.hiddenCore, map[string]any{}))
	unknown := same("direct call of nosuch_"+c.hiddenCore, "tools/call", call("nosuch_"+c.hiddenCore, map[string]any{}))
	h := strings.ReplaceAll(hidden.shown(), c.hiddenCore, "N")
	m := strings.ReplaceAll(unknown.shown(), "nosuch_"+c.hiddenCore, "N")
	if h != m || (hidden.err == "" && !strings.Contains(h, `"isError":true`)) {
		t.Errorf("direct call of hidden %s is not answered like an unknown tool:\n hidden: %s\nunknown: %s", c.hiddenCore, clipText(h), clipText(m))
	}

	// The caller's own tool runs, on every replica.
	ran := toolResult(t, same("tool_call "+c.own, "tools/call", call("tool_call", map[string]any{"tool_name": c.own, "tool_args": c.ownArgs})))
	if !strings.Contains(ran, c.ownWant) {
		t.Errorf("tool_call %s for %s: %s, want %q", c.own, c.name, clipText(ran), c.ownWant)
	}
}

// toolResult is the text of a tools/call answer; a JSON-RPC error fails t.
func toolResult(t *testing.T, a rpcAnswer) string {
	t.Helper()
	if a.err != "" {
		t.Fatalf("tools/call: %s", a.shown())
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(a.result, &res); err != nil {
		t.Fatalf("tools/call result: %v: %s", err, a.result)
	}
	var b strings.Builder
	for _, c := range res.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func clipText(s string) string {
	if len(s) > 1500 {
		return s[:1500] + "…"
	}
	return s
}

// checkLimitAcrossReplicas holds one call of a's on the first replica
// (stuck::stuck_forever never answers) and checks that serve.max_in_flight
// (1) refuses a's calls on the other replicas and through the balancer,
// lets b's run, and lets a's run again once the held call ends.
func checkLimitAcrossReplicas(t *testing.T, a, b caller, targets []target, called string) {
	t.Helper()
	ctx := t.Context()
	addArgs := map[string]any{"name": "tool_call", "arguments": map[string]any{"tool_name": "math::add", "tool_args": map[string]any{"a": 20, "b": 22}}}
	if got := toolResult(t, statelessRPC(ctx, targets[2].url, a.headers, "tools/call", 1, addArgs)); !strings.Contains(got, "42") {
		t.Fatalf("%s's call before the held one: %s", a.name, got)
	}

	held, release := context.WithCancel(ctx)
	defer release()
	heldDone := make(chan string, 1)
	go func() {
		// No client timeout: the call is held until release.
		params := map[string]any{
			"name": "tool_call", "arguments": map[string]any{"tool_name": "stuck::stuck_forever", "tool_args": map[string]any{}},
			"_meta": modernMeta(),
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
		req, _ := http.NewRequestWithContext(held, http.MethodPost, targets[1].url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range modernHeaders("tools/call", params) {
			req.Header.Set(k, v)
		}
		for k, v := range a.headers {
			req.Header.Set(k, v)
		}
		resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
		if err != nil {
			heldDone <- err.Error()
			return
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		heldDone <- string(out)
	}()
	waitUntil(t, "the held call to reach the stuck server", func() bool {
		select {
		case out := <-heldDone:
			t.Fatalf("the held call ended before it was released: %s", out)
		default:
		}
		b, err := os.ReadFile(called)
		return err == nil && len(bytes.TrimSpace(b)) > 0
	})

	for _, tg := range append(slices.Clone(targets[2:]), targets[0]) {
		got := statelessRPC(ctx, tg.url, a.headers, "tools/call", 1, addArgs)
		if !strings.Contains(got.shown(), "tool calls running") {
			t.Errorf("%s: %s's call while her call runs on replica 1: %s, want the max_in_flight refusal", tg.name, a.name, clipText(got.shown()))
		}
		if got := toolResult(t, statelessRPC(ctx, tg.url, b.headers, "tools/call", 1, map[string]any{"name": "reverse_text", "arguments": map[string]any{"text": "abc"}})); got != "cba" {
			t.Errorf("%s: %s's call while %s's is held: %q, want cba", tg.name, b.name, a.name, got)
		}
	}

	release()
	select {
	case <-heldDone:
	case <-time.After(90 * time.Second):
		t.Fatal("the held call did not end after its client went away")
	}
	waitUntil(t, a.name+"'s slot to come back on replica 3", func() bool {
		got := statelessRPC(ctx, targets[3].url, a.headers, "tools/call", 1, addArgs)
		return got.err == "" && strings.Contains(string(got.result), "42")
	})
}
