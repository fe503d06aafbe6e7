package oauth

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Opener shows the user the authorization URL: it opens a browser, prints
// the URL, or (the conformance client) fetches it itself. It returns once
// the URL is on its way; Login then waits for the redirect.
type Opener func(ctx context.Context, authURL string) error

// Login runs the authorization code flow with PKCE: it discovers the
// authorization server, identifies the client, takes the redirect on a
// 127.0.0.1 port, checks state, exchanges the code and stores the token.
// For the client credentials grant it just gets a token.
func (c *Client) Login(ctx context.Context, open Opener) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cfg.Grant == GrantClientCredentials {
		_, err := c.clientCredentials(ctx)
		return err
	}
	return c.login(ctx, open)
}

func (c *Client) login(ctx context.Context, open Opener) error {
	ch := c.Challenge()
	asked := ch != Challenge{}
	if ch.ResourceMetadata == "" && ch.Scope == "" {
		probed, err := c.probe(ctx)
		if err != nil {
			return err
		}
		asked = asked || probed != Challenge{}
		c.noteChallenge(probed)
		ch = c.Challenge()
	}
	d, err := discover(ctx, c.hc, c.cfg.URL, ch)
	if err != nil {
		return err
	}
	if d.defaults && !asked {
		return fmt.Errorf("logging in to %s: it answers without asking for a login (no 401) and publishes no OAuth metadata, so it needs none", c.cfg.Server)
	}
	if m := d.Server.CodeChallengeMethodsSupported; len(m) > 0 && !slices.Contains(m, "S256") {
		return fmt.Errorf("logging in to %s: the authorization server does not support PKCE S256 (it lists %s)", c.cfg.Server, strings.Join(m, ", "))
	}
	scopes := c.scopes(ctx, ch, d)

	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(c.cfg.RedirectPort)))
	if err != nil {
		return fmt.Errorf("logging in to %s: listening for the redirect on 127.0.0.1:%d: %w", c.cfg.Server, c.cfg.RedirectPort, err)
	}
	defer ln.Close()
	redirectURI := fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port)
	if err := transport.ValidateRedirectURI(redirectURI); err != nil {
		return fmt.Errorf("logging in to %s: %w", c.cfg.Server, err)
	}

	auth, err := c.identify(ctx, d, redirectURI, scopes)
	if err != nil {
		return fmt.Errorf("logging in to %s: %w", c.cfg.Server, err)
	}
	state, err := transport.GenerateState()
	if err != nil {
		return fmt.Errorf("logging in to %s: %w", c.cfg.Server, err)
	}
	verifier, err := transport.GenerateCodeVerifier()
	if err != nil {
		return fmt.Errorf("logging in to %s: %w", c.cfg.Server, err)
	}
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {auth.id},
		"redirect_uri":          {redirectURI},
		"state":                 {state},
		"code_challenge":        {transport.GenerateCodeChallenge(verifier)},
		"code_challenge_method": {"S256"},
		"resource":              {d.Resource},
	}
	if len(scopes) > 0 {
		q.Set("scope", strings.Join(scopes, " "))
	}
	authURL := d.Server.AuthorizationEndpoint
	if strings.Contains(authURL, "?") {
		authURL += "&" + q.Encode()
	} else {
		authURL += "?" + q.Encode()
	}

	code, err := c.awaitCode(ctx, ln, state, func(ctx context.Context) error { return open(ctx, authURL) })
	if err != nil {
		return fmt.Errorf("logging in to %s: %w", c.cfg.Server, err)
	}
	form := url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"redirect_uri":  {redirectURI},
		"code_verifier": {verifier},
		"resource":      {d.Resource},
	}
	tok, err := requestToken(ctx, c.hc, d.Server.TokenEndpoint, form, auth)
	if err != nil {
		return fmt.Errorf("logging in to %s: exchanging the code: %w", c.cfg.Server, err)
	}
	return c.save(ctx, d, auth, scopes, tok, GrantAuthorizationCode)
}

