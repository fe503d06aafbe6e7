package state_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/toolbridge/toolbridge/bridge/state"
	"github.com/toolbridge/toolbridge/bridge/state/statetest"
	"github.com/toolbridge/toolbridge/bridge/upstream/oauth"
	"github.com/toolbridge/toolbridge/bridge/upstream/oauth/oauthtest"
	"github.com/toolbridge/toolbridge/config"
)

// newKey makes a token key as "openssl rand -base64 32" would.
func newKey(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// open opens a Store on srv, as one replica does.
func open(t *testing.T, srv *statetest.Server) *state.Store {
	t.Helper()
	s, err := state.Open(t.Context(), config.Redis{URL: srv.URL(), KeyPrefix: "tb:"}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func tokens(t *testing.T, s *state.Store, key string) *state.Tokens {
	t.Helper()
	tk, err := state.NewTokens(s, []string{"TOKEN_KEY=" + key}, "TOKEN_KEY")
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

const (
	accessSecret  = "at-SECRET-0123456789abcdef"
	refreshSecret = "rt-SECRET-0123456789abcdef"
	clientSecret  = "cs-SECRET-0123456789abcdef"
)

func sampleRecord() *oauth.Record {
	return &oauth.Record{Server: "remote", URL: "https://remote.example/mcp", Grant: oauth.GrantAuthorizationCode,
		TokenEndpoint: "https://as.example/token", ClientID: "cid", ClientSecret: clientSecret,
		Token: transport.Token{AccessToken: accessSecret, RefreshToken: refreshSecret, ExpiresAt: time.Now().Add(time.Hour).Round(0)}}
}

// TestTokensSealedAtRest: what Redis holds for a token holds no token
// text in any encoding, reads back whole, and does not open under another
// server's key (the AAD is the key name).
func TestTokensSealedAtRest(t *testing.T) { statetest.ForEach(t, testTokensSealedAtRest) }

func testTokensSealedAtRest(t *testing.T, srv *statetest.Server) {
	s := open(t, srv)
	tk := tokens(t, s, newKey(t))
	ctx := t.Context()
	if _, err := tk.Load(ctx, "remote"); !errors.Is(err, oauth.ErrNotFound) {
		t.Fatalf("Load before Save = %v, want ErrNotFound", err)
	}
	if err := tk.Save(ctx, "remote", sampleRecord()); err != nil {
		t.Fatal(err)
	}
	raw, err := s.Redis().Get(ctx, "tb:oauth:remote").Result()
	if err != nil {
		t.Fatalf("reading the raw value: %v", err)
	}
	for _, secret := range []string{accessSecret, refreshSecret, clientSecret, "SECRET"} {
		for _, form := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret)), base64.RawStdEncoding.EncodeToString([]byte(secret)), hex.EncodeToString([]byte(secret))} {
			if strings.Contains(raw, form) {
				t.Errorf("Redis holds %q in the clear (as %q): %s", secret, form, raw)
			}
		}
	}
	if !strings.Contains(raw, `"alg":"A256GCM"`) || !strings.Contains(raw, `"kid":`) {
		t.Errorf("the raw record names no cipher or key id: %s", raw)
	}
	got, err := tk.Load(ctx, "remote")
	if err != nil || got.Token.AccessToken != accessSecret || got.Token.RefreshToken != refreshSecret || got.ClientSecret != clientSecret {
		t.Fatalf("Load = %+v, %v", got, err)
	}
	// Two saves of one record differ: the nonce is random.
	if err := tk.Save(ctx, "remote", sampleRecord()); err != nil {
		t.Fatal(err)
	}
	if raw2, _ := s.Redis().Get(ctx, "tb:oauth:remote").Result(); raw2 == raw {
		t.Error("two seals of the same record are equal: the nonce is not random")
	}
	// Moved to another server's key, the record does not open.
	if err := s.Redis().Set(ctx, "tb:oauth:other", raw, 0).Err(); err != nil {
		t.Fatal(err)
	}
	_, err = tk.Load(ctx, "other")
	if err == nil || !strings.Contains(err.Error(), "does not decrypt") {
		t.Errorf("a record moved to another key: %v, want a decrypt error", err)
	}
	if err != nil && strings.Contains(err.Error(), "SECRET") {
		t.Errorf("the error shows a secret: %v", err)
	}
	// Garbage someone else wrote is a clear error naming the key.
	if err := s.Redis().Set(ctx, "tb:oauth:junk", "not a record "+accessSecret, 0).Err(); err != nil {
		t.Fatal(err)
	}
	_, err = tk.Load(ctx, "junk")
	if err == nil || !strings.Contains(err.Error(), "tb:oauth:junk") || strings.Contains(err.Error(), accessSecret) {
		t.Errorf("garbage at the key: %v", err)
	}
	if err := tk.Delete(ctx, "remote"); err != nil {
		t.Fatal(err)
	}
	if _, err := tk.Load(ctx, "remote"); !errors.Is(err, oauth.ErrNotFound) {
		t.Errorf("Load after Delete = %v", err)
	}
}

// TestTokenKeyErrors: a missing, short or malformed key is a clear error
// that never shows the value.
func TestTokenKeyErrors(t *testing.T) { statetest.ForEach(t, testTokenKeyErrors) }

func testTokenKeyErrors(t *testing.T, srv *statetest.Server) {
	s := open(t, srv)
	short := base64.StdEncoding.EncodeToString([]byte("sixteen-byte-key"))
	tests := []struct {
		name    string
		environ []string
		want    string
	}{
		{"unset", nil, "$TOKEN_KEY, which is not set"},
		{"empty", []string{"TOKEN_KEY="}, "$TOKEN_KEY, which is not set"},
		{"short", []string{"TOKEN_KEY=" + short}, "key 1 is 16 bytes, want 32"},
		{"not base64", []string{"TOKEN_KEY=hunter2-not-base64!!"}, "key 1 is not base64"},
		{"second short", []string{"TOKEN_KEY=" + newKey(t) + "," + short}, "key 2 is 16 bytes, want 32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := state.NewTokens(s, tt.environ, "TOKEN_KEY")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewTokens = %v, want an error with %q", err, tt.want)
			}
			for _, kv := range tt.environ {
				if _, v, _ := strings.Cut(kv, "="); v != "" && strings.Contains(err.Error(), v) {
					t.Errorf("the error shows the key: %v", err)
				}
			}
		})
	}
}

