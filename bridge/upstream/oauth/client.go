// Package oauth is toolbridge's OAuth 2.1 client for remote MCP servers
// that need a login: the MCP authorization spec, client side.
//
// It discovers the authorization server from a 401 (RFC 9728 protected
// resource metadata, then RFC 8414 or OpenID metadata, falling back to the
// 2025-03-26 rules), gets a token with the authorization code grant and
// PKCE S256 or with client credentials, always naming the resource (RFC
// 8707), identifies the client by dynamic registration (RFC 7591), a client
// ID metadata document or a pre-registered client, and keeps the token in a
// Store. Transport puts the token on every request, refreshes it before it
// expires and on a 401, one refresh at a time, and steps up on a 403
// insufficient_scope within a limit.
//
// What mcp-go v1.2.1 gives and what this package adds: mcp-go's
// transport.OAuthHandler covers metadata discovery, dynamic registration,
// the code exchange and a single-flight refresh, but it chooses no scopes
// (neither from WWW-Authenticate nor from scopes_supported), cannot step up
// on a 403, has no client ID metadata documents and no client credentials
// grant (so no private_key_jwt), registers every client as public or
// client_secret_post, rejects the metadata of authorization servers whose
// issuer carries a path unless all issuer checks are turned off, and
// reports an expired session by failing the request rather than retrying
// it. A refresh it fails is not remembered, so every later request spends
// the refused refresh token again, and it has no lock between processes
// sharing a token store. This
// package therefore runs the flows itself and uses mcp-go for the PKCE and
// state generators, the Token and AuthServerMetadata types and the redirect
// URI rule.
package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config is one server's OAuth settings.
type Config struct {
	// Server is the server's name: the key in the store and the name in
	// messages ("run toolbridge auth login NAME").
	Server string
	// URL is the MCP endpoint.
	URL string
	// Grant is authorization_code (default) or client_credentials.
	Grant string
	// ClientID and ClientSecret are a pre-registered client; without them
	// the client uses ClientMetadataURL or registers itself.
	ClientID     string
	ClientSecret string
	// ClientMetadataURL is an HTTPS URL serving the client's metadata
	// document, used as client_id where the server supports it.
	ClientMetadataURL string
	// AuthMethod forces the token endpoint authentication method.
	AuthMethod string
	// PrivateKey (PEM) and SigningAlg sign private_key_jwt assertions for
	// the client credentials grant.
	PrivateKey string
	SigningAlg string
	// Scopes, when set, are asked for instead of the discovered ones.
	Scopes []string
	// RedirectPort is the loopback port of the login redirect; 0 picks a
	// free one.
	RedirectPort int
	// ClientName is sent in dynamic registration (default "toolbridge").
	ClientName string
	// HTTPClient makes the OAuth requests (default: a client with a 30s
	// timeout).
	HTTPClient *http.Client
	// Store keeps the token. Required.
	Store Store
	// Authorize, if set, is called when a login is needed while serving a
	// request (no token, a refresh that failed, a 403 asking for more
	// scope): it should run Login, which the conformance client does
	// headlessly. Without it such a request fails with *NeedsLoginError.
	Authorize func(ctx context.Context, c *Client) error
}

// MaxStepUps bounds the re-authorizations one request may trigger after
// its first (a 401 then at most MaxStepUps 403 insufficient_scope step-ups,
// three logins in all), so a server that never accepts a token cannot
// drive a login loop.
const MaxStepUps = 2

// refreshSkew refreshes tokens this long before they expire.
const refreshSkew = 30 * time.Second

// NeedsLoginError says the server needs a (new) login before it can be
// used. Its message tells the user what to run.
type NeedsLoginError struct {
	Server string
	// Reason is why, without secrets.
	Reason string
}

func (e *NeedsLoginError) Error() string {
	return fmt.Sprintf("%s needs login (%s): run `toolbridge auth login %s`", e.Server, e.Reason, e.Server)
}

// IsNeedsLogin reports whether err says a login is needed.
func IsNeedsLogin(err error) bool {
	var n *NeedsLoginError
	return errors.As(err, &n)
}

