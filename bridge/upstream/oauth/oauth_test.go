package oauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolbridge/toolbridge/bridge/upstream/oauth/oauthtest"
)

// protected starts the test authorization server in front of an MCP
// server with one tool, echo.
func protected(t *testing.T) *oauthtest.Server {
	t.Helper()
	as := oauthtest.NewEcho()
	t.Cleanup(as.Close)
	return as
}

// newClient returns an OAuth client for the server with a file store in
// a temp state dir (or store, when given).
func newClient(t *testing.T, as *oauthtest.Server, store Store, mod func(*Config)) *Client {
	t.Helper()
	if store == nil {
		var err error
		if store, err = NewFileStore(t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Config{Server: "remote", URL: as.URL() + "/mcp", Store: store}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// call connects an mcp-go client through c's transport and calls echo.
func call(ctx context.Context, c *Client, url string) (string, error) {
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(&http.Client{Transport: c.Transport(nil)}))
	if err != nil {
		return "", err
	}
	cl := client.NewClient(tr)
	defer cl.Close()
	if err := cl.Start(ctx); err != nil {
		return "", err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	if _, err := cl.Initialize(ctx, init); err != nil {
		return "", err
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Arguments = map[string]any{"text": "hi"}
	res, err := cl.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	return res.Content[0].(mcp.TextContent).Text, nil
}

func login(t *testing.T, c *Client) {
	t.Helper()
	if err := c.Login(t.Context(), FollowOpener(nil)); err != nil {
		t.Fatalf("Login: %v", err)
	}
}

func TestNeedsLoginThenLogin(t *testing.T) {
	as := protected(t)
	c := newClient(t, as, nil, nil)
	_, err := call(t.Context(), c, as.URL()+"/mcp")
	if !IsNeedsLogin(err) || !strings.Contains(err.Error(), "toolbridge auth login remote") {
		t.Fatalf("call before login = %v, want a needs-login error naming the command", err)
	}
	if st, _ := c.Status(t.Context()); st.State != "not logged in" {
		t.Errorf("status before login = %q", st.State)
	}
	login(t, c)
	got, err := call(t.Context(), c, as.URL()+"/mcp")
	if err != nil || got != "echo: hi" {
		t.Fatalf("call after login = %q, %v", got, err)
	}
	if n := as.Registrations.Load(); n != 1 {
		t.Errorf("%d registrations, want 1 (dynamic registration)", n)
	}
	st, err := c.Status(t.Context())
	if err != nil || st.State != "authorized" || st.Expires.IsZero() {
		t.Errorf("status after login = %+v, %v", st, err)
	}
}

// forceExpiry rewrites the stored token's expiry, as time passing would.
func forceExpiry(t *testing.T, c *Client, at time.Time) {
	t.Helper()
	r, err := c.Store().Load(t.Context(), c.Server())
	if err != nil {
		t.Fatal(err)
	}
	r.Token.ExpiresAt = at
	if err := c.Store().Save(t.Context(), c.Server(), r); err != nil {
		t.Fatal(err)
	}
	// Time passing changes nothing in the store; the client sees it in
	// the record it holds. Dropping its cache makes it hold this one.
	c.forget()
}

func TestRefreshBeforeExpiry(t *testing.T) {
	as := protected(t)
	c := newClient(t, as, nil, nil)
	login(t, c)
	forceExpiry(t, c, time.Now().Add(refreshSkew/2)) // about to expire
	before := as.Unauthorized.Load()
	if got, err := call(t.Context(), c, as.URL()+"/mcp"); err != nil || got != "echo: hi" {
		t.Fatalf("call = %q, %v", got, err)
	}
	if n := as.Refreshes.Load(); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
	if n := as.Unauthorized.Load() - before; n != 0 {
		t.Errorf("%d 401s: the refresh should come before the token expires", n)
	}
}

func TestRefreshOn401(t *testing.T) {
	as := protected(t)
	c := newClient(t, as, nil, nil)
	login(t, c)
	as.ExpireAccessTokens() // the server ends the tokens early
	if got, err := call(t.Context(), c, as.URL()+"/mcp"); err != nil || got != "echo: hi" {
		t.Fatalf("call after the server expired the token = %q, %v", got, err)
	}
	if n := as.Refreshes.Load(); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
	if n := as.Logins.Load(); n != 1 {
		t.Errorf("%d logins, want only the first", n)
	}
}

func TestSingleFlightRefresh(t *testing.T) {
	as := protected(t)
	c := newClient(t, as, nil, nil)
	login(t, c)
	forceExpiry(t, c, time.Now().Add(-time.Minute))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			if _, _, err := c.AccessToken(t.Context()); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("AccessToken: %v", err)
	}
	if n := as.Refreshes.Load(); n != 1 {
		t.Errorf("16 concurrent callers made %d refreshes, want 1", n)
	}
}

func TestRevokedMidSessionNeedsLoginNoLoop(t *testing.T) {
	as := protected(t)
	c := newClient(t, as, nil, nil)
	login(t, c)
	if _, err := call(t.Context(), c, as.URL()+"/mcp"); err != nil {
		t.Fatal(err)
	}
	as.RevokeAll()
	_, err := call(t.Context(), c, as.URL()+"/mcp")
	if !IsNeedsLogin(err) {
		t.Fatalf("call after revocation = %v, want needs login", err)
	}
	if n := as.FailedRefreshes.Load(); n != 1 {
		t.Errorf("%d failed refreshes, want exactly 1", n)
	}
	// Further calls fail at once: no refresh, no request to the server.
	unauth := as.Unauthorized.Load()
	for range 3 {
		if _, _, err := c.AccessToken(t.Context()); !IsNeedsLogin(err) {
			t.Fatalf("AccessToken after a failed refresh = %v, want needs login", err)
		}
	}
	if n := as.FailedRefreshes.Load(); n != 1 {
		t.Errorf("%d failed refreshes after retries, want still 1 (no loop)", n)
	}
	if as.Unauthorized.Load() != unauth {
		t.Errorf("the server was asked again after the client knew it needs login")
	}
	if st, _ := c.Status(t.Context()); st.State != "needs login" || !strings.Contains(st.Reason, "invalid_grant") {
		t.Errorf("status = %+v, want needs login with the reason", st)
	}
	login(t, c)
	if got, err := call(t.Context(), c, as.URL()+"/mcp"); err != nil || got != "echo: hi" {
		t.Fatalf("call after logging in again = %q, %v", got, err)
	}
}

func TestTwoGatewaysShareOneStore(t *testing.T) {
	as := protected(t)
	store, err := NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := newClient(t, as, store, nil)
	login(t, a)
	// A second store value on the same directory, as another process has.
	store2, _ := NewFileStore(store.dir.Root())
	b := newClient(t, as, store2, nil)
	for round := range 3 {
		forceExpiry(t, a, time.Now().Add(-time.Minute))
		var wg sync.WaitGroup
		for _, c := range []*Client{a, b, a, b} {
			wg.Go(func() {
				if got, err := call(t.Context(), c, as.URL()+"/mcp"); err != nil || got != "echo: hi" {
					t.Errorf("round %d: call = %q, %v", round, got, err)
				}
			})
		}
		wg.Wait()
	}
	if n := as.FailedRefreshes.Load(); n != 0 {
		t.Errorf("%d failed refreshes: the gateways spent one refresh token twice", n)
	}
	if n := as.Refreshes.Load(); n != 3 {
		t.Errorf("%d refreshes for 3 expiries, want 3", n)
	}
}

func TestStepUp(t *testing.T) {
	as := protected(t)
	as.RequiredScopes = []string{"read", "write"}
	logins := 0
	c := newClient(t, as, nil, func(cfg *Config) {
		cfg.Scopes = []string{"read"}
		cfg.Authorize = func(ctx context.Context, c *Client) error {
			logins++
			return c.Login(ctx, FollowOpener(nil))
		}
	})
	login(t, c)
	if got, err := call(t.Context(), c, as.URL()+"/mcp"); err != nil || got != "echo: hi" {
		t.Fatalf("call needing a step-up = %q, %v", got, err)
	}
	if logins != 1 {
		t.Errorf("%d step-up logins, want 1", logins)
	}
	st, _ := c.Status(t.Context())
	if !strings.Contains(strings.Join(st.Scopes, " "), "write") {
		t.Errorf("scopes after step-up = %v, want write among them", st.Scopes)
	}
}

func TestStepUpLimit(t *testing.T) {
	as := protected(t)
	as.RequiredScopes = []string{"admin"}
	logins := 0
	c := newClient(t, as, nil, func(cfg *Config) {
		cfg.Authorize = func(ctx context.Context, c *Client) error {
			logins++
			// A server that never grants admin: the login asks for less.
			c.stateMu.Lock()
			c.extraScopes = nil
			c.stateMu.Unlock()
			c.cfg.Scopes = []string{"basic"}
			return c.Login(ctx, FollowOpener(nil))
		}
	})
	_, err := call(t.Context(), c, as.URL()+"/mcp")
	if !IsNeedsLogin(err) {
		t.Fatalf("call = %v, want needs login after the step-up limit", err)
	}
	if logins > MaxStepUps+1 {
		t.Errorf("%d logins for one request, want at most %d", logins, MaxStepUps+1)
	}
}

func TestClientCredentials(t *testing.T) {
	as := protected(t)
	as.AddClient("machine", "s3cret-machine")
	c := newClient(t, as, nil, func(cfg *Config) {
		cfg.Grant = GrantClientCredentials
		cfg.ClientID, cfg.ClientSecret = "machine", "s3cret-machine"
	})
	if got, err := call(t.Context(), c, as.URL()+"/mcp"); err != nil || got != "echo: hi" {
		t.Fatalf("call = %q, %v", got, err)
	}
	// Expiry: client credentials have no refresh token; a new grant.
	forceExpiry(t, c, time.Now().Add(-time.Minute))
	if got, err := call(t.Context(), c, as.URL()+"/mcp"); err != nil || got != "echo: hi" {
		t.Fatalf("call after expiry = %q, %v", got, err)
	}
	if n := as.Logins.Load(); n != 2 {
		t.Errorf("%d client credentials grants, want 2", n)
	}
	bad := newClient(t, as, nil, func(cfg *Config) {
		cfg.Grant = GrantClientCredentials
		cfg.ClientID, cfg.ClientSecret = "machine", "wrong"
	})
	_, err := call(t.Context(), bad, as.URL()+"/mcp")
	var te *TokenError
	if !errors.As(err, &te) || te.Code != "invalid_client" {
		t.Errorf("wrong secret = %v, want invalid_client", err)
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Errorf("error leaks the secret: %v", err)
	}
}

func TestLogoutRevokes(t *testing.T) {
	as := protected(t)
	c := newClient(t, as, nil, nil)
	login(t, c)
	r, _ := c.Store().Load(t.Context(), "remote")
	if err := c.Logout(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := as.Revocations.Load(); n != 2 {
		t.Errorf("%d revocations, want 2 (refresh and access token)", n)
	}
	if _, err := c.Store().Load(t.Context(), "remote"); !errors.Is(err, ErrNotFound) {
		t.Errorf("after logout the store holds %v", err)
	}
	// The revoked refresh token no longer works.
	if _, err := c.refresh(t.Context(), r); err == nil {
		t.Error("the refresh token still works after logout")
	}
}

func TestWaitForLogin(t *testing.T) {
	as := protected(t)
	c := newClient(t, as, nil, nil)
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	go func() { done <- c.WaitForLogin(ctx, "", 10*time.Millisecond) }()
	// Another terminal logs in with its own client on the same store.
	other := newClient(t, as, c.Store(), nil)
	login(t, other)
	if err := <-done; err != nil {
		t.Fatalf("WaitForLogin = %v", err)
	}
}

func TestSecretsNeverInErrors(t *testing.T) {
	as := protected(t)
	c := newClient(t, as, nil, nil)
	login(t, c)
	as.RevokeAll()
	_, err := call(t.Context(), c, as.URL()+"/mcp")
	st, _ := c.Status(t.Context())
	for _, s := range as.Secrets() {
		if strings.Contains(err.Error(), s) || strings.Contains(st.Reason, s) {
			t.Errorf("a secret appears in %q / %q", err, st.Reason)
		}
	}
}

// TestStepUpAcrossProcesses is the gateway's step-up: it cannot log in
// itself, so the 403 becomes "needs login", and the next `auth login` (a
// new client, as another process has) asks for the scopes the 403 named.
func TestStepUpAcrossProcesses(t *testing.T) {
	as := protected(t)
	c := newClient(t, as, nil, func(cfg *Config) { cfg.Scopes = []string{"read"} })
	login(t, c)
	as.RequiredScopes = []string{"read", "write"}
	_, err := call(t.Context(), c, as.URL()+"/mcp")
	if !IsNeedsLogin(err) || !strings.Contains(err.Error(), "write") {
		t.Fatalf("call needing more scope = %v, want needs login naming the scope", err)
	}
	other := newClient(t, as, c.Store(), func(cfg *Config) { cfg.Scopes = []string{"read"} })
	login(t, other)
	if got, err := call(t.Context(), c, as.URL()+"/mcp"); err != nil || got != "echo: hi" {
		t.Fatalf("call after the second login = %q, %v", got, err)
	}
}

func TestLoginToServerWithoutAuth(t *testing.T) {
	s := server.NewMCPServer("open", "1.0.0")
	hs := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(hs.Close)
	store, _ := NewFileStore(t.TempDir())
	c, err := New(Config{Server: "open", URL: hs.URL + "/mcp", Store: store})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Login(t.Context(), func(context.Context, string) error {
		t.Error("the browser was opened for a server that needs no login")
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "needs none") {
		t.Errorf("Login = %v, want a clear error that no login is needed", err)
	}
}

// TestLoginChecksState: a redirect with another state is refused and the
// login waits for the real one; a redirect with an error ends it.
func TestLoginChecksState(t *testing.T) {
	as := protected(t)
	c := newClient(t, as, nil, nil)
	forged := func(ctx context.Context, authURL string) error {
		u, _ := url.Parse(authURL)
		redirect := u.Query().Get("redirect_uri")
		resp, err := http.Get(redirect + "?code=forged&state=not-the-state")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("a forged redirect got status %d, want 400", resp.StatusCode)
		}
		return FollowOpener(nil)(ctx, authURL)
	}
	if err := c.Login(t.Context(), forged); err != nil {
		t.Fatalf("Login after a forged redirect: %v", err)
	}
	if st, _ := c.Status(t.Context()); st.State != "authorized" {
		t.Errorf("status = %q", st.State)
	}

	denied := func(ctx context.Context, authURL string) error {
		u, _ := url.Parse(authURL)
		q := u.Query()
		resp, err := http.Get(q.Get("redirect_uri") + "?error=access_denied&state=" + url.QueryEscape(q.Get("state")))
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	err := newClient(t, as, nil, nil).Login(t.Context(), denied)
	if err == nil || !strings.Contains(err.Error(), "access_denied") {
		t.Errorf("Login denied = %v, want access_denied", err)
	}
}

// TestRedirectPort: a configured port is the redirect URI's; a busy one
// is a clear error.
func TestRedirectPort(t *testing.T) {
	as := protected(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	c := newClient(t, as, nil, func(cfg *Config) { cfg.RedirectPort = port })
	var redirect string
	err = c.Login(t.Context(), func(ctx context.Context, authURL string) error {
		u, _ := url.Parse(authURL)
		redirect = u.Query().Get("redirect_uri")
		return FollowOpener(nil)(ctx, authURL)
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("http://127.0.0.1:%d/callback", port); redirect != want {
		t.Errorf("redirect_uri = %q, want %q", redirect, want)
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	c = newClient(t, as, nil, func(cfg *Config) { cfg.RedirectPort = busy.Addr().(*net.TCPAddr).Port })
	err = c.Login(t.Context(), FollowOpener(nil))
	if err == nil || !strings.Contains(err.Error(), "listening for the redirect") {
		t.Errorf("Login on a busy port = %v", err)
	}
}
