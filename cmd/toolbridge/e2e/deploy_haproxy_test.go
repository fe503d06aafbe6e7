package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
)

// haproxyConfig is the example this test runs, as users get it.
const haproxyConfig = "../../../examples/deploy/haproxy.cfg"

// balancedHost is the name clients use for the balancer: HAProxy passes
// it through, so the replicas must list it in serve.allowed_hosts.
const balancedHost = "toolbridge.example.com"

// haproxyPath finds Debian's haproxy (CI installs it: see .ci/run).
func haproxyPath(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("haproxy"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/haproxy"); err == nil {
		return "/usr/sbin/haproxy"
	}
	t.Fatal("no haproxy on PATH or in /usr/sbin: the load balancer test needs it (apt-get install -y haproxy)")
	return ""
}

// writeHAProxyConfig writes examples/deploy/haproxy.cfg with its listen
// and server addresses replaced by front and replicas, and checks it with
// haproxy -c. It fails the test if the example no longer has the
// addresses it replaces, so the test never runs some other config.
func writeHAProxyConfig(t testing.TB, haproxy string, front int, replicas []int) string {
	t.Helper()
	b, err := os.ReadFile(haproxyConfig)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	replace := map[string]string{"bind 127.0.0.1:8080": fmt.Sprintf("bind 127.0.0.1:%d", front)}
	for i, port := range replicas {
		replace[fmt.Sprintf("127.0.0.1:%d check", 8081+i)] = fmt.Sprintf("127.0.0.1:%d check", port)
	}
	for old, repl := range replace {
		if strings.Count(text, old) != 1 {
			t.Fatalf("%s has %d lines with %q, want 1", haproxyConfig, strings.Count(text, old), old)
		}
		text = strings.Replace(text, old, repl, 1)
	}
	// Fewer replicas than the example lists (the benchmark's 1 and 2): the
	// example's other server lines go, so no request is sent to whatever
	// may listen on their ports.
	for i := len(replicas); ; i++ {
		line := fmt.Sprintf("    server toolbridge%d 127.0.0.1:%d check\n", i+1, 8081+i)
		if !strings.Contains(text, line) {
			break
		}
		text = strings.Replace(text, line, "", 1)
	}
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(haproxy, "-c", "-f", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Configuration file is valid") || strings.Contains(string(out), "WARNING") {
		t.Fatalf("haproxy -c -f %s: %v\n%s", haproxyConfig, err, out)
	}
	return path
}

// startHAProxy runs haproxy in the foreground on cfg until the test ends.
func startHAProxy(t testing.TB, haproxy, cfg string) *testenv.SyncBuffer {
	t.Helper()
	out := &testenv.SyncBuffer{}
	cmd := exec.Command(haproxy, "-db", "-f", cfg)
	cmd.Stdout, cmd.Stderr = out, out
	testenv.SetProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = testenv.KillProcessGroup(cmd.Process.Pid)
		<-exited
		if t.Failed() {
			t.Logf("haproxy output:\n%s", out)
		}
	})
	return out
}

// sessionProtocol is the protocol version of the sessions this test opens:
// the last one with Mcp-Session-Id, which the clients people run speak.
const sessionProtocol = "2025-11-25"

// rpcAnswer is one JSON-RPC exchange through the balancer.
type rpcAnswer struct {
	status  int
	replica string // X-Toolbridge-Replica: which server HAProxy chose
	session string // Mcp-Session-Id of the answer
	result  json.RawMessage
	err     string // transport or JSON-RPC error
}

// postRPC POSTs one JSON-RPC message to url as a client of balancedHost,
// with session (if any) as its Mcp-Session-Id.
func postRPC(ctx context.Context, url, session, method string, id int, params any) rpcAnswer {
	return postRPCWith(ctx, url, nil, session, method, id, params)
}

// postRPCWith is postRPC with headers of the caller's (its
// Authorization, or a protocol version).
func postRPCWith(ctx context.Context, url string, headers map[string]string, session, method string, id int, params any) rpcAnswer {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if id != 0 {
		msg["id"] = id
	}
	if params != nil {
		msg["params"] = params
	}
	body, _ := json.Marshal(msg)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return rpcAnswer{err: err.Error()}
	}
	req.Host = balancedHost
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", sessionProtocol)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return rpcAnswer{err: err.Error()}
	}
	defer resp.Body.Close()
	a := rpcAnswer{status: resp.StatusCode, replica: resp.Header.Get("X-Toolbridge-Replica"), session: resp.Header.Get("Mcp-Session-Id")}
	raw, _ := io.ReadAll(resp.Body)
	if id == 0 || resp.StatusCode != http.StatusOK {
		if resp.StatusCode >= 300 {
			a.err = strings.TrimSpace(string(raw))
		}
		return a
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// One event carries the answer: its data line is the message.
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(data, `"id"`) {
				raw = []byte(data)
			}
		}
	}
	var answer struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		a.err = fmt.Sprintf("decoding %q: %v", raw, err)
	} else if answer.Error != nil {
		a.err = answer.Error.Message
	}
	a.result = answer.Result
	return a
}

