package e2e

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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
)

// haproxyBinary is Debian's haproxy (.ci/run installs it).
const haproxyBinary = "/usr/sbin/haproxy"

// haproxyConfig is the load balancer of the replica tests: round robin,
// health checks on /readyz, and a session stuck to the replica that issued
// it by its Mcp-Session-Id (learned from the initialize response), so that
// a client's answer to a server-to-client request reaches the replica that
// asked; `option redispatch` moves a session to another replica when its
// own is down. Requests without a session (2026-07-28) go round robin.
// `http-reuse never`: a request is never sent over an idle pooled
// connection to a replica that has died since (it got 502 "incomplete
// response", a failure of a call that was not in flight when the replica
// died); on a fresh connection a dead replica refuses the connect, and the
// request is retried on another. Retrying on an empty response instead
// (retry-on empty-response) would also run again a tool call that was in
// flight, which may have had its effect already.
const haproxyConfig = `global
  maxconn 4096
defaults
  mode http
  timeout connect 2s
  timeout client 120s
  timeout server 120s
  option redispatch 1
  retries 3
  http-reuse never
frontend mcp
  bind 127.0.0.1:%d
  default_backend replicas
frontend stats
  bind 127.0.0.1:%d
  stats enable
  stats uri /stats
backend replicas
  balance roundrobin
  option httpchk
  http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host 127.0.0.1
  http-check expect status 200
  stick-table type string len 128 size 100k expire 30m
  stick match req.hdr(Mcp-Session-Id)
  stick store-response res.hdr(Mcp-Session-Id)
%s`

// startHAProxy runs haproxy in front of ports and returns its /mcp URL and
// its stats URL (CSV).
func startHAProxy(t *testing.T, ports []int) (url, stats string) {
	t.Helper()
	if _, err := os.Stat(haproxyBinary); err != nil {
		t.Fatalf("haproxy is not installed at %s (apt-get install haproxy, as .ci/run does): %v", haproxyBinary, err)
	}
	front, statsPort := testenv.FreePort(t), testenv.FreePort(t)
	var servers strings.Builder
	for i, p := range ports {
		fmt.Fprintf(&servers, "  server r%d 127.0.0.1:%d check inter 300ms fall 2 rise 1\n", i+1, p)
	}
	cfg := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, haproxyConfig, front, statsPort, servers.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(haproxyBinary, "-db", "-f", cfg)
	out := &testenv.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	testenv.SetProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	stats = fmt.Sprintf("http://127.0.0.1:%d/stats;csv", statsPort)
	// Up when every replica passed its health check.
	waitUntil(t, "haproxy sees every replica up", func() bool {
		select {
		case <-exited:
			t.Fatalf("haproxy exited: %s", out)
		default:
		}
		up := 0
		for _, row := range haproxyStats(t, stats, true) {
			if strings.HasPrefix(row["status"], "UP") {
				up++
			}
		}
		return up == len(ports)
	})
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", front), stats
}

// haproxyStats is the rows of haproxy's CSV stats for the replicas
// (quiet: an unreachable stats page gives no rows).
func haproxyStats(t *testing.T, url string, quiet bool) []map[string]string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		if !quiet {
			t.Fatal(err)
		}
		return nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	records, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(string(body), "# "))).ReadAll()
	if err != nil || len(records) < 2 {
		if !quiet {
			t.Fatalf("haproxy stats: %v: %s", err, body)
		}
		return nil
	}
	var rows []map[string]string
	for _, rec := range records[1:] {
		row := map[string]string{}
		for i, name := range records[0] {
			if i < len(rec) {
				row[name] = rec[i]
			}
		}
		if row["pxname"] == "replicas" && strings.HasPrefix(row["svname"], "r") {
			rows = append(rows, row)
		}
	}
	return rows
}

// legacyClient is an mcp-go client on a 2025-11-25 session.
func legacyClient(t *testing.T, url string) *client.Client {
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

// TestReplicasBehindHAProxy (#23): Redis, three `toolbridge serve`
// replicas and HAProxy in round robin, all real processes on 127.0.0.1.
//
//   - The official TypeScript SDK client runs a bridge session over
//     2025-11-25 (with a session id) through HAProxy, and mcp-go's client
//     runs requests over 2026-07-28; requests land on every replica
//     (HAProxy's per-server counters) and every answer is correct.
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
	cfg := demoConfig(t, "mode: on\nredis:\n  url: "+redis.URL()+"\n  key_prefix: \"e2e:\"\n", "")
	var replicas []*httpGateway
	var ports []int
	for range 3 {
		port := testenv.FreePort(t)
		replicas = append(replicas, startGateway(t, testEnv(t, nil), port, "serve", "-c", cfg))
		ports = append(ports, port)
	}
	url, stats := startHAProxy(t, ports)
	stderrs := func() string {
		var b strings.Builder
		for i, r := range replicas {
			fmt.Fprintf(&b, "--- replica %d stderr ---\n%s\n", i+1, r.stderr)
		}
		return b.String()
	}

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
	modern, err := client.NewStreamableHttpClient(url)
	if err != nil {
		t.Fatal(err)
	}
	defer modern.Close()
	if err := modern.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.ProtocolVersion20260728
	init.Params.ClientInfo = mcp.Implementation{Name: "replica-e2e-modern", Version: "1"}
	res, err := modern.Initialize(t.Context(), init)
	if err != nil {
		t.Fatal(err)
	}
	if res.ProtocolVersion != mcp.ProtocolVersion20260728 {
		t.Fatalf("mcp-go's client negotiated %s, want %s", res.ProtocolVersion, mcp.ProtocolVersion20260728)
	}
	before := haproxyStats(t, stats, false)
	for i := range 9 {
		if err := add(t.Context(), modern, i, 10); err != nil {
			t.Fatalf("2026-07-28 call %d through HAProxy: %v\n%s", i, err, stderrs())
		}
	}
	after := haproxyStats(t, stats, false)
	for i := range after {
		b, _ := strconv.Atoi(before[i]["stot"])
		a, _ := strconv.Atoi(after[i]["stot"])
		if a-b < 1 {
			t.Errorf("replica %s served none of nine 2026-07-28 calls through HAProxy (round robin)", after[i]["svname"])
		}
		t.Logf("replica %s: %d requests in all, %d of the nine 2026-07-28 calls", after[i]["svname"], a, a-b)
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
		afterKill     = make([]atomic.Int64, clients)
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
				start := time.Now()
				err := add(callCtx, c, i, n)
				took := time.Since(start)
				cancel()
				calls.Add(1)
				killed := killedAt.Load() > 0
				if err != nil {
					failed.Add(1)
					mu.Lock()
					failures = append(failures, fmt.Sprintf("client %d (after the kill: %v, %s): %v", i, killed, took.Round(time.Millisecond), err))
					mu.Unlock()
					continue
				}
				if killed {
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
	wg.Wait()
	t.Logf("replica kill -9 under load: %d calls by %d clients in %s, %d failed (in flight on the killed replica)", calls.Load(), clients, run, failed.Load())
	for _, f := range failures {
		t.Log(f)
	}
	if int(failed.Load()) > clients {
		t.Errorf("%d calls failed: more than the %d that can be in flight at once", failed.Load(), clients)
	}
	perClient := map[string]int{}
	for _, f := range failures {
		who, _, _ := strings.Cut(f, " (")
		perClient[who]++
		if !strings.Contains(f, "after the kill: true") {
			t.Errorf("a call failed before any replica was killed: %s", f)
		}
	}
	for who, n := range perClient {
		if n > 1 {
			t.Errorf("%s failed %d calls: only the one in flight on the killed replica may fail", who, n)
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
