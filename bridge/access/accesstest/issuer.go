// Package accesstest is an OAuth issuer for tests: it serves RFC 8414 and
// OpenID Connect metadata and a JWKS on 127.0.0.1, and mints JWT access
// tokens signed by its keys.
package accesstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"
)

// Issuer is a running test issuer.
type Issuer struct {
	// URL is the issuer identifier (http://127.0.0.1:port).
	URL string
	srv *httptest.Server

	mu   sync.Mutex
	rsa  jwk.Key // private, kid "rsa-1"
	ec   jwk.Key // private, kid "ec-1"
	pubs jwk.Set

	// JWKSFetches counts the JWKS requests served.
	JWKSFetches atomic.Int64

	// The login the authorization endpoint approves at once (there is no
	// person in a test): see LoginAs.
	loginSub    string
	loginGroups []string
	codes       map[string]code
}

// code is an issued authorization code.
type code struct {
	clientID, redirect, challenge, resource, scope string
}

// New starts an issuer on 127.0.0.1; it stops when the test ends.
func New(t testing.TB) *Issuer {
	t.Helper()
	iss := &Issuer{}
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	iss.rsa = mustKey(t, rk, "rsa-1")
	iss.ec = mustKey(t, ek, "ec-1")
	iss.pubs = jwk.NewSet()
	for _, k := range []jwk.Key{iss.rsa, iss.ec} {
		pub, err := k.PublicKey()
		if err != nil {
			t.Fatal(err)
		}
		if err := iss.pubs.AddKey(pub); err != nil {
			t.Fatal(err)
		}
	}
	mux := http.NewServeMux()
	meta := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer":                                iss.URL,
			"jwks_uri":                              iss.URL + "/jwks",
			"authorization_endpoint":                iss.URL + "/authorize",
			"token_endpoint":                        iss.URL + "/token",
			"registration_endpoint":                 iss.URL + "/register",
			"grant_types_supported":                 []string{"authorization_code"},
			"token_endpoint_auth_methods_supported": []string{"none"},
			"scopes_supported":                      []string{"mcp:tools"},
			"response_types_supported":              []string{"code"},
			"code_challenge_methods_supported":      []string{"S256"},
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
		})
	}
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", meta)
	mux.HandleFunc("GET /.well-known/openid-configuration", meta)
	iss.codes = map[string]code{}
	mux.HandleFunc("POST /register", iss.register)
	mux.HandleFunc("GET /authorize", iss.authorize)
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) { iss.token(t, w, r) })
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, _ *http.Request) {
		iss.JWKSFetches.Add(1)
		iss.mu.Lock()
		defer iss.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(iss.pubs)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	iss.srv = httptest.NewUnstartedServer(mux)
	iss.srv.Listener.Close()
	iss.srv.Listener = ln
	iss.srv.Start()
	iss.URL = iss.srv.URL
	t.Cleanup(iss.srv.Close)
	return iss
}