// openSession initializes a session through the balancer and returns the
// answer to initialize (its replica and session id).
func openSession(ctx context.Context, url string) rpcAnswer {
	return openSessionWith(ctx, url, nil)
}

// openSessionWith is openSession with headers of the caller's.
func openSessionWith(ctx context.Context, url string, headers map[string]string) rpcAnswer {
	a := postRPCWith(ctx, url, headers, "", "initialize", 1, map[string]any{
		"protocolVersion": sessionProtocol,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "haproxy-e2e", "version": "0"},
	})
	if a.err == "" && a.session == "" {
		a.err = "initialize answered without an Mcp-Session-Id"
	}
	if a.err == "" {
		if n := postRPCWith(ctx, url, headers, a.session, "notifications/initialized", 0, nil); n.err != "" {
			a.err = "notifications/initialized: " + n.err
		}
	}
	return a
}

// TestHAProxyBalancesAndDrains runs examples/deploy/haproxy.cfg in front
// of three real replicas (no Redis: each knows only its own sessions):
//   - sessions opened through it are spread round robin over all three;
//   - every request of a session reaches the replica that issued it (the
//     stick table learns Mcp-Session-Id from the response), so a list on
//     any session works; without stickiness two of three would be 404;
//   - a replica sent SIGTERM is taken out of rotation while it drains
//     (its /readyz says 503), and not one request through the balancer
//     fails meanwhile, nor after it exits.
func TestHAProxyBalancesAndDrains(t *testing.T) {
	haproxy := haproxyPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	cfg := demoConfig(t, "serve:\n  allowed_hosts: ["+balancedHost+"]\n", "")
	ports := []int{testenv.FreePort(t), testenv.FreePort(t), testenv.FreePort(t)}
	replicas := make([]*httpGateway, len(ports))
	for i, port := range ports {
		// The drain outlasts the checks below by far; the gateway stops
		// as soon as it ends, so the test does not wait for it.
		env := testEnv(t, []string{"TOOLBRIDGE_SERVE__DRAIN_DELAY=30s"})
		replicas[i] = startGateway(t, env, port, "serve", "--config", cfg, "--mode", "off")
	}
	for _, r := range replicas {
		waitProbe(t, r.base, func(p probe) bool { return p.status == http.StatusOK })
	}
	front := testenv.FreePort(t)
	haLog := startHAProxy(t, haproxy, writeHAProxyConfig(t, haproxy, front, ports))
	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", front)

	// HAProxy takes two checks to call a replica up: until every replica
	// has answered an initialize, keep opening sessions (bounded).
	seen := map[string]int{}
	var sessions []rpcAnswer
	deadline := time.Now().Add(time.Minute)
	for len(seen) < 3 || len(sessions) < 6 {
		if time.Now().After(deadline) {
			t.Fatalf("after a minute, initialize through HAProxy reached %v, want all three replicas\nhaproxy:\n%s", seen, haLog)
		}
		a := openSession(ctx, url)
		if a.err != "" {
			if a.status != 0 && a.status != http.StatusServiceUnavailable { // haproxy starting, or no replica up yet
				t.Fatalf("initialize through HAProxy: %d %s", a.status, a.err)
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		seen[a.replica]++
		sessions = append(sessions, a)
	}
	t.Logf("sessions per replica: %v", seen)
	for _, name := range []string{"toolbridge1", "toolbridge2", "toolbridge3"} {
		if seen[name] == 0 {
			t.Errorf("no session went to %s: %v", name, seen)
		}
	}

	// Each session's requests stay on its replica.
	for i, s := range sessions {
		for range 2 {
			a := postRPC(ctx, url, s.session, "tools/list", 2+i, map[string]any{})
			if a.err != "" || !strings.Contains(string(a.result), `"reverse_text"`) {
				t.Fatalf("tools/list on session %d (opened on %s): %d %s %s", i, s.replica, a.status, a.err, a.result)
			}
			if a.replica != s.replica {
				t.Errorf("session %d opened on %s was answered by %s", i, s.replica, a.replica)
			}
		}
	}

	// Without stickiness (and without redis.url) another replica does not
	// know the session: the control that shows the stick table at work.
	for i, r := range replicas {
		if name := fmt.Sprintf("toolbridge%d", i+1); name != sessions[0].replica {
			if a := postRPC(ctx, r.url, sessions[0].session, "tools/list", 99, map[string]any{}); a.status != http.StatusNotFound {
				t.Errorf("session opened on %s, sent to %s directly: %d %s, want 404", sessions[0].replica, name, a.status, a.err)
			}
			break
		}
	}

	// 2026-07-28 requests carry no session: they need no stickiness and
	// are spread over every replica, each answering alike.
	stateless := statelessClient(ctx, t, url)
	byReplica := stateless.seen
	for i := range 6 {
		req := mcp.CallToolRequest{}
		req.Params.Name = "reverse_text"
		req.Params.Arguments = map[string]any{"text": fmt.Sprint("abc", i)}
		res, err := stateless.c.CallTool(ctx, req)
		if err != nil || res.IsError || textOf(res) != fmt.Sprint(i, "cba") {
			t.Fatalf("stateless reverse_text through HAProxy: %+v %v", res, err)
		}
		list, err := stateless.c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil || len(list.Tools) == 0 {
			t.Fatalf("stateless tools/list through HAProxy: %+v %v", list, err)
		}
	}
	t.Logf("2026-07-28 requests per replica: %v", byReplica.counts())
	for _, name := range []string{"toolbridge1", "toolbridge2", "toolbridge3"} {
		if byReplica.counts()[name] == 0 {
			t.Errorf("no 2026-07-28 request went to %s: %v", name, byReplica.counts())
		}
	}

	// Drain toolbridge2. Every request meanwhile must succeed: the replica
	// serves until HAProxy has taken it out, and after.
	drained := replicas[1]
	if err := drained.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitProbe(t, drained.base, func(p probe) bool { return p.status == http.StatusServiceUnavailable })
	failures := 0
	request := func() rpcAnswer {
		a := openSession(ctx, url)
		if a.err != "" {
			failures++
			t.Errorf("initialize through HAProxy while toolbridge2 drains: %d %s", a.status, a.err)
		}
		return a
	}
	// Out of rotation once six in a row (two rounds) went elsewhere.
	inARow := 0
	deadline = time.Now().Add(time.Minute)
	for inARow < 6 {
		if time.Now().After(deadline) || failures > 0 {
			t.Fatalf("toolbridge2 still gets new sessions a minute after SIGTERM (or requests failed)\nhaproxy:\n%s", haLog)
		}
		if request().replica == "toolbridge2" {
			inARow = 0
		} else {
			inARow++
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !testenv.ProcessAlive(drained.cmd.Process.Pid) {
		t.Fatal("toolbridge2 exited before HAProxy took it out: the drain delay did not hold its port open")
	}
	after := map[string]int{}
	for range 9 {
		after[request().replica]++
	}
	if after["toolbridge2"] != 0 || after["toolbridge1"] == 0 || after["toolbridge3"] == 0 {
		t.Errorf("sessions per replica after the drain: %v, want toolbridge1 and toolbridge3 only", after)
	}
	// The replica exits once its drain delay ends; the balancer goes on.
	deadline = time.Now().Add(2 * time.Minute)
	for testenv.ProcessAlive(drained.cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatalf("toolbridge2 did not exit after its drain delay\nstderr:\n%s", drained.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for range 4 {
		if a := request(); a.replica == "toolbridge2" {
			t.Errorf("a session went to toolbridge2 after it exited")
		}
	}
	t.Logf("requests failed through HAProxy during the drain: %d", failures)
}

// replicaCounter counts the answers per X-Toolbridge-Replica.
type replicaCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *replicaCounter) counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.n)
}

// balancedTransport sends every request as a client of balancedHost,
// through base (http.DefaultTransport when nil), and counts which replica
// answered.
type balancedTransport struct {
	seen *replicaCounter
	base http.RoundTripper
}

func (b balancedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Host = balancedHost
	base := b.base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err == nil {
		if name := resp.Header.Get("X-Toolbridge-Replica"); name != "" {
			b.seen.mu.Lock()
			b.seen.n[name]++
			b.seen.mu.Unlock()
		}
	}
	return resp, err
}

// statelessConn is an mcp-go client speaking 2026-07-28 through the
// balancer, and the replicas that answered it.
type statelessConn struct {
	c    *client.Client
	seen *replicaCounter
}

func statelessClient(ctx context.Context, t testing.TB, url string) statelessConn {
	t.Helper()
	return statelessClientVia(ctx, t, url, nil)
}

// statelessClientVia is statelessClient sending through base (the shared
// http.DefaultTransport when nil): a benchmark gives each client its own
// connections, as separate agents have.
func statelessClientVia(ctx context.Context, t testing.TB, url string, base http.RoundTripper) statelessConn {
	t.Helper()
	seen := &replicaCounter{n: map[string]int{}}
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(&http.Client{Transport: balancedTransport{seen: seen, base: base}}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2026-07-28"
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatal(err)
	}
	if res.ProtocolVersion != "2026-07-28" {
		t.Fatalf("negotiated %s through HAProxy, want the stateless 2026-07-28", res.ProtocolVersion)
	}
	return statelessConn{c: c, seen: seen}
}
