package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
)

// httpGateway serves a gateway with one echo upstream over real HTTP on
// 127.0.0.1 and returns its /mcp URL.
func httpGateway(t *testing.T, serve func(*config.Serve)) string {
	t.Helper()
	cfg := testConfig()
	if serve != nil {
		serve(&cfg.Serve)
	}
	g, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Connect(context.Background(), []upstream.Spec{{Name: "up", InProcess: echoServer("up")}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	srv := httptest.NewServer(g.HTTPHandler())
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// rawHTTP is one request to /mcp as a client on a pre-2026 protocol (one
// with sessions) sends it.
type rawHTTP struct {
	method, session, auth, body string
	version                     string // MCP-Protocol-Version; the latest legacy one if empty
}

type rawAnswer struct {
	status  int
	session string
	body    string
}

func (r rawHTTP) do(t *testing.T, url string) rawAnswer {
	t.Helper()
	method := r.method
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequest(method, url, strings.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	version := r.version
	if version == "" {
		version = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	}
	req.Header.Set(mcp.HeaderProtocolVersion, version)
	if r.session != "" {
		req.Header.Set(sessionIDHeader, r.session)
	}
	if r.auth != "" {
		req.Header.Set("Authorization", r.auth)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return rawAnswer{status: resp.StatusCode, session: resp.Header.Get(sessionIDHeader), body: string(b)}
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
const listBody = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`

// openSession initializes a session with the given credential.
func openSession(t *testing.T, url, auth string) string {
	t.Helper()
	a := rawHTTP{body: initializeBody, auth: auth}.do(t, url)
	if a.status != http.StatusOK || a.session == "" {
		t.Fatalf("initialize: status %d, session %q: %s", a.status, a.session, a.body)
	}
	return a.session
}

func TestHTTPSessionsAreChecked(t *testing.T) {
	url := httpGateway(t, nil)
	sid := openSession(t, url, "Bearer alice")

	tests := []struct {
		name string
		req  rawHTTP
		want int
	}{
		{"the session's own credential", rawHTTP{session: sid, auth: "Bearer alice", body: listBody}, 200},
		{"an id never issued", rawHTTP{session: "mcp-session-6f1c1f0e-3a7b-4c55-9a47-0d3f6f1b2c11", auth: "Bearer alice", body: listBody}, 404},
		{"another credential", rawHTTP{session: sid, auth: "Bearer bob", body: listBody}, 404},
		{"no credential", rawHTTP{session: sid, body: listBody}, 404},
		{"GET with another credential", rawHTTP{method: http.MethodGet, session: sid, auth: "Bearer bob"}, 404},
		{"DELETE with another credential", rawHTTP{method: http.MethodDelete, session: sid, auth: "Bearer bob"}, 404},
		{"GET without a session", rawHTTP{method: http.MethodGet, auth: "Bearer alice"}, 400},
		{"DELETE without a session", rawHTTP{method: http.MethodDelete, auth: "Bearer alice"}, 400},
		{"a request without a session", rawHTTP{auth: "Bearer alice", body: listBody}, 400},
		// The refusals above left the session alone.
		{"the session still works", rawHTTP{session: sid, auth: "Bearer alice", body: listBody}, 200},
		{"DELETE ends it", rawHTTP{method: http.MethodDelete, session: sid, auth: "Bearer alice"}, 200},
		{"a terminated id", rawHTTP{session: sid, auth: "Bearer alice", body: listBody}, 404},
		{"DELETE of a terminated id", rawHTTP{method: http.MethodDelete, session: sid, auth: "Bearer alice"}, 404},
	}
	for _, tt := range tests {
		a := tt.req.do(t, url)
		if a.status != tt.want {
			t.Errorf("%s: status %d, want %d: %s", tt.name, a.status, tt.want, a.body)
		}
	}
	// 2026-07-28 has no sessions: such a request is left to mcp-go's own
	// checks, never refused for want of one.
	modern := rawHTTP{auth: "Bearer alice", version: mcp.ProtocolVersion20260728,
		body: `{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`}.do(t, url)
	if strings.Contains(modern.body, sessionIDHeader+" header") {
		t.Errorf("a 2026-07-28 request was refused for want of a session: %d %s", modern.status, modern.body)
	}
}

func TestHTTPSessionBoundToAuthToken(t *testing.T) {
	url := httpGateway(t, func(s *config.Serve) { s.AuthToken = "tok-123456" })
	sid := openSession(t, url, "Bearer tok-123456")
	if a := (rawHTTP{session: sid, auth: "Bearer tok-123456", body: listBody}).do(t, url); a.status != 200 {
		t.Fatalf("own session: %d %s", a.status, a.body)
	}
	if a := (rawHTTP{session: sid, auth: "Bearer other", body: listBody}).do(t, url); a.status != 401 {
		t.Fatalf("another token: %d, want 401", a.status)
	}
}

func TestHTTPSessionIdleExpiry(t *testing.T) {
	// Any pause outlasts a nanosecond: the session is idle past its
	// timeout by the time the next request comes.
	url := httpGateway(t, func(s *config.Serve) { s.SessionIdleTimeout = time.Nanosecond })
	sid := openSession(t, url, "")
	time.Sleep(time.Millisecond)
	if a := (rawHTTP{session: sid, body: listBody}).do(t, url); a.status != 404 {
		t.Fatalf("idle session: status %d, want 404", a.status)
	}
}

func TestHTTPSessionTableIsBounded(t *testing.T) {
	url := httpGateway(t, func(s *config.Serve) { s.MaxSessions = 2 })
	first := openSession(t, url, "")
	second := openSession(t, url, "")
	third := openSession(t, url, "")
	if a := (rawHTTP{session: first, body: listBody}).do(t, url); a.status != 404 {
		t.Errorf("least recently used session past the bound: status %d, want 404", a.status)
	}
	for _, sid := range []string{second, third} {
		if a := (rawHTTP{session: sid, body: listBody}).do(t, url); a.status != 200 {
			t.Errorf("session within the bound: status %d: %s", a.status, a.body)
		}
	}
}

func TestHTTPRefusesBatchesAndObjectIDs(t *testing.T) {
	url := httpGateway(t, nil)
	sid := openSession(t, url, "")
	tests := []struct {
		name, body, want string
	}{
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`, "batch not supported"},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, "id must be a string or a number"},
		{"array id", `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, "id must be a string or a number"},
		{"boolean id", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, "id must be a string or a number"},
	}
	for _, tt := range tests {
		a := rawHTTP{session: sid, body: tt.body}.do(t, url)
		var msg struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(a.body), &msg); err != nil {
			t.Fatalf("%s: answer is not JSON-RPC: %d %q", tt.name, a.status, a.body)
		}
		if a.status != 400 || msg.Error.Code != mcp.INVALID_REQUEST || !strings.Contains(msg.Error.Message, tt.want) {
			t.Errorf("%s: status %d, error %+v; want 400, %d, %q", tt.name, a.status, msg.Error, mcp.INVALID_REQUEST, tt.want)
		}
	}
	// A string id still works.
	if a := (rawHTTP{session: sid, body: `{"jsonrpc":"2.0","id":"x","method":"ping"}`}).do(t, url); a.status != 200 {
		t.Fatalf("string id: %d %s", a.status, a.body)
	}
}

func TestSessionTable(t *testing.T) {
	now := time.Unix(0, 0)
	var forgotten []string
	tab := newSessionTable(time.Minute, 2, func(id string) { forgotten = append(forgotten, id) })
	tab.now = func() time.Time { return now }

	a := tab.issue("alice", nil)
	if _, err := tab.acquire(a, "bob"); err == nil {
		t.Fatal("bob acquired alice's session")
	}
	for i := range 1000 {
		if _, err := tab.acquire(fmt.Sprintf("mcp-session-forged-%d", i), "alice"); err == nil {
			t.Fatal("a forged id was accepted")
		}
	}
	if n := tab.len(); n != 1 {
		t.Fatalf("forged ids changed the table: %d sessions", n)
	}

	// A session with a request running never expires or is evicted.
	release, err := tab.acquire(a, "alice")
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	b := tab.issue("bob", nil)
	c := tab.issue("carol", nil) // full: busy a stays, idle b goes
	if !tab.valid(a, "alice") || !tab.valid(c, "carol") {
		t.Fatal("a busy or a new session was dropped")
	}
	if tab.valid(b, "bob") || !slices.Equal(forgotten, []string{b}) {
		t.Fatalf("the idle session was not evicted and forgotten: %v", forgotten)
	}
	release()
	now = now.Add(30 * time.Second)
	if !tab.valid(a, "alice") {
		t.Fatal("a session expired before its idle timeout")
	}
	now = now.Add(31 * time.Second)
	if tab.valid(a, "alice") {
		t.Fatal("a session outlived its idle timeout")
	}
	_, releaseRoom, ok := tab.reserve()
	if !ok || !slices.Contains(forgotten, a) {
		t.Fatalf("the expired session was not forgotten: %v", forgotten)
	}
	releaseRoom()
}

// TestSessionReservationsBoundConcurrentInitializes: initializes that pass
// the guard together hold their places before any of them is issued an id,
// so the table never holds more than max, and a place given back unused
// (an initialize that failed) is free again.
func TestSessionReservationsBoundConcurrentInitializes(t *testing.T) {
	tab := newSessionTable(time.Minute, 3, nil)
	busy, err := tab.acquire(tab.issue("alice", nil), "alice")
	if err != nil {
		t.Fatal(err)
	}
	defer busy()
	var held []*reservation
	var releases []func()
	for range 2 {
		res, release, ok := tab.reserve()
		if !ok {
			t.Fatalf("reserving within the bound failed (%d held)", len(held))
		}
		held, releases = append(held, res), append(releases, release)
	}
	if _, _, ok := tab.reserve(); ok {
		t.Fatal("a third initialize in flight got a place past serve.max_sessions")
	}
	tab.issue("bob", held[0])
	releases[0]() // after issue: the place is the session's now
	releases[1]() // never issued: the place is free again
	if n := tab.len(); n != 2 {
		t.Fatalf("table holds %d sessions, want 2", n)
	}
	if _, release, ok := tab.reserve(); !ok {
		t.Fatal("a place given back unused was not free again")
	} else {
		release()
	}
	if tab.reserved != 0 {
		t.Fatalf("%d places still reserved after every initialize ended", tab.reserved)
	}
}

var _ server.SessionIdManagerResolver = sessionResolver{}

// TestHTTPBodyOverLimitNamesTheKey: a POST over serve.max_body_bytes gets
// 413 with a JSON-RPC error (-32600) that names the key and its value, as
// the stdio transport says for a line over it.
func TestHTTPBodyOverLimitNamesTheKey(t *testing.T) {
	url := httpGateway(t, func(s *config.Serve) { s.MaxBodyBytes = 1024 })
	a := rawHTTP{body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"` + strings.Repeat("x", 4096) + `"}}`}.do(t, url)
	if a.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413: %s", a.status, a.body)
	}
	var msg struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(a.body), &msg); err != nil {
		t.Fatalf("413 body is not JSON-RPC: %q", a.body)
	}
	if msg.Error.Code != mcp.INVALID_REQUEST || !strings.Contains(msg.Error.Message, "serve.max_body_bytes (1024 bytes)") {
		t.Errorf("413 error = %+v, want -32600 naming serve.max_body_bytes (1024 bytes)", msg.Error)
	}
}