// save stores a new token with what refreshing and revoking it needs. A
// stored record that cannot be read (a corrupt file) is reported, not
// overwritten: `toolbridge auth logout NAME` deletes it.
func (c *Client) save(ctx context.Context, d *Discovery, auth clientAuth, scopes []string, tok *transport.Token, grant string) error {
	if _, err := c.cfg.Store.Load(ctx, c.cfg.Server); err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w (run toolbridge auth logout %s to delete it)", err, c.cfg.Server)
	}
	r := &Record{
		Server: c.cfg.Server, URL: c.cfg.URL, Resource: d.Resource, Grant: grant,
		Issuer: d.Issuer, TokenEndpoint: d.Server.TokenEndpoint, RevocationEndpoint: d.Server.RevocationEndpoint,
		ClientID: auth.id, ClientSecret: auth.secret, AuthMethod: auth.method,
		Scopes: scopes, Token: *tok, Updated: time.Now(),
	}
	return c.put(ctx, r)
}

// scopes chooses what to ask for, as the MCP spec's scope selection
// strategy says: the configured scopes; else the challenge's scope; else
// the resource's scopes_supported; else none (the parameter is omitted).
// Scopes a 403 asked for are added (step-up).
func (c *Client) scopes(ctx context.Context, ch Challenge, d *Discovery) []string {
	var out []string
	switch {
	case len(c.cfg.Scopes) > 0:
		out = slices.Clone(c.cfg.Scopes)
	case ch.Scope != "":
		out = ch.Scopes()
	case len(d.ResourceScopes) > 0:
		out = slices.Clone(d.ResourceScopes)
	}
	c.stateMu.Lock()
	extra := slices.Clone(c.extraScopes)
	c.stateMu.Unlock()
	if r, err := c.load(ctx); err == nil {
		extra = append(extra, r.StepUpScopes...)
	}
	for _, s := range extra {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// identify returns the client's identity at this authorization server:
// the configured client; else its client ID metadata document URL when
// the server accepts one; else a dynamic registration.
func (c *Client) identify(ctx context.Context, d *Discovery, redirectURI string, scopes []string) (clientAuth, error) {
	supported := d.Server.TokenEndpointAuthMethodsSupported
	switch {
	case c.cfg.ClientID != "":
		return clientAuth{id: c.cfg.ClientID, secret: c.cfg.ClientSecret,
			method: pickAuthMethod(c.cfg.AuthMethod, c.cfg.ClientSecret, supported)}, nil
	case c.cfg.ClientMetadataURL != "" && d.Server.ClientIDMetadataDocumentSupported:
		return clientAuth{id: c.cfg.ClientMetadataURL, method: AuthNone}, nil
	case d.Server.RegistrationEndpoint != "":
		return c.register(ctx, d, redirectURI, scopes)
	}
	return clientAuth{}, fmt.Errorf("the authorization server %s offers no dynamic client registration: register a client there and set auth.client_id", d.Issuer)
}

// register performs dynamic client registration (RFC 7591). It asks for a
// public client when the server allows one (a local program cannot keep a
// secret from its user anyway), and uses whatever method the server
// registered.
func (c *Client) register(ctx context.Context, d *Discovery, redirectURI string, scopes []string) (clientAuth, error) {
	supported := d.Server.TokenEndpointAuthMethodsSupported
	want := AuthNone
	if len(supported) > 0 && !slices.Contains(supported, AuthNone) {
		want = pickAuthMethod("", "secret", supported)
	}
	body := map[string]any{
		"client_name":                c.cfg.ClientName,
		"redirect_uris":              []string{redirectURI},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": want,
	}
	if len(scopes) > 0 {
		body["scope"] = strings.Join(scopes, " ")
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.Server.RegistrationEndpoint, bytes.NewReader(b))
	if err != nil {
		return clientAuth{}, fmt.Errorf("registering the client: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return clientAuth{}, fmt.Errorf("registering the client at %s: %w", d.Server.RegistrationEndpoint, err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(io.LimitReader(resp.Body, maxDocBytes))
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		var oe struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		_ = json.Unmarshal(rb, &oe)
		return clientAuth{}, fmt.Errorf("registering the client at %s: %w", d.Server.RegistrationEndpoint,
			&TokenError{Status: resp.StatusCode, Code: oe.Error, Description: oe.Description})
	}
	var reg struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		Method       string `json:"token_endpoint_auth_method"`
	}
	if err := json.Unmarshal(rb, &reg); err != nil || reg.ClientID == "" {
		return clientAuth{}, fmt.Errorf("registering the client at %s: the answer has no client_id", d.Server.RegistrationEndpoint)
	}
	method := reg.Method
	if method == "" {
		method = pickAuthMethod("", reg.ClientSecret, supported)
	}
	return clientAuth{id: reg.ClientID, secret: reg.ClientSecret, method: method}, nil
}

// callbackDrain bounds how long the callback server waits, after the code
// arrived, for the browser's page to be written before it is closed.
const callbackDrain = 3 * time.Second

// awaitCode serves the redirect on ln until one with the right state
// arrives, after calling open. A redirect with the wrong state is refused
// and waited past: it cannot be this login's.
func (c *Client) awaitCode(ctx context.Context, ln net.Listener, state string, open func(context.Context) error) (string, error) {
	type result struct {
		code string
		err  error
	}
	done := make(chan result, 1)
	srv := &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/callback" {
				http.NotFound(w, r)
				return
			}
			q := r.URL.Query()
			if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(state)) != 1 {
				http.Error(w, "This login link is stale or forged (state does not match). Start again with toolbridge auth login.", http.StatusBadRequest)
				return
			}
			var res result
			if e := q.Get("error"); e != "" {
				res.err = fmt.Errorf("the authorization server refused: %s", oneLine(e+" "+q.Get("error_description"), 200))
			} else if res.code = q.Get("code"); res.code == "" {
				res.err = errors.New("the redirect carries no code")
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			if res.err != nil {
				fmt.Fprintf(w, "<p>toolbridge: login to %s failed: %s</p>", html.EscapeString(c.cfg.Server), html.EscapeString(res.err.Error()))
			} else {
				fmt.Fprintf(w, "<p>toolbridge: logged in to %s. You can close this tab.</p>", html.EscapeString(c.cfg.Server))
			}
			select {
			case done <- res:
			default:
			}
		}),
	}
	go func() { _ = srv.Serve(ln) }()
	// Shut down gracefully: the handler hands the code over before its
	// "logged in" page has left the buffer, and Close would cut that
	// connection, so the browser showed an empty reply although the login
	// went on to succeed. The wait is bounded so that a client that never
	// reads its answer cannot hold the login open.
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callbackDrain)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			_ = srv.Close()
		}
	}()
	if err := open(ctx); err != nil {
		return "", err
	}
	select {
	case res := <-done:
		return res.code, res.err
	case <-ctx.Done():
		return "", fmt.Errorf("waiting for the login redirect: %w", ctx.Err())
	}
}

