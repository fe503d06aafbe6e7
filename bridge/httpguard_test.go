package bridge

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
)

// hostGateway serves a gateway with one echo upstream named
// "upstream-secret-name" over real HTTP on 127.0.0.1, with no auth token
// (the case DNS rebinding exploits), and returns its base URL.
func hostGateway(t *testing.T, serve func(*config.Serve)) string {
	t.Helper()
	cfg := testConfig()
	cfg.StateDir = t.TempDir()
	if serve != nil {
		serve(&cfg.Serve)
	}
	g, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Connect(context.Background(), []upstream.Spec{{Name: "upstream-secret-name", InProcess: echoServer("up")}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	srv := httptest.NewServer(g.HTTPHandler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// A page on attacker.example that rebinds its name to 127.0.0.1 sends
// requests with Host: attacker.example and, for a same-origin GET, no
// Origin at all. Every route but the bare liveness probe must refuse
// such a Host, GET, POST and DELETE alike, and routes added later too.
func TestHostCheckGuardsEveryRoute(t *testing.T) {
	base := hostGateway(t, nil)
	port := strings.TrimPrefix(base, "http://127.0.0.1:")

	tests := []struct {
		name, method, path, host string
		want                     int
	}{
		{"readyz under a rebound name", "GET", "/readyz", "attacker.example:" + port, 403},
		{"readyz under a rebound name, no port", "GET", "/readyz", "attacker.example", 403},
		{"a name that resolves to loopback is still foreign", "GET", "/readyz", "127.0.0.1.nip.io:" + port, 403},
		{"localhost suffix is not localhost", "GET", "/readyz", "localhost.attacker.example", 403},
		{"POST /mcp under a rebound name", "POST", "/mcp", "attacker.example", 403},
		{"GET /mcp under a rebound name", "GET", "/mcp", "attacker.example", 403},
		{"DELETE /mcp under a rebound name", "DELETE", "/mcp", "attacker.example", 403},
		{"a route added later under a rebound name", "GET", "/metrics", "attacker.example", 403},
		{"readyz by IP", "GET", "/readyz", "127.0.0.1:" + port, 200},
		{"readyz by IPv6", "GET", "/readyz", "[::1]:" + port, 200},
		{"readyz by localhost", "GET", "/readyz", "localhost:" + port, 200},
		{"readyz by LOCALHOST.", "GET", "/readyz", "LOCALHOST.:" + port, 200},
		{"healthz for a load balancer under any name", "GET", "/healthz", "attacker.example", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, base+tt.path, strings.NewReader(""))
			if err != nil {
				t.Fatal(err)
			}
			req.Host = tt.host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.want, body)
			}
			if tt.want == 403 {
				if strings.Contains(string(body), "upstream-secret-name") {
					t.Errorf("a refused request learned the upstream's name: %s", body)
				}
				if !strings.Contains(string(body), "serve.allowed_hosts") {
					t.Errorf("the refusal does not name the setting that fixes it: %s", body)
				}
			}
			if tt.path == "/readyz" && tt.want == 200 && !strings.Contains(string(body), "upstream-secret-name") {
				t.Errorf("an allowed readyz does not list the upstream: %s", body)
			}
		})
	}
}

func TestHostCheckAllowedHosts(t *testing.T) {
	for _, tt := range []struct {
		allowed []string
		host    string
		want    int
	}{
		{[]string{"gw.example.com"}, "gw.example.com", 200},
		{[]string{"gw.example.com"}, "GW.Example.COM:8080", 200},
		{[]string{"gw.example.com"}, "evil.gw.example.com", 403},
		{[]string{"gw.example.com"}, "attacker.example", 403},
		{[]string{"*"}, "anything.example", 200},
	} {
		t.Run(fmt.Sprintf("%v %s", tt.allowed, tt.host), func(t *testing.T) {
			base := hostGateway(t, func(s *config.Serve) { s.AllowedHosts = tt.allowed })
			req, err := http.NewRequest("GET", base+"/readyz", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = tt.host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.want)
			}
			// /mcp too, on a loopback listener: a load balancer on the
			// same machine passes the clients' Host through, and mcp-go's
			// own guard refused every name but localhost there.
			req, err = http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Host = tt.host
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err = http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("POST /mcp initialize: status %d, want %d: %s", resp.StatusCode, tt.want, body)
			}
		})
	}
}

// slowBodyGateway serves a gateway with a token and the given body
// timeout on 127.0.0.1 through ServeHTTP (the real http.Server) and
// returns its address.
func slowBodyGateway(t *testing.T, bodyTimeout time.Duration) (addr string, g *Gateway, release, entered chan struct{}) {
	t.Helper()
	release, entered = make(chan struct{}), make(chan struct{}, 1)
	cfg := testConfig()
	cfg.StateDir = t.TempDir()
	cfg.Timeouts.Call = 5 * time.Minute
	cfg.Serve.AuthToken = "valid-token"
	cfg.Serve.BodyTimeout = bodyTimeout
	g, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	if err := g.Connect(context.Background(), []upstream.Spec{{Name: "gate", InProcess: gateServer(release, entered)}}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- g.ServeHTTP(ctx, ln) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("ServeHTTP: %v", err)
		}
	})
	return ln.Addr().String(), g, release, entered
}

