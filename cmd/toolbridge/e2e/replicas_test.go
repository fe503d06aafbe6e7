package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/bridge/state/statetest"
	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
	"github.com/toolbridge/toolbridge/trace/tracetest"
)

// startReplicasHAProxy runs examples/deploy/haproxy.cfg (see
// writeHAProxyConfig) in front of ports. The file must say
// `http-reuse never` (its comment says why: a kill -9 under load made a
// pooled connection fail a call that was not in flight). It returns the
// /mcp URL once every replica has answered through it.
func startReplicasHAProxy(t testing.TB, ports []int) string {
	t.Helper()
	haproxy := haproxyPath(t)
	front := testenv.FreePort(t)
	path := writeHAProxyConfig(t, haproxy, front, ports)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\n    http-reuse never\n") {
		t.Fatalf("%s lacks http-reuse never: a replica's kill -9 would fail calls that were not in flight", haproxyConfig)
	}
	startHAProxy(t, haproxy, path)
	base := fmt.Sprintf("http://127.0.0.1:%d", front)
	seen := map[string]bool{}
	waitUntil(t, "every replica answers through haproxy", func() bool {
		req, err := http.NewRequest(http.MethodGet, base+"/readyz", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = balancedHost
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		if name := resp.Header.Get("X-Toolbridge-Replica"); name != "" && resp.StatusCode == http.StatusOK {
			seen[name] = true
		}
		return len(seen) == len(ports)
	})
	return base + "/mcp"
}

// startReplicas starts n `toolbridge serve` replicas of one config (the
// demo servers, state in the Redis at redisURL, balancedHost allowed) on
// free ports, and returns them with their ports.
func startReplicas(tb testing.TB, redisURL string, n int) ([]*httpGateway, []int) {
	tb.Helper()
	cfg := demoConfig(tb, "mode: on\nserve:\n  allowed_hosts: ["+balancedHost+"]\nredis:\n  url: "+redisURL+"\n  key_prefix: \"e2e:\"\n", "")
	var replicas []*httpGateway
	var ports []int
	for range n {
		port := testenv.FreePort(tb)
		replicas = append(replicas, startGateway(tb, testEnv(tb, nil), port, "serve", "-c", cfg))
		ports = append(ports, port)
	}
	return replicas, ports
}

// legacyClient is an mcp-go client on a 2025-11-25 session.
func legacyClient(t testing.TB, url string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "replica-e2e", Version: "1"}
	res, err := c.Initialize(t.Context(), init)
	if err != nil {
		t.Fatal(err)
	}
	if res.ProtocolVersion != "2025-11-25" {
		t.Fatalf("negotiated %s, want 2025-11-25", res.ProtocolVersion)
	}
	return c
}

// add calls math::add through tool_call and checks the sum.
func add(ctx context.Context, c *client.Client, a, b int) error {
	req := mcp.CallToolRequest{}
	req.Params.Name = "tool_call"
	req.Params.Arguments = map[string]any{"tool_name": "math::add", "tool_args": map[string]any{"a": a, "b": b}}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return err
	}
	var text strings.Builder
	for _, content := range res.Content {
		if tc, ok := content.(mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError || !strings.Contains(text.String(), strconv.Itoa(a+b)) {
		return fmt.Errorf("add(%d, %d) answered isError=%v %q", a, b, res.IsError, text.String())
	}
	return nil
}

// replicaRequests scrapes r's /metrics (on its MCP listener: the
// replicas have no token, so it needs none) and sums
// toolbridge_requests_total over every method. A replica that has had no
// request yet has no such family (a counter appears at its first count),
// which is 0; the scrape itself must work, and must name the replica.
func replicaRequests(t *testing.T, r *httpGateway) float64 {
	t.Helper()
	s, err := tracetest.ScrapeURL(r.base+"/metrics", nil)
	if err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, r.stderr)
	}
	if s.Families["toolbridge_replica_info"] == nil {
		t.Fatalf("toolbridge_replica_info absent from %s/metrics: not a toolbridge scrape; families: %v", r.base, s.Names(""))
	}
	var sum float64
	for _, m := range s.Families["toolbridge_requests_total"].GetMetric() {
		sum += m.GetCounter().GetValue()
	}
	return sum
}

// processDead reports whether pid is gone or a zombie: either way it has
// exited and the kernel has closed its sockets.
func processDead(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || strings.HasPrefix(strings.TrimSpace(string(b[i+1:])), "Z")
}

