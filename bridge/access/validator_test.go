package access_test

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/toolbridge/toolbridge/bridge/access"
	"github.com/toolbridge/toolbridge/bridge/access/accesstest"
	"github.com/toolbridge/toolbridge/config"
)

const audience = "https://gw.example.com/mcp"

func newValidator(t testing.TB, iss *accesstest.Issuer, scopes ...string) *access.Validator {
	t.Helper()
	v, err := access.NewValidator(config.OAuth{Issuer: iss.URL, Audience: audience, GroupsClaim: "groups", RequiredScopes: scopes}, access.ValidatorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestValidateGoodToken(t *testing.T) {
	iss := accesstest.New(t)
	v := newValidator(t, iss, "mcp:tools")
	for name, tok := range map[string]string{
		"RS256": iss.Mint(t, "alice@example.com", audience, []string{"dev", "ops"}, "openid mcp:tools"),
		"ES256": iss.MintEC(t, accesstest.Claims{"sub": "alice@example.com", "aud": []string{"https://other.example.com", audience}, "groups": []string{"dev", "ops"}, "scp": []string{"mcp:tools"}}),
	} {
		t.Run(name, func(t *testing.T) {
			id, err := v.Validate(context.Background(), tok)
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if id.Subject != "alice@example.com" || !id.InGroup("ops") || !id.HasScope("mcp:tools") || id.Issuer != iss.URL {
				t.Errorf("identity = %+v", id)
			}
			for _, shown := range []string{id.String(), fmt.Sprint(id), mustJSON(t, id)} {
				if strings.Contains(shown, tok) || strings.Contains(shown, strings.Split(tok, ".")[2]) {
					t.Errorf("identity shows the token: %s", shown)
				}
				if !strings.Contains(shown, "alice@example.com") {
					t.Errorf("identity does not show the subject: %s", shown)
				}
			}
		})
	}
}

func mustJSON(t testing.TB, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestValidateBadTokens is the table: every bad token is a 401
// invalid_token with the same description, and the error says nothing of
// the token.
func TestValidateBadTokens(t *testing.T) {
	iss := accesstest.New(t)
	v := newValidator(t, iss)
	enc := base64.RawURLEncoding
	good := iss.Mint(t, "alice", audience, []string{"dev"}, "")
	parts := strings.Split(good, ".")
	now := time.Now()

	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	unknownKid, _ := jwk.Import(otherKey)
	_ = unknownKid.Set(jwk.KeyIDKey, "no-such-kid")
	wrongKeySameKid, _ := jwk.Import(otherKey)
	_ = wrongKeySameKid.Set(jwk.KeyIDKey, "rsa-1")

	// HS256 keyed with the issuer's public key, as published: the classic
	// algorithm-confusion forgery.
	var pubRaw rsa.PublicKey
	if err := jwk.Export(iss.PublicRSA(t), &pubRaw); err != nil {
		t.Fatal(err)
	}
	pubDER, _ := x509.MarshalPKIXPublicKey(&pubRaw)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	payload := parts[1]
	hsForge := func(secret []byte) string {
		head := enc.EncodeToString([]byte(`{"alg":"HS256","kid":"rsa-1","typ":"JWT"}`))
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(head + "." + payload))
		return head + "." + payload + "." + enc.EncodeToString(m.Sum(nil))
	}
	jwksJSON, _ := json.Marshal(iss.PublicRSA(t))

	tampered, _ := json.Marshal(map[string]any{"iss": iss.URL, "sub": "root", "aud": audience, "exp": now.Add(time.Hour).Unix(), "groups": []string{"ops"}})

	tests := []struct {
		name, token string
	}{
		{"expired", iss.MintClaims(t, accesstest.Claims{"sub": "alice", "aud": audience, "exp": now.Add(-2 * time.Minute).Unix()})},
		{"nbf in the future", iss.MintClaims(t, accesstest.Claims{"sub": "alice", "aud": audience, "nbf": now.Add(10 * time.Minute).Unix()})},
		{"wrong aud", iss.Mint(t, "alice", "https://gw.example.com/other", nil, "")},
		{"aud of an upstream", iss.Mint(t, "alice", "https://api.githubcopilot.com/mcp", nil, "")},
		{"no aud", iss.MintClaims(t, accesstest.Claims{"sub": "alice"})},
		{"wrong iss", iss.MintClaims(t, accesstest.Claims{"sub": "alice", "aud": audience, "iss": "https://evil.example.com"})},
		{"no exp", iss.MintClaims(t, accesstest.Claims{"sub": "alice", "aud": audience, "exp": nil, "iat": now.Unix()}) + ""},
		{"no sub", iss.MintClaims(t, accesstest.Claims{"aud": audience})},
		{"alg none", enc.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + payload + "."},
		{"alg none with kid", enc.EncodeToString([]byte(`{"alg":"none","kid":"rsa-1"}`)) + "." + payload + "."},
		{"HS256 with the public key PEM", hsForge(pubPEM)},
		{"HS256 with the public key DER", hsForge(pubDER)},
		{"HS256 with the JWK JSON", hsForge(jwksJSON)},
		{"unknown kid", iss.Sign(t, accesstest.Claims{"sub": "alice", "aud": audience}, jwa.RS256(), unknownKid)},
		{"right kid, wrong key", iss.Sign(t, accesstest.Claims{"sub": "alice", "aud": audience}, jwa.RS256(), wrongKeySameKid)},
		{"RS256 header on the EC key's kid", swapHeader(t, good, `{"alg":"RS256","kid":"ec-1"}`)},
		{"tampered payload", parts[0] + "." + enc.EncodeToString(tampered) + "." + parts[2]},
		{"tampered signature", parts[0] + "." + parts[1] + "." + enc.EncodeToString([]byte("not the signature"))},
		{"garbage", "garbage"},
		{"three dots of garbage", "a.b.c"},
		{"empty", ""},
		{"JWE-shaped", "a.b.c.d.e"},
		{"huge", strings.Repeat("A", 20<<10) + "." + payload + "." + parts[2]},
		{"JSON serialization", `{"payload":"` + payload + `","signatures":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := v.Validate(context.Background(), tt.token)
			if err == nil {
				t.Fatalf("accepted, identity %+v", id)
			}
			t.Logf("refused: %v", err)
			var ae *access.Error
			if !errors.As(err, &ae) {
				t.Fatalf("error %T %v, want *access.Error", err, err)
			}
			if ae.Status != http.StatusUnauthorized || ae.Code != "invalid_token" {
				t.Errorf("status %d code %s, want 401 invalid_token", ae.Status, ae.Code)
			}
			if ae.Description() != "the access token is missing, invalid or expired" {
				t.Errorf("description %q tells the client more than the others", ae.Description())
			}
			for _, part := range strings.Split(tt.token, ".") {
				if len(part) > 8 && strings.Contains(err.Error(), part) {
					t.Errorf("error quotes the token: %v", err)
				}
			}
		})
	}
}

func swapHeader(t testing.TB, tok, header string) string {
	p := strings.Split(tok, ".")
	return base64.RawURLEncoding.EncodeToString([]byte(header)) + "." + p[1] + "." + p[2]
}

func TestValidateInsufficientScope(t *testing.T) {
	iss := accesstest.New(t)
	v := newValidator(t, iss, "mcp:tools", "mcp:call")
	_, err := v.Validate(context.Background(), iss.Mint(t, "alice", audience, nil, "openid mcp:tools"))
	var ae *access.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusForbidden || ae.Code != "insufficient_scope" || ae.Scope != "mcp:tools mcp:call" {
		t.Fatalf("err = %#v, want 403 insufficient_scope naming both scopes", err)
	}
	if _, err := v.Validate(context.Background(), iss.Mint(t, "alice", audience, nil, "mcp:call mcp:tools")); err != nil {
		t.Fatalf("token with both scopes: %v", err)
	}
}

// TestUnknownKidRefetchIsRateLimited: after a key rotation the new kid is
// found by refetching the JWKS, but a flood of made-up kids costs the IdP
// at most one fetch per interval.
func TestUnknownKidRefetchIsRateLimited(t *testing.T) {
	iss := accesstest.New(t)
	now := time.Now()
	clock := func() time.Time { return now }
	v, err := access.NewValidator(config.OAuth{Issuer: iss.URL, Audience: audience}, access.ValidatorOptions{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := v.Validate(ctx, iss.Mint(t, "alice", audience, nil, "")); err != nil {
		t.Fatal(err)
	}
	if n := iss.JWKSFetches.Load(); n != 1 {
		t.Fatalf("JWKS fetched %d times, want 1", n)
	}
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	for i := range 50 {
		k, _ := jwk.Import(other)
		_ = k.Set(jwk.KeyIDKey, fmt.Sprintf("forged-%d", i))
		if _, err := v.Validate(ctx, iss.Sign(t, accesstest.Claims{"sub": "x", "aud": audience}, jwa.RS256(), k)); err == nil {
			t.Fatal("forged token accepted")
		}
	}
	if n := iss.JWKSFetches.Load(); n > 2 {
		t.Fatalf("50 unknown kids made %d JWKS fetches, want at most 2", n)
	}
	// The IdP rotates its key; once the refetch interval has passed, the
	// new kid is found.
	iss.Rotate(t, "rsa-2")
	now = now.Add(11 * time.Second)
	if _, err := v.Validate(ctx, iss.Mint(t, "bob", audience, nil, "")); err != nil {
		t.Fatalf("token under the rotated key: %v", err)
	}
}

func TestNewValidatorRefusesPlainHTTPIssuer(t *testing.T) {
	_, err := access.NewValidator(config.OAuth{Issuer: "http://idp.example.com", Audience: audience}, access.ValidatorOptions{})
	if err == nil || !strings.Contains(err.Error(), "https://") {
		t.Fatalf("err = %v, want a refusal naming https://", err)
	}
}

// TestIssuerMetadataMustNameTheIssuer: metadata naming another issuer is
// not trusted, so no token validates.
func TestIssuerMetadataMustNameTheIssuer(t *testing.T) {
	iss := accesstest.New(t)
	v, err := access.NewValidator(config.OAuth{Issuer: iss.URL + "/tenant", Audience: audience}, access.ValidatorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tok := iss.MintClaims(t, accesstest.Claims{"sub": "a", "aud": audience, "iss": iss.URL + "/tenant"})
	if _, err := v.Validate(context.Background(), tok); err == nil {
		t.Fatal("accepted a token although the metadata names another issuer")
	}
}