func mustKey(t testing.TB, raw any, kid string) jwk.Key {
	t.Helper()
	k, err := jwk.Import(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Set(jwk.KeyIDKey, kid); err != nil {
		t.Fatal(err)
	}
	return k
}

// Claims are a token's claims; Mint fills iss, iat and exp when absent.
type Claims map[string]any

// Mint returns a token for sub with aud, groups and scope, valid for an
// hour, signed with the RSA key.
func (iss *Issuer) Mint(t testing.TB, sub, aud string, groups []string, scope string) string {
	return iss.MintClaims(t, Claims{"sub": sub, "aud": aud, "groups": groups, "scope": scope})
}

// MintClaims signs claims with the RSA key (RS256); see Sign for others.
func (iss *Issuer) MintClaims(t testing.TB, c Claims) string {
	return iss.Sign(t, c, jwa.RS256(), iss.rsa)
}

// MintEC signs claims with the EC key (ES256).
func (iss *Issuer) MintEC(t testing.TB, c Claims) string {
	return iss.Sign(t, c, jwa.ES256(), iss.ec)
}

// PublicRSA is the public RSA key as the JWKS publishes it.
func (iss *Issuer) PublicRSA(t testing.TB) jwk.Key {
	pub, err := iss.rsa.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

// Sign signs claims with key and alg, filling iss, iat and exp when
// absent. key's kid goes in the header.
func (iss *Issuer) Sign(t testing.TB, c Claims, alg jwa.SignatureAlgorithm, key any) string {
	t.Helper()
	tok := jwt.New()
	now := time.Now()
	defaults := Claims{"iss": iss.URL, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	for k, v := range defaults {
		if _, ok := c[k]; !ok {
			c[k] = v
		}
	}
	for k, v := range c {
		if v == nil {
			continue
		}
		if err := tok.Set(k, v); err != nil {
			t.Fatalf("setting claim %s: %v", k, err)
		}
	}
	signed, err := jwt.Sign(tok, jwt.WithKey(alg, key, jws.WithProtectedHeaders(kidHeader(t, key))))
	if err != nil {
		t.Fatalf("signing: %v", err)
	}
	return string(signed)
}

func kidHeader(t testing.TB, key any) jws.Headers {
	h := jws.NewHeaders()
	if k, ok := key.(jwk.Key); ok {
		if kid, ok := k.KeyID(); ok {
			if err := h.Set(jws.KeyIDKey, kid); err != nil {
				t.Fatal(err)
			}
		}
	}
	return h
}

// Rotate replaces the RSA key with a new one under kid, as an IdP's key
// rotation does: tokens signed before no longer verify.
func (iss *Issuer) Rotate(t testing.TB, kid string) {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	k := mustKey(t, rk, kid)
	pub, err := k.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.rsa = k
	_ = iss.pubs.AddKey(pub)
}

// LoginAs sets who logs in at the authorization endpoint: the codes it
// issues, and so the access tokens, are for sub in groups.
func (iss *Issuer) LoginAs(sub string, groups ...string) {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.loginSub, iss.loginGroups = sub, groups
}

// register is RFC 7591 dynamic registration of a public client.
func (iss *Issuer) register(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil {
		http.Error(w, "bad registration", http.StatusBadRequest)
		return
	}
	req["client_id"] = "client-" + randomString()
	req["token_endpoint_auth_method"] = "none"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(req)
}

// authorize approves the login at once and redirects back with a code;
// PKCE S256 and an RFC 8707 resource are required.
func (iss *Issuer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	back, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || back.Host == "" {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	bq := back.Query()
	bq.Set("state", q.Get("state"))
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("resource") == "" {
		bq.Set("error", "invalid_request")
	} else {
		c := randomString()
		iss.mu.Lock()
		iss.codes[c] = code{clientID: q.Get("client_id"), redirect: q.Get("redirect_uri"), challenge: q.Get("code_challenge"),
			resource: q.Get("resource"), scope: q.Get("scope")}
		iss.mu.Unlock()
		bq.Set("code", c)
	}
	back.RawQuery = bq.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// token exchanges a code (with its PKCE verifier) for a JWT access token
// whose aud is the resource the client asked for.
func (iss *Issuer) token(t testing.TB, w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "authorization_code" {
		http.Error(w, `{"error":"unsupported_grant_type"}`, http.StatusBadRequest)
		return
	}
	f := r.PostForm
	iss.mu.Lock()
	c, ok := iss.codes[f.Get("code")]
	delete(iss.codes, f.Get("code"))
	sub, groups := iss.loginSub, iss.loginGroups
	iss.mu.Unlock()
	sum := sha256.Sum256([]byte(f.Get("code_verifier")))
	resource := f.Get("resource")
	if resource == "" {
		resource = c.resource
	}
	if !ok || c.redirect != f.Get("redirect_uri") || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge || resource != c.resource {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
		return
	}
	scope := c.scope
	if scope == "" {
		scope = "mcp:tools"
	}
	at := iss.MintClaims(t, Claims{"sub": sub, "aud": resource, "groups": groups, "scope": scope, "client_id": c.clientID})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": 3600, "scope": scope})
}

func randomString() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return strings.TrimRight(base64.RawURLEncoding.EncodeToString(b), "=")
}