// Client is one server's OAuth client. It is safe for concurrent use.
type Client struct {
	cfg Config
	hc  *http.Client

	// mu serializes refreshes and logins: one at a time per server, and
	// the others wait and take its result.
	mu sync.Mutex

	stateMu sync.Mutex
	// challenge is the last Bearer challenge the server sent.
	challenge Challenge
	// extraScopes are scopes a 403 asked for beyond the current token's.
	extraScopes []string
	// stepUps counts step-ups since the server last accepted a request,
	// across requests: a server that never accepts the scopes it asks for
	// gets MaxStepUps of them, not MaxStepUps per request.
	stepUps atomic.Int64
	// cacheMu guards the last record read or written (or ErrNotFound),
	// and when: see cachedLoad.
	cacheMu  sync.Mutex
	cacheRec *Record
	cacheErr error
	cacheAt  time.Time

	// lastNeedsLogin is the message of the last request that failed for
	// want of a login, nil once one succeeds: what /readyz shows.
	lastNeedsLogin atomic.Pointer[string]
}

// NeedsLoginNow returns the message of the last request that failed for
// want of a login, or "" if the last one went through.
func (c *Client) NeedsLoginNow() string {
	if p := c.lastNeedsLogin.Load(); p != nil {
		return *p
	}
	return ""
}

// StoredToken is the access token in the store, or "" (for WaitForLogin:
// the token a login must replace).
func (c *Client) StoredToken(ctx context.Context) string {
	r, err := c.load(ctx)
	if err != nil {
		return ""
	}
	return r.Token.AccessToken
}