// probe asks the server, without a token, for its challenge: initialize,
// then (a server may let initialize through) tools/list.
func (c *Client) probe(ctx context.Context) (Challenge, error) {
	session := ""
	for i, method := range []string{"initialize", "tools/list"} {
		params := map[string]any{}
		if method == "initialize" {
			params = map[string]any{
				"protocolVersion": mcp.LATEST_PROTOCOL_VERSION,
				"capabilities":    map[string]any{},
				"clientInfo":      map[string]any{"name": "toolbridge", "version": "auth-probe"},
			}
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": method, "params": params})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.URL, bytes.NewReader(b))
		if err != nil {
			return Challenge{}, fmt.Errorf("asking %s for its authorization: %w", c.cfg.Server, err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", mcp.LATEST_PROTOCOL_VERSION)
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			return Challenge{}, fmt.Errorf("asking %s for its authorization: %w", c.cfg.Server, err)
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDocBytes))
		resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			return ParseChallenges(resp.Header), nil
		}
		session = resp.Header.Get("Mcp-Session-Id")
	}
	return Challenge{}, nil
}

// clientCredentials gets a token with the client credentials grant,
// authenticating with the configured secret or private key.
func (c *Client) clientCredentials(ctx context.Context) (*Record, error) {
	ch := c.Challenge()
	if ch.ResourceMetadata == "" && ch.Scope == "" {
		probed, err := c.probe(ctx)
		if err != nil {
			return nil, err
		}
		c.noteChallenge(probed)
		ch = c.Challenge()
	}
	d, err := discover(ctx, c.hc, c.cfg.URL, ch)
	if err != nil {
		return nil, err
	}
	auth, err := c.credentialsAuth(d)
	if err != nil {
		return nil, fmt.Errorf("getting a token for %s: %w", c.cfg.Server, err)
	}
	scopes := c.scopes(ctx, ch, d)
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {d.Resource}}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	tok, err := requestTokenRetrying(ctx, c.hc, d.Server.TokenEndpoint, form, auth)
	if err != nil {
		return nil, fmt.Errorf("getting a token for %s with client credentials: %w", c.cfg.Server, err)
	}
	if err := c.save(ctx, d, auth, scopes, tok, GrantClientCredentials); err != nil {
		return nil, err
	}
	return c.load(ctx)
}

