// Package oauthtest runs a small, spec-following OAuth 2.1 authorization
// server and an MCP resource it protects, on 127.0.0.1, for tests.
//
// No Go library on the module proxy serves the whole MCP authorization
// surface in a test-sized package (go-oauth2/oauth2 has PKCE and refresh
// but no dynamic registration, revocation or RFC 8414/9728 metadata), so
// this is written to the RFCs: RFC 8414 and RFC 9728 metadata, RFC 7591
// dynamic registration, the authorization code grant with mandatory PKCE
// S256 (an unapproved login is approved at once: there is no person),
// refresh tokens that rotate and whose reuse revokes the family (OAuth 2.1
// §4.3.1), client credentials with client_secret_basic, RFC 7009
// revocation, and RFC 8707 resource checks on every grant.
package oauthtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// Server is the authorization server and the protected resource, on one
// origin: the MCP endpoint is URL()+"/mcp".
type Server struct {
	// TokenTTL is the access token lifetime (default one hour).
	TokenTTL time.Duration
	// RequiredScopes must all be granted for MCP requests; the 401 names
	// them in its challenge.
	RequiredScopes []string
	// ScopesSupported is the resource metadata's scopes_supported.
	ScopesSupported []string

	// Counters tests assert on.
	Logins, Refreshes, FailedRefreshes, Registrations, Revocations, Unauthorized atomic.Int64

	srv  *httptest.Server
	next http.Handler
	// tokenHook, if set, sees token requests first: see SetTokenHook.
	tokenHook atomic.Pointer[TokenHook]

	mu       sync.Mutex
	clients  map[string]client // by client_id
	codes    map[string]grant  // authorization codes
	access   map[string]grant  // live access tokens
	refresh  map[string]grant  // live refresh tokens
	spent    map[string]string // used refresh token -> its family
	families map[string]bool   // revoked families
}

type client struct {
	secret       string
	redirectURIs []string
	method       string
}

type grant struct {
	clientID  string
	scopes    []string
	resource  string
	family    string
	expires   time.Time
	challenge string // PKCE, codes only
	redirect  string // codes only
}

// New starts a server in front of mcp, the handler of the MCP endpoint.
func New(mcp http.Handler) *Server {
	s := &Server{
		TokenTTL: time.Hour, next: mcp,
		clients: map[string]client{}, codes: map[string]grant{}, access: map[string]grant{},
		refresh: map[string]grant{}, spent: map[string]string{}, families: map[string]bool{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", s.resourceMetadata)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.serverMetadata)
	mux.HandleFunc("POST /register", s.register)
	mux.HandleFunc("GET /authorize", s.authorize)
	mux.HandleFunc("POST /token", s.token)
	mux.HandleFunc("POST /revoke", s.revoke)
	mux.Handle("/mcp", http.HandlerFunc(s.protect))
	s.srv = httptest.NewUnstartedServer(mux)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("oauthtest: listening: %v", err))
	}
	s.srv.Listener = ln
	s.srv.Start()
	return s
}

// URL is the server's origin; the MCP endpoint is URL()+"/mcp".
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// AddClient pre-registers a confidential client.
func (s *Server) AddClient(id, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients[id] = client{secret: secret, method: "client_secret_basic"}
}

// RevokeAll revokes every token, as a server does when a user signs out
// everywhere or an administrator cuts a session.
func (s *Server) RevokeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.access {
		s.families[g.family] = true
	}
	for _, g := range s.refresh {
		s.families[g.family] = true
	}
	clear(s.access)
	clear(s.refresh)
}

// Secrets returns every token, code and client secret the server issued,
// for tests that check none leaks.
func (s *Server) Secrets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range []map[string]grant{s.codes, s.access, s.refresh} {
		for k := range m {
			out = append(out, k)
		}
	}
	for k := range s.spent {
		out = append(out, k)
	}
	for _, c := range s.clients {
		if c.secret != "" {
			out = append(out, c.secret)
		}
	}
	return out
}

func random() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

func (s *Server) resource() string { return s.srv.URL + "/mcp" }

func (s *Server) resourceMetadata(w http.ResponseWriter, _ *http.Request) {
	doc := map[string]any{"resource": s.resource(), "authorization_servers": []string{s.srv.URL}}
	if len(s.ScopesSupported) > 0 {
		doc["scopes_supported"] = s.ScopesSupported
	}
	writeJSON(w, http.StatusOK, doc)
}