// New returns the OAuth client for cfg.
func New(cfg Config) (*Client, error) {
	if cfg.Store == nil {
		return nil, errors.New("oauth: no token store")
	}
	if cfg.Server == "" || cfg.URL == "" {
		return nil, errors.New("oauth: server name and URL are required")
	}
	if cfg.Grant == "" {
		cfg.Grant = GrantAuthorizationCode
	}
	if cfg.ClientName == "" {
		cfg.ClientName = "toolbridge"
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	// Metadata and token requests never follow redirects to other hosts'
	// endpoints silently: a redirect is an answer to report.
	noRedirect := *hc
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Client{cfg: cfg, hc: &noRedirect}, nil
}

// Server is the server's name.
func (c *Client) Server() string { return c.cfg.Server }

// Store is the token store.
func (c *Client) Store() Store { return c.cfg.Store }

func (c *Client) needsLogin(format string, args ...any) error {
	return &NeedsLoginError{Server: c.cfg.Server, Reason: fmt.Sprintf(format, args...)}
}

// load returns the stored record if it belongs to this server's URL. It
// reads the store and refreshes the cache.
func (c *Client) load(ctx context.Context) (*Record, error) {
	r, err := c.cfg.Store.Load(ctx, c.cfg.Server)
	if err == nil && r.URL != c.cfg.URL {
		// A token for another URL must not be sent here.
		r, err = nil, ErrNotFound
	}
	if err == nil || errors.Is(err, ErrNotFound) {
		c.remember(r, err)
	}
	return r, err
}

// cacheFor is how long the hot path reuses what the store said. Every
// request reads the record, and a keyring read is a call to another
// process; a login or refresh in this process updates the cache at once,
// one in another process is seen within cacheFor (or at the 401 its old
// token gets, which reads the store afresh).
const cacheFor = 2 * time.Second

// cachedLoad is load for every request: it reuses a result younger than
// cacheFor.
func (c *Client) cachedLoad(ctx context.Context) (*Record, error) {
	c.cacheMu.Lock()
	if !c.cacheAt.IsZero() && time.Since(c.cacheAt) < cacheFor {
		r, err := c.cacheRec, c.cacheErr
		c.cacheMu.Unlock()
		return r, err
	}
	c.cacheMu.Unlock()
	return c.load(ctx)
}

func (c *Client) remember(r *Record, err error) {
	c.cacheMu.Lock()
	defer c.cacheMu.Unlock()
	c.cacheRec, c.cacheErr, c.cacheAt = r, err, time.Now()
}

// put saves r and makes it what the cache holds.
func (c *Client) put(ctx context.Context, r *Record) error {
	if err := c.cfg.Store.Save(ctx, c.cfg.Server, r); err != nil {
		c.forget()
		return err
	}
	c.remember(r, nil)
	return nil
}

// del deletes the record and forgets it.
func (c *Client) del(ctx context.Context) error {
	err := c.cfg.Store.Delete(ctx, c.cfg.Server)
	c.forget()
	return err
}

// forget empties the cache: the next request reads the store.
func (c *Client) forget() {
	c.cacheMu.Lock()
	defer c.cacheMu.Unlock()
	c.cacheAt = time.Time{}
}

// usable reports whether r's access token may be sent now.
func usable(r *Record, now time.Time) bool {
	if r == nil || r.NeedsLogin != "" || r.Token.AccessToken == "" {
		return false
	}
	skew := refreshSkew
	if life := time.Duration(r.Token.ExpiresIn) * time.Second; life > 0 && life/2 < skew {
		// A short-lived token is refreshed in its second half, not on
		// every request.
		skew = life / 2
	}
	return r.Token.ExpiresAt.IsZero() || now.Add(skew).Before(r.Token.ExpiresAt)
}

// AccessToken returns a token to send, refreshing it first when it is
// about to expire. ok=false with no error means there is no stored
// authorization (the server may not need one).
func (c *Client) AccessToken(ctx context.Context) (token string, ok bool, err error) {
	r, err := c.cachedLoad(ctx)
	if errors.Is(err, ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	if usable(r, time.Now()) {
		return r.Token.AccessToken, true, nil
	}
	r, err = c.renew(ctx, r.Token.AccessToken)
	if err != nil {
		return "", false, err
	}
	return r.Token.AccessToken, true, nil
}

// renew gets a fresh token after stale stopped working or is about to
// expire: a token another caller or process saved since, else a refresh,
// else (client credentials) a new grant. Only one renewal runs at a time.
// A refresh the server refuses marks the record "needs login", so no
// caller tries the spent refresh token again.
func (c *Client) renew(ctx context.Context, stale string) (*Record, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.cfg.Store.(Locker); ok {
		// Other gateways on this store: one refresh at a time across
		// processes too, or rotation would invalidate all but one.
		unlock, err := l.Lock(ctx, c.cfg.Server)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	r, err := c.load(ctx)
	if errors.Is(err, ErrNotFound) {
		if c.cfg.Grant == GrantClientCredentials {
			return c.clientCredentials(ctx)
		}
		return nil, c.needsLogin("not logged in")
	}
	if err != nil {
		return nil, err
	}
	if r.Token.AccessToken != stale && usable(r, time.Now()) {
		return r, nil // someone else renewed it meanwhile
	}
	if r.NeedsLogin != "" {
		if c.cfg.Grant == GrantClientCredentials {
			return c.clientCredentials(ctx)
		}
		return nil, c.needsLogin("%s", r.scrub(r.NeedsLogin))
	}
	if r.Token.RefreshToken == "" {
		if c.cfg.Grant == GrantClientCredentials {
			return c.clientCredentials(ctx)
		}
		return nil, c.needsLogin("the token expired and there is no refresh token")
	}
	nr, err := c.refresh(ctx, r)
	if err == nil {
		return nr, nil
	}
	var te *TokenError
	if !errors.As(err, &te) || te.Transient() {
		// No answer, a timeout, a 5xx (after refresh's retries): not the
		// token's fault, so the record stays as it is and a later call
		// tries again. Only a definitive refusal needs a login.
		return nil, fmt.Errorf("refreshing the token of %s (the token is kept; the next request tries again): %w", c.cfg.Server, err)
	}
	// Another process may have refreshed with the same refresh token a
	// moment ago (rotation makes ours invalid): take its token.
	if cur, lerr := c.load(ctx); lerr == nil && cur.Token.RefreshToken != r.Token.RefreshToken && usable(cur, time.Now()) {
		return cur, nil
	}
	if c.cfg.Grant == GrantClientCredentials {
		return c.clientCredentials(ctx)
	}
	r.NeedsLogin = r.scrub("refreshing the token failed: " + te.Error())
	r.Updated = time.Now()
	if serr := c.put(ctx, r); serr != nil {
		return nil, serr
	}
	return nil, c.needsLogin("%s", r.NeedsLogin)
}

// Status is a server's authorization as `toolbridge auth status` shows it.
type Status struct {
	// State is "authorized", "expired" (a refresh will be tried), "needs
	// login" or "not logged in".
	State   string
	Expires time.Time
	Scopes  []string
	Reason  string
}

// Status reads the stored authorization without touching the network.
func (c *Client) Status(ctx context.Context) (Status, error) {
	r, err := c.load(ctx)
	if errors.Is(err, ErrNotFound) {
		return Status{State: "not logged in"}, nil
	}
	if err != nil {
		return Status{}, err
	}
	s := Status{Expires: r.Token.ExpiresAt, Scopes: r.Scopes}
	if r.Token.Scope != "" {
		s.Scopes = strings.Fields(r.Token.Scope)
	}
	switch {
	case r.NeedsLogin != "":
		// Scrubbed again: a record an older version stored may hold what
		// a server echoed.
		s.State, s.Reason = "needs login", r.scrub(r.NeedsLogin)
	case usable(r, time.Now()):
		s.State = "authorized"
	case r.Token.RefreshToken != "" || r.Grant == GrantClientCredentials:
		s.State = "expired"
	default:
		s.State, s.Reason = "needs login", "the token expired and there is no refresh token"
	}
	return s, nil
}

// Logout revokes the stored tokens where the server has a revocation
// endpoint (RFC 7009) and deletes them locally. A revocation that fails is
// returned after the local delete, which always happens.
func (c *Client) Logout(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.cfg.Store.Load(ctx, c.cfg.Server)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	var revokeErr error
	if err == nil && r.RevocationEndpoint != "" {
		auth := c.recordAuth(r)
		if r.Token.RefreshToken != "" {
			revokeErr = revoke(ctx, c.hc, r.RevocationEndpoint, r.Token.RefreshToken, "refresh_token", auth)
		}
		if r.Token.AccessToken != "" {
			revokeErr = errors.Join(revokeErr, revoke(ctx, c.hc, r.RevocationEndpoint, r.Token.AccessToken, "access_token", auth))
		}
	}
	if derr := c.del(ctx); derr != nil {
		return derr
	}
	return revokeErr
}

// Challenge is the last Bearer challenge the server sent, if any.
func (c *Client) Challenge() Challenge {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	return c.challenge
}

func (c *Client) noteChallenge(ch Challenge) {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	if ch.ResourceMetadata != "" || ch.Scope != "" || ch.Error != "" {
		c.challenge = ch
	}
	if ch.Error == "insufficient_scope" {
		for _, s := range ch.Scopes() {
			if !slices.Contains(c.extraScopes, s) {
				c.extraScopes = append(c.extraScopes, s)
			}
		}
	}
}

// WaitForLogin returns once the store holds a usable authorization that
// differs from the one rejected (the token a login in another terminal
// saved), polling every interval, or when ctx ends.
func (c *Client) WaitForLogin(ctx context.Context, rejected string, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if r, err := c.load(ctx); err == nil && usable(r, time.Now()) && r.Token.AccessToken != rejected {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// rememberStepUp saves the scopes a 403 asked for in the stored record, so
// that `toolbridge auth login` in another process asks for them too. The
// token stays usable for what it already covers.
func (c *Client) rememberStepUp(ctx context.Context) {
	c.stateMu.Lock()
	extra := slices.Clone(c.extraScopes)
	c.stateMu.Unlock()
	if len(extra) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.load(ctx)
	if err != nil {
		return
	}
	changed := false
	for _, s := range extra {
		if !slices.Contains(r.StepUpScopes, s) {
			r.StepUpScopes = append(r.StepUpScopes, s)
			changed = true
		}
	}
	if changed {
		_ = c.put(ctx, r)
	}
}