// credentialsAuth is the client's authentication for the client
// credentials grant: private_key_jwt with a key, else the secret.
func (c *Client) credentialsAuth(d *Discovery) (clientAuth, error) {
	if c.cfg.ClientID == "" {
		return clientAuth{}, errors.New("client credentials need auth.client_id")
	}
	if c.cfg.PrivateKey != "" {
		s, err := parseSigner(c.cfg.PrivateKey, c.cfg.SigningAlg)
		if err != nil {
			return clientAuth{}, err
		}
		return clientAuth{id: c.cfg.ClientID, method: AuthPrivateKeyJWT, key: s, audience: d.Issuer}, nil
	}
	if c.cfg.ClientSecret == "" {
		return clientAuth{}, errors.New("client credentials need auth.client_secret or auth.private_key")
	}
	return clientAuth{id: c.cfg.ClientID, secret: c.cfg.ClientSecret,
		method: pickAuthMethod(c.cfg.AuthMethod, c.cfg.ClientSecret, d.Server.TokenEndpointAuthMethodsSupported)}, nil
}

// recordAuth is the client authentication a stored record was got with.
func (c *Client) recordAuth(r *Record) clientAuth {
	a := clientAuth{id: r.ClientID, secret: r.ClientSecret, method: r.AuthMethod, audience: r.Issuer}
	if a.method == AuthPrivateKeyJWT {
		a.key, _ = parseSigner(c.cfg.PrivateKey, c.cfg.SigningAlg)
	}
	return a
}

// refresh uses r's refresh token and stores the new token, keeping the
// old refresh token when the server sends none.
func (c *Client) refresh(ctx context.Context, r *Record) (*Record, error) {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {r.Token.RefreshToken}}
	if r.Resource != "" {
		form.Set("resource", r.Resource)
	}
	tok, err := requestTokenRetrying(ctx, c.hc, r.TokenEndpoint, form, c.recordAuth(r))
	if err != nil {
		return nil, err
	}
	if tok.RefreshToken == "" {
		tok.RefreshToken = r.Token.RefreshToken
	}
	nr := *r
	nr.Token = *tok
	nr.NeedsLogin = ""
	nr.Updated = time.Now()
	if err := c.put(ctx, &nr); err != nil {
		return nil, err
	}
	return &nr, nil
}