// TestTokenKeyRotation: "new,old" opens what old sealed and seals with
// new; new alone cannot open old's records and says why.
func TestTokenKeyRotation(t *testing.T) { statetest.ForEach(t, testTokenKeyRotation) }

func testTokenKeyRotation(t *testing.T, srv *statetest.Server) {
	s := open(t, srv)
	oldKey, newK := newKey(t), newKey(t)
	ctx := t.Context()
	if err := tokens(t, s, oldKey).Save(ctx, "remote", sampleRecord()); err != nil {
		t.Fatal(err)
	}
	both := tokens(t, s, newK+","+oldKey)
	if r, err := both.Load(ctx, "remote"); err != nil || r.Token.AccessToken != accessSecret {
		t.Fatalf("the rotated keys cannot read the old record: %+v, %v", r, err)
	}
	if _, err := tokens(t, s, newK).Load(ctx, "remote"); err == nil || !strings.Contains(err.Error(), "no key in $TOKEN_KEY has") {
		t.Errorf("a record of a dropped key: %v", err)
	}
	if err := both.Save(ctx, "remote", sampleRecord()); err != nil {
		t.Fatal(err)
	}
	if _, err := tokens(t, s, newK).Load(ctx, "remote"); err != nil {
		t.Errorf("re-sealed with the new key, the new key alone cannot read it: %v", err)
	}
}

// TestTokensRedisKilled: while Redis is down a replica still has the token
// it last read, refuses to save, lock or refresh with ErrUnavailable, and
// once Redis is back (empty) sees no token.
func TestTokensRedisKilled(t *testing.T) { statetest.ForEach(t, testTokensRedisKilled) }

func testTokensRedisKilled(t *testing.T, srv *statetest.Server) {
	s := open(t, srv)
	tk := tokens(t, s, newKey(t))
	ctx := t.Context()
	if err := tk.Save(ctx, "remote", sampleRecord()); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	r, err := tk.Load(ctx, "remote")
	if err != nil || r.Token.AccessToken != accessSecret {
		t.Errorf("Load with Redis down = %+v, %v; want the token last seen", r, err)
	}
	if _, err := tk.Load(ctx, "never-seen"); !errors.Is(err, state.ErrUnavailable) {
		t.Errorf("Load of an unseen server with Redis down = %v, want ErrUnavailable", err)
	}
	if err := tk.Save(ctx, "remote", sampleRecord()); !errors.Is(err, state.ErrUnavailable) {
		t.Errorf("Save with Redis down = %v, want ErrUnavailable", err)
	}
	if _, err := tk.Lock(ctx, "remote"); !errors.Is(err, state.ErrUnavailable) {
		t.Errorf("Lock with Redis down = %v, want ErrUnavailable", err)
	}
	srv.Restart()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err = tk.Load(ctx, "remote")
		if !errors.Is(err, state.ErrUnavailable) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !errors.Is(err, oauth.ErrNotFound) {
		t.Errorf("Load after an empty restart = %v, want ErrNotFound", err)
	}
}