func (s *Server) serverMetadata(w http.ResponseWriter, _ *http.Request) {
	u := s.srv.URL
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                u,
		"authorization_endpoint":                u + "/authorize",
		"token_endpoint":                        u + "/token",
		"registration_endpoint":                 u + "/register",
		"revocation_endpoint":                   u + "/revoke",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token", "client_credentials"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"none", "client_secret_basic", "client_secret_post"},
	})
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
		Method       string   `json:"token_endpoint_auth_method"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.RedirectURIs) == 0 {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "redirect_uris required")
		return
	}
	c := client{redirectURIs: req.RedirectURIs, method: req.Method}
	if c.method == "" {
		c.method = "client_secret_basic"
	}
	if c.method != "none" {
		c.secret = random()
	}
	id := "client-" + random()[:12]
	s.mu.Lock()
	s.clients[id] = c
	s.mu.Unlock()
	s.Registrations.Add(1)
	resp := map[string]any{"client_id": id, "redirect_uris": c.redirectURIs, "token_endpoint_auth_method": c.method}
	if c.secret != "" {
		resp["client_secret"] = c.secret
	}
	writeJSON(w, http.StatusCreated, resp)
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	c, ok := s.clients[q.Get("client_id")]
	s.mu.Unlock()
	redirect := q.Get("redirect_uri")
	if !ok || !slices.Contains(c.redirectURIs, redirect) {
		http.Error(w, "unknown client or redirect_uri", http.StatusBadRequest)
		return
	}
	back, _ := url.Parse(redirect)
	bq := back.Query()
	bq.Set("state", q.Get("state"))
	switch {
	case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		bq.Set("error", "invalid_request")
		bq.Set("error_description", "PKCE S256 required")
	case q.Get("resource") != s.resource():
		bq.Set("error", "invalid_target")
	default:
		code := random()
		s.mu.Lock()
		s.codes[code] = grant{clientID: q.Get("client_id"), scopes: strings.Fields(q.Get("scope")), resource: q.Get("resource"),
			challenge: q.Get("code_challenge"), redirect: redirect, expires: time.Now().Add(time.Minute)}
		s.mu.Unlock()
		bq.Set("code", code)
	}
	back.RawQuery = bq.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// authenticate checks the client's credentials at the token endpoint.
func (s *Server) authenticate(r *http.Request) (string, bool) {
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	s.mu.Lock()
	c, ok := s.clients[id]
	s.mu.Unlock()
	if !ok {
		return "", false
	}
	if c.secret == "" {
		return id, true
	}
	return id, subtle.ConstantTimeCompare([]byte(secret), []byte(c.secret)) == 1
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "bad form")
		return
	}
	if h := s.tokenHook.Load(); h != nil && (*h)(w, r) {
		return
	}
	clientID, ok := s.authenticate(r)
	if !ok {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "client authentication failed")
		return
	}
	f := r.PostForm
	if f.Get("resource") != s.resource() {
		oauthError(w, http.StatusBadRequest, "invalid_target", "resource must be "+s.resource())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var g grant
	switch f.Get("grant_type") {
	case "authorization_code":
		code, found := s.codes[f.Get("code")]
		delete(s.codes, f.Get("code"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		switch {
		case !found || code.clientID != clientID || code.redirect != f.Get("redirect_uri") || time.Now().After(code.expires):
			oauthError(w, http.StatusBadRequest, "invalid_grant", "bad code")
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != code.challenge:
			oauthError(w, http.StatusBadRequest, "invalid_grant", "PKCE verification failed")
			return
		}
		g = code
		g.family = random()
		s.Logins.Add(1)
	case "refresh_token":
		rt := f.Get("refresh_token")
		old, found := s.refresh[rt]
		if !found || old.clientID != clientID || s.families[old.family] {
			if fam, reused := s.spent[rt]; reused {
				// Reuse of a rotated token: revoke the whole family.
				s.families[fam] = true
			}
			s.FailedRefreshes.Add(1)
			oauthError(w, http.StatusBadRequest, "invalid_grant", "refresh token is not valid")
			return
		}
		delete(s.refresh, rt)
		s.spent[rt] = old.family
		g = old
		s.Refreshes.Add(1)
	case "client_credentials":
		g = grant{clientID: clientID, scopes: strings.Fields(f.Get("scope")), resource: f.Get("resource"), family: random()}
		s.Logins.Add(1)
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "")
		return
	}
	at := random()
	g.expires = time.Now().Add(s.TokenTTL)
	s.access[at] = g
	resp := map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": int(s.TokenTTL.Seconds()), "scope": strings.Join(g.scopes, " ")}
	if f.Get("grant_type") != "client_credentials" {
		rt := random()
		s.refresh[rt] = g
		resp["refresh_token"] = rt
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "bad form")
		return
	}
	if _, ok := s.authenticate(r); !ok {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "")
		return
	}
	tok := r.PostForm.Get("token")
	s.mu.Lock()
	if g, ok := s.refresh[tok]; ok {
		s.families[g.family] = true
	}
	if g, ok := s.access[tok]; ok {
		s.families[g.family] = true
	}
	delete(s.refresh, tok)
	delete(s.access, tok)
	s.mu.Unlock()
	s.Revocations.Add(1)
	w.WriteHeader(http.StatusOK)
}

// protect lets MCP requests through with a live token holding the
// required scopes: 401 without one, 403 insufficient_scope when short.
func (s *Server) protect(w http.ResponseWriter, r *http.Request) {
	prm := s.srv.URL + "/.well-known/oauth-protected-resource/mcp"
	auth := r.Header.Get("Authorization")
	tok, isBearer := strings.CutPrefix(auth, "Bearer ")
	s.mu.Lock()
	g, ok := s.access[tok]
	if ok && (s.families[g.family] || time.Now().After(g.expires)) {
		ok = false
	}
	s.mu.Unlock()
	scope := ""
	if len(s.RequiredScopes) > 0 {
		scope = fmt.Sprintf(`, scope="%s"`, strings.Join(s.RequiredScopes, " "))
	}
	if !isBearer || !ok {
		s.Unauthorized.Add(1)
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="invalid_token", resource_metadata="%s"%s`, prm, scope))
		oauthError(w, http.StatusUnauthorized, "invalid_token", "missing or invalid token")
		return
	}
	for _, need := range s.RequiredScopes {
		if !slices.Contains(g.scopes, need) {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", resource_metadata="%s"%s`, prm, scope))
			oauthError(w, http.StatusForbidden, "insufficient_scope", "")
			return
		}
	}
	s.next.ServeHTTP(w, r)
}