// Clients with a valid token that drip a body, a byte at a time, must not
// hold their connections: past serve.body_timeout each gets 408 and the
// server closes the connection, long before the body could have arrived.
func TestSlowBodyIsCutOff(t *testing.T) {
	addr, _, _, _ := slowBodyGateway(t, 500*time.Millisecond)
	const conns, bodyLen = 20, 1 << 20 // a 1 MiB body at a byte per 100 ms: days
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() {
			status, sent, err := dripBody(addr, bodyLen)
			switch {
			case err != nil:
				t.Errorf("connection %d: %v", i, err)
			case status != http.StatusRequestTimeout:
				t.Errorf("connection %d: status %d, want 408", i, status)
			case sent >= bodyLen:
				t.Errorf("connection %d: the whole body was sent", i)
			}
		})
	}
	wg.Wait()
}

// dripBody sends a POST /mcp whose body of n bytes trickles in a byte
// every 100 ms, and waits (bounded generously: only a server that never
// cuts the client off reaches the bound) for the server's answer and for
// it to close the connection. It returns the answer's status and the
// bytes of body sent by then.
func dripBody(addr string, n int) (status, sent int, err error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	if err := conn.SetReadDeadline(time.Now().Add(60 * time.Second)); err != nil {
		return 0, 0, err
	}
	head := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer valid-token\r\n"+
		"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n{", addr, n)
	if _, err := io.WriteString(conn, head); err != nil {
		return 0, 0, err
	}
	var mu sync.Mutex
	sent = 1
	stop := make(chan struct{})
	dripped := make(chan struct{})
	go func() {
		defer close(dripped)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := conn.Write([]byte(" ")); err != nil {
					return // the server closed the connection
				}
				mu.Lock()
				sent++
				mu.Unlock()
			}
		}
	}()
	defer func() {
		if stop != nil {
			close(stop)
			<-dripped
		}
	}()
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("waiting for the server to cut the slow body off: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	close(stop)
	<-dripped
	stop = nil
	// The server must close the connection, not keep it for another
	// request. It closes with bytes of ours unread, so the kernel may
	// answer with a reset rather than a plain end of stream.
	if _, err := br.ReadByte(); err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
		return 0, 0, fmt.Errorf("after the answer the connection is still open (read: %v)", err)
	}
	mu.Lock()
	defer mu.Unlock()
	return resp.StatusCode, sent, nil
}

// The body deadline ends with the body: a tool call that runs much longer
// than serve.body_timeout still gets its answer, because the deadline
// passing during the call would otherwise cancel it.
func TestBodyTimeoutSparesLongCalls(t *testing.T) {
	const bodyTimeout = 200 * time.Millisecond
	addr, _, release, entered := slowBodyGateway(t, bodyTimeout)
	url := "http://" + addr + "/mcp"
	sid := openSession(t, url, "Bearer valid-token")
	got := make(chan rawAnswer, 1)
	go func() {
		call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"wait","arguments":{}}}`
		got <- rawHTTP{session: sid, auth: "Bearer valid-token", body: call}.doLong(url)
	}()
	select {
	case <-entered:
	case a := <-got:
		t.Fatalf("the call ended before reaching the upstream: %d %s", a.status, a.body)
	case <-time.After(30 * time.Second):
		t.Fatal("the call never reached the upstream")
	}
	// Let the call outlive the body deadline several times over.
	time.Sleep(5 * bodyTimeout)
	close(release)
	select {
	case a := <-got:
		if a.status != http.StatusOK || !strings.Contains(a.body, `"result"`) || strings.Contains(a.body, `"isError":true`) {
			t.Fatalf("the long call got status %d: %s", a.status, a.body)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the long call got no answer")
	}
}

// doLong is do without a test to fail, for use in a goroutine.
func (r rawHTTP) doLong(url string) rawAnswer {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(r.body))
	if err != nil {
		return rawAnswer{body: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(sessionIDHeader, r.session)
	req.Header.Set("Authorization", r.auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return rawAnswer{body: err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return rawAnswer{status: resp.StatusCode, body: string(b)}
}

// FuzzHostAllowed: whatever a client puts in Host, the check never
// panics, and it accepts only localhost, an IP address or a configured
// name.
func FuzzHostAllowed(f *testing.F) {
	for _, s := range []string{"", "localhost", "localhost:8080", "LOCALHOST.", "127.0.0.1:80", "[::1]:8080", "::1",
		"[fe80::1%25eth0]:80", "attacker.example", "attacker.example:80", "127.0.0.1.nip.io", "gw.example.com:443",
		"[gw.example.com]", "localhost.attacker.example", ":80", "[", "]:", "a:b:c", "\x00", "％"} {
		f.Add(s)
	}
	allowed := map[string]bool{"gw.example.com": true}
	f.Fuzz(func(t *testing.T, host string) {
		if !hostAllowed(host, allowed) {
			return
		}
		h := host
		if hh, _, err := net.SplitHostPort(host); err == nil {
			h = hh
		}
		h = strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
		if _, err := netip.ParseAddr(h); host != "" && h != "localhost" && !allowed[h] && err != nil {
			t.Fatalf("Host %q accepted, naming %q", host, h)
		}
	})
}
