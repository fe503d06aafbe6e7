package upstream

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/upstream/oauth"
	"github.com/toolbridge/toolbridge/bridge/upstream/oauth/oauthtest"
	"github.com/toolbridge/toolbridge/config"
)

// syncBuffer is a progress writer the test can read while the pool writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls cond until it holds; the deadline is generous, so a slow
// machine only makes the test slower.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNeedsLoginThenLoginElsewhere is the gateway's side of a server that
// needs login: it starts without it, says "needs login" in the startup
// line and its status, and connects by itself once a login in another
// process (here, another OAuth client on the same state directory) stores
// a token. Then the token is revoked mid-session: calls fail with
// needs-login errors but the connection and its tools stay.
func TestNeedsLoginThenLoginElsewhere(t *testing.T) {
	as := oauthtest.New(server.NewStreamableHTTPServer(toolServer("remote")))
	t.Cleanup(as.Close)
	cfg := config.Default()
	cfg.StateDir = t.TempDir()
	cfg.TokenStore = config.TokenStoreFile
	var progress syncBuffer
	p := NewPool(&cfg, PoolOptions{Progress: &progress}, NewRelay(nil, nil))
	t.Cleanup(func() { _ = p.Close() })
	spec := Spec{Name: "remote", Config: config.Server{URL: as.URL() + "/mcp"}}

	err := p.Connect(t.Context(), []Spec{spec}, nil)
	if !IsNeedsLogin(err) {
		t.Fatalf("Connect = %v, want needs login", err)
	}
	if !strings.Contains(progress.String(), "needs login: run `toolbridge auth login remote`") {
		t.Errorf("startup line: %q", progress.String())
	}
	st := p.Statuses()
	if len(st) != 1 || !st[0].NeedsLogin || st[0].Connected {
		t.Errorf("status = %+v, want needs login", st)
	}
	if !p.NeedsLogin("remote") {
		t.Error("NeedsLogin(remote) = false")
	}

	// `toolbridge auth login remote` in another terminal.
	store, err := oauth.NewFileStore(cfg.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	other, err := oauth.New(oauth.Config{Server: "remote", URL: spec.Config.URL, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Login(t.Context(), oauth.FollowOpener(nil)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pool to connect with the new token", func() bool {
		_, ok := p.Get("remote")
		return ok && !p.NeedsLogin("remote")
	})
	u, _ := p.Get("remote")
	if _, err := u.Request(t.Context(), "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}}); err != nil {
		t.Fatalf("call after login: %v", err)
	}

	// The server revokes everything mid-session.
	as.RevokeAll()
	_, err = u.Request(t.Context(), "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}})
	if !IsNeedsLogin(err) {
		t.Fatalf("call after revocation = %v, want needs login", err)
	}
	if u.Closed() || u.lost() != "" {
		t.Error("a revoked token was taken for a lost connection")
	}
	if tools, _, _, _ := u.Snapshot(); len(tools) != 1 {
		t.Errorf("tools after revocation: %d, want them kept", len(tools))
	}
	if !p.NeedsLogin("remote") {
		t.Error("NeedsLogin(remote) = false after the revocation")
	}
	st = p.Statuses()
	if !st[0].NeedsLogin || !strings.Contains(st[0].Error, "auth login remote") {
		t.Errorf("status after revocation = %+v", st[0])
	}
	if n := as.FailedRefreshes.Load(); n != 1 {
		t.Errorf("%d failed refreshes, want 1", n)
	}
	for _, s := range as.Secrets() {
		if strings.Contains(progress.String()+st[0].Error, s) {
			t.Error("a token reached the progress output or the status")
		}
	}
	// A new login heals the connection without a reconnect.
	if err := other.Login(t.Context(), oauth.FollowOpener(nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Request(t.Context(), "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}}); err != nil {
		t.Fatalf("call after the second login: %v", err)
	}
	if p.NeedsLogin("remote") {
		t.Error("still needs login after the second login")
	}
}