// TokenHook sees a token request, its form parsed, before the server
// does; it returns true when it answered the request itself. Tests use it
// to make the token endpoint fail or turn hostile.
type TokenHook func(w http.ResponseWriter, r *http.Request) bool

// SetTokenHook installs h (nil removes it); it is safe to call while the
// server runs.
func (s *Server) SetTokenHook(h TokenHook) {
	if h == nil {
		s.tokenHook.Store(nil)
		return
	}
	s.tokenHook.Store(&h)
}

// EchoingRefusal answers every token request with the OAuth error code
// and an error_description that echoes the whole request: its form, as
// sent and decoded, and its Authorization header, as some servers do. A
// client that prints or stores the description as it is leaks what it
// sent: the refresh token, code, verifier, client secret or assertion.
func EchoingRefusal(code string) TokenHook {
	return func(w http.ResponseWriter, r *http.Request) bool {
		desc := fmt.Sprintf("rejected request: authorization %q, form %s, decoded %v", r.Header.Get("Authorization"), r.PostForm.Encode(), map[string][]string(r.PostForm))
		oauthError(w, http.StatusBadRequest, code, desc)
		return true
	}
}

// Failing answers the first n token requests with an HTTP error of
// status and a body that is no OAuth error (what a proxy in front of a
// restarting server sends); later requests go through. Its count says
// how many it failed.
func Failing(n int64, status int, count *atomic.Int64) TokenHook {
	return func(w http.ResponseWriter, _ *http.Request) bool {
		if count.Add(1) > n {
			return false
		}
		http.Error(w, "upstream connect error or disconnect/reset before headers", status)
		return true
	}
}

// Stalling holds the first n token requests without an answer until the
// client gives up (a timeout) or the server closes; later requests go
// through. Its count says how many it held.
func Stalling(n int64, count *atomic.Int64) TokenHook {
	return func(_ http.ResponseWriter, r *http.Request) bool {
		if count.Add(1) > n {
			return false
		}
		<-r.Context().Done()
		return true
	}
}

// SetTokenTTL sets the lifetime of the access tokens issued from now on,
// while the server runs (TokenTTL may be set only before the first
// request): a test can have a login issue a short-lived token and the
// refresh that follows a long-lived one.
func (s *Server) SetTokenTTL(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.TokenTTL = d
}

// ExpireAccessTokens ends every access token early, leaving refresh
// tokens valid: the client must refresh on the 401.
func (s *Server) ExpireAccessTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.access)
}

// NewEcho starts a server in front of an MCP server (streamable HTTP)
// with one tool, echo, which answers "echo: TEXT".
func NewEcho() *Server {
	s := mcpserver.NewMCPServer("protected", "1.0.0")
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("echo: " + req.GetString("text", "")), nil
	})
	return New(mcpserver.NewStreamableHTTPServer(s))
}