// replicaStderrs is every replica's stderr, for a failure message.
func replicaStderrs(replicas []*httpGateway) string {
	var b strings.Builder
	for i, r := range replicas {
		fmt.Fprintf(&b, "--- replica %d stderr ---\n%s\n", i+1, r.stderr)
	}
	return b.String()
}

// TestReplicasBehindHAProxy (#23): Redis, three `toolbridge serve`
// replicas and HAProxy in round robin, all real processes on 127.0.0.1.
//
//   - The official TypeScript SDK client runs a bridge session over
//     2025-11-25 (with a session id) through HAProxy, and mcp-go's client
//     runs requests over 2026-07-28; requests land on every replica
//     (the X-Toolbridge-Replica header HAProxy adds, and each replica's
//     toolbridge_requests_total on /metrics) and every answer is correct.
//   - A session opened through one replica is served by the others when
//     HAProxy is bypassed.
//   - With 20 clients (2025-11-25 sessions) calling for 30 s, one replica
//     is killed with -9: the sessions continue on the other replicas, and
//     the only failures are calls in flight on the killed one, at most one
//     per client, each a prompt error. The count is logged.
//   - Redis killed: a session request is refused with 503 naming Redis, a
//     2026-07-28 request still works; Redis restarted empty: the old
//     session is 404, and a new session works.
func TestReplicasBehindHAProxy(t *testing.T) {
	redis := statetest.Start(t)
	replicas, ports := startReplicas(t, redis.URL(), 3)
	url := startReplicasHAProxy(t, ports)
	stderrs := func() string { return replicaStderrs(replicas) }

	// The TypeScript SDK client, 2025-11-25, through HAProxy.
	report, driverErr, err := testenv.NPM(t).RunTSSession(t.Context(), testenv.TSSession{
		Session: testenv.SessionCalls, Transport: "http", URL: url,
		Calls: []testenv.TSCall{
			{Name: "tool_search", Args: map[string]any{"query": "add two numbers"}, Want: "math::add"},
			{Name: "tool_describe", Args: map[string]any{"tool_name": "math::add"}, Want: "addend"},
			{Name: "tool_call", Args: map[string]any{"tool_name": "math::add", "tool_args": map[string]any{"a": 2, "b": 3}}, Want: "5"},
			{Name: "tool_call", Args: map[string]any{"tool_name": "math::nope", "tool_args": map[string]any{}}, Want: "math::", IsError: true},
		},
	})
	if err != nil {
		t.Fatalf("%v\n--- driver stderr ---\n%s\n%s", err, driverErr, stderrs())
	}
	for _, p := range report.Problems() {
		t.Errorf("TypeScript SDK client through HAProxy: %s\n%s", p, driverErr)
	}

	// mcp-go's client, 2026-07-28: stateless, round robin over the three.
	modernConn := statelessClient(t.Context(), t, url)
	modern := modernConn.c
	before := modernConn.seen.counts()
	requestsBefore := make([]float64, len(replicas))
	for i, r := range replicas {
		requestsBefore[i] = replicaRequests(t, r)
	}
	for i := range 9 {
		if err := add(t.Context(), modern, i, 10); err != nil {
			t.Fatalf("2026-07-28 call %d through HAProxy: %v\n%s", i, err, stderrs())
		}
	}
	after := modernConn.seen.counts()
	if len(after) != len(replicas) {
		t.Errorf("2026-07-28 calls through HAProxy reached %d replicas, want %d: %v", len(after), len(replicas), after)
	}
	for name, n := range after {
		t.Logf("replica %s: %d of the nine 2026-07-28 calls", name, n-before[name])
	}
	// The replicas' own metrics say the same: each one's
	// toolbridge_requests_total grew while the nine calls ran (nothing
	// else sends requests then; HAProxy's health checks are GET /readyz,
	// which is not an MCP request).
	for i, r := range replicas {
		grew := replicaRequests(t, r) - requestsBefore[i]
		t.Logf("replica %d: toolbridge_requests_total grew by %v during the 2026-07-28 calls", i+1, grew)
		if grew < 1 {
			t.Errorf("replica %d: toolbridge_requests_total grew by %v during the nine 2026-07-28 calls through HAProxy, want at least 1: not every replica took requests", i+1, grew)
		}
	}

	// A session opened on replica 1 is served by replicas 2 and 3 directly.
	direct := legacyClient(t, replicas[0].url)
	sid := direct.GetSessionId()
	for _, r := range replicas[1:] {
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"tool_call","arguments":{"tool_name":"math::add","tool_args":{"a":20,"b":22}}}}`
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, r.url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(answer), "42") {
			t.Errorf("replica 1's session on %s: %d %s", r.url, resp.StatusCode, answer)
		}
	}

	// 20 clients for 30 s; replica 2 is killed with -9 a third of the way.
	const clients, run = 20, 30 * time.Second
	var (
		calls, failed atomic.Int64
		mu            sync.Mutex
		failures      []string
		killedAt      atomic.Int64 // calls made before the kill
		dead          atomic.Bool  // the killed replica has exited: its sockets are closed
		afterKill     = make([]atomic.Int64, clients)
		lateFailures  = make([]atomic.Int64, clients) // failures after the client's first success past the kill
	)
	sessions := make([]*client.Client, clients)
	for i := range sessions {
		sessions[i] = legacyClient(t, url)
	}
	ctx, stop := context.WithTimeout(t.Context(), run)
	defer stop()
	var wg sync.WaitGroup
	for i, c := range sessions {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				callCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
				// Only a call sent once the replica is dead can prove the
				// session moved: one sent just before the kill may be
				// answered by the dying replica and the next one fail.
				sentAfterDeath := dead.Load()
				start := time.Now()
				err := add(callCtx, c, i, n)
				took := time.Since(start)
				cancel()
				calls.Add(1)
				killed := killedAt.Load() > 0
				if err != nil {
					failed.Add(1)
					if afterKill[i].Load() > 0 {
						lateFailures[i].Add(1)
					}
					mu.Lock()
					failures = append(failures, fmt.Sprintf("client %d (after the kill: %v, %s): %v", i, killed, took.Round(time.Millisecond), err))
					mu.Unlock()
					continue
				}
				if sentAfterDeath {
					afterKill[i].Add(1)
				}
			}
		})
	}
	time.Sleep(run / 3)
	killedAt.Store(calls.Load() + 1)
	if err := replicas[1].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the killed replica to exit", func() bool { return processDead(replicas[1].cmd.Process.Pid) })
	dead.Store(true)
	wg.Wait()
	t.Logf("replica kill -9 under load: %d calls by %d clients in %s, %d failed (in flight on the killed replica)", calls.Load(), clients, run, failed.Load())
	for _, f := range failures {
		t.Log(f)
	}
	// What may fail: a call that was in flight on the killed replica, and
	// a call sent to it in the few milliseconds before HAProxy sees it
	// gone (a dying process's socket can still take a connection and then
	// close it: HAProxy's 502 "incomplete response", not retried because
	// the call may have had its effect). Both happen only before the
	// client's session has moved to another replica; once a client has a
	// call sent and answered after the replica exited, none of its calls
	// may fail.
	for _, f := range failures {
		if !strings.Contains(f, "after the kill: true") {
			t.Errorf("a call failed before any replica was killed: %s", f)
		}
	}
	for i := range lateFailures {
		if n := lateFailures[i].Load(); n > 0 {
			t.Errorf("client %d failed %d calls after its session had moved to another replica", i, n)
		}
	}
	for i := range afterKill {
		if afterKill[i].Load() == 0 {
			t.Errorf("client %d made no successful call after the kill: its session did not continue elsewhere", i)
		}
	}

	// Redis killed: sessions refused with a clear error, 2026-07-28 served.
	redis.Kill()
	survivor := sessions[0]
	callCtx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	err = add(callCtx, survivor, 1, 2)
	waited := callCtx.Err() != nil
	cancel()
	if err == nil || waited || !strings.Contains(err.Error(), "Redis") {
		t.Errorf("a session call with Redis down: %v (waited for the deadline: %v); want a prompt error naming Redis", err, waited)
	}
	if err := add(t.Context(), modern, 4, 5); err != nil {
		t.Errorf("a 2026-07-28 call with Redis down: %v", err)
	}
	redis.Restart()
	// Back but empty: the session is gone (404), a new one works.
	if err := add(t.Context(), survivor, 1, 2); err == nil {
		t.Error("a session from before Redis's restart still works: Redis came back empty")
	}
	if err := add(t.Context(), legacyClient(t, url), 3, 4); err != nil {
		t.Errorf("a new session after Redis's restart: %v", err)
	}
	if t.Failed() {
		t.Log(stderrs())
	}
}