// TestLockIsExclusiveAndTokenChecked: a second holder waits for the
// first; a release by a holder whose lock was taken over frees nothing.
func TestLockIsExclusiveAndTokenChecked(t *testing.T) {
	statetest.ForEach(t, testLockIsExclusiveAndTokenChecked)
}

func testLockIsExclusiveAndTokenChecked(t *testing.T, srv *statetest.Server) {
	a, b := open(t, srv), open(t, srv)
	ctx := t.Context()
	unlock, err := a.Lock(ctx, "tb:l")
	if err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = b.Lock(waitCtx, "tb:l")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second Lock while held = %v, want it to wait until its ctx ended", err)
	}
	got := make(chan error, 1)
	go func() {
		u, err := b.Lock(ctx, "tb:l")
		if err == nil {
			defer u()
		}
		got <- err
	}()
	unlock()
	unlock() // a second call does nothing
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter did not get the lock after its release")
	}

	// The lock expired and someone else took it: the late release of
	// the first holder must leave theirs alone.
	unlock, err = a.Lock(ctx, "tb:m")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Redis().Set(ctx, "tb:m", "someone-else", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	unlock()
	if v, _ := a.Redis().Get(ctx, "tb:m").Result(); v != "someone-else" {
		t.Errorf("a stale release freed another holder's lock (value now %q)", v)
	}
}

// TestRefreshOnceAcrossReplicas: three token managers, each with its own
// connection to one Redis as three replicas have, find the shared token
// expired at once: the authorization server sees exactly one refresh, and
// every replica sends the new token.
func TestRefreshOnceAcrossReplicas(t *testing.T) { statetest.ForEach(t, testRefreshOnceAcrossReplicas) }

func testRefreshOnceAcrossReplicas(t *testing.T, srv *statetest.Server) {
	as := oauthtest.NewEcho()
	t.Cleanup(as.Close)
	key := newKey(t)
	newManager := func() *oauth.Client {
		c, err := oauth.New(oauth.Config{Server: "remote", URL: as.URL() + "/mcp", Store: tokens(t, open(t, srv), key)})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ctx := t.Context()
	first := newManager()
	if err := first.Login(ctx, oauth.FollowOpener(nil)); err != nil {
		t.Fatalf("Login: %v", err)
	}
	st := first.Store()
	r, err := st.Load(ctx, "remote")
	if err != nil {
		t.Fatal(err)
	}
	old := r.Token.AccessToken
	r.Token.ExpiresAt = time.Now().Add(-time.Minute) // as time passing would
	if err := st.Save(ctx, "remote", r); err != nil {
		t.Fatal(err)
	}
	// Three replicas' token managers, with nothing cached.
	clients := []*oauth.Client{newManager(), newManager(), newManager()}
	var wg sync.WaitGroup
	got := make(chan string, 30)
	errs := make(chan error, 30)
	for _, c := range clients {
		for range 10 {
			wg.Go(func() {
				tok, _, err := c.AccessToken(ctx)
				if err != nil {
					errs <- err
					return
				}
				got <- tok
			})
		}
	}
	wg.Wait()
	close(errs)
	close(got)
	for err := range errs {
		t.Errorf("AccessToken: %v", err)
	}
	seen := map[string]bool{}
	for tok := range got {
		seen[tok] = true
	}
	if n := as.Refreshes.Load(); n != 1 {
		t.Errorf("3 replicas made %d refreshes, want exactly 1", n)
	}
	if n := as.FailedRefreshes.Load(); n != 0 {
		t.Errorf("%d refreshes were refused (a spent refresh token was sent again)", n)
	}
	if len(seen) != 1 || seen[old] {
		t.Errorf("the replicas send %d distinct tokens (old one among them: %v), want the one new token", len(seen), seen[old])
	}
}
