package oauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseChallenges(t *testing.T) {
	tests := []struct {
		name   string
		header []string
		want   Challenge
	}{
		{"none", nil, Challenge{}},
		{"prm only", []string{`Bearer resource_metadata="https://x/.well-known/oauth-protected-resource/mcp"`},
			Challenge{ResourceMetadata: "https://x/.well-known/oauth-protected-resource/mcp"}},
		{"all params", []string{`Bearer error="insufficient_scope", scope="a b", resource_metadata="https://x/m"`},
			Challenge{ResourceMetadata: "https://x/m", Scope: "a b", Error: "insufficient_scope"}},
		{"unquoted and case", []string{`bearer Scope=read, ERROR=invalid_token`}, Challenge{Scope: "read", Error: "invalid_token"}},
		{"after basic", []string{`Basic realm="x", Bearer scope="s"`}, Challenge{Scope: "s"}},
		{"second header", []string{`Basic realm="x"`, `Bearer scope="s"`}, Challenge{Scope: "s"}},
		{"escaped quote", []string{`Bearer scope="a\"b"`}, Challenge{Scope: `a"b`}},
		{"not bearer", []string{`Basic realm="x"`}, Challenge{}},
		{"unterminated", []string{`Bearer scope="abc`}, Challenge{Scope: "abc"}},
		{"garbage", []string{`=,,"=`}, Challenge{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tt.header {
				h.Add("WWW-Authenticate", v)
			}
			if got := ParseChallenges(h); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func FuzzParseChallenges(f *testing.F) {
	for _, s := range []string{
		`Bearer error="insufficient_scope", scope="a b", resource_metadata="https://x/m"`,
		`Basic realm="x", Bearer scope="s"`, `Bearer scope="a\"b`, `Negotiate abc==`, `,=,"`, "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h := http.Header{"Www-Authenticate": {s}}
		ch := ParseChallenges(h) // must not panic or hang
		if len(ch.Scope) > len(s) || len(ch.ResourceMetadata) > len(s) {
			t.Fatalf("a parameter longer than the header: %+v", ch)
		}
	})
}

func TestServerMetadataURLs(t *testing.T) {
	tests := []struct {
		issuer string
		want   []string
	}{
		{"https://as.example", []string{"https://as.example/.well-known/oauth-authorization-server", "https://as.example/.well-known/openid-configuration"}},
		{"https://as.example/tenant1/", []string{
			"https://as.example/.well-known/oauth-authorization-server/tenant1",
			"https://as.example/.well-known/openid-configuration/tenant1",
			"https://as.example/tenant1/.well-known/openid-configuration"}},
		{"not a url", nil},
	}
	for _, tt := range tests {
		if got := serverMetadataURLs(tt.issuer); !slices.Equal(got, tt.want) {
			t.Errorf("serverMetadataURLs(%q) = %q, want %q", tt.issuer, got, tt.want)
		}
	}
}

func TestResourceAndIssuerChecks(t *testing.T) {
	base, _ := url.Parse("https://mcp.example/api/mcp")
	for _, tt := range []struct {
		resource string
		want     bool
	}{
		{"https://mcp.example/api/mcp", true},
		{"https://mcp.example/api/mcp/", true},
		{"https://mcp.example", true},
		{"https://mcp.example/api", true},
		{"https://mcp.example/ap", false},
		{"https://evil.example/api/mcp", false},
		{"http://mcp.example/api/mcp", false},
	} {
		if got := resourceCovers(tt.resource, base); got != tt.want {
			t.Errorf("resourceCovers(%q) = %v, want %v", tt.resource, got, tt.want)
		}
	}
	for _, tt := range []struct {
		declared, asked string
		want            bool
	}{
		{"https://as.example", "https://as.example/", true},
		{"https://as.example", "https://as.example/tenant1", true},
		{"https://evil.example", "https://as.example", false},
		{"", "https://as.example", false},
	} {
		if got := issuerMatches(tt.declared, tt.asked); got != tt.want {
			t.Errorf("issuerMatches(%q, %q) = %v, want %v", tt.declared, tt.asked, got, tt.want)
		}
	}
	if err := sameOrigin("https://evil.example/m", base); err == nil {
		t.Error("sameOrigin accepted another host")
	}
}

func TestPickAuthMethod(t *testing.T) {
	for _, tt := range []struct {
		preferred, secret string
		supported         []string
		want              string
	}{
		{"", "", nil, AuthNone},
		{"", "s", nil, AuthSecretPost},
		{"", "s", []string{"client_secret_basic"}, AuthSecretBasic},
		{"", "s", []string{"private_key_jwt", "client_secret_post"}, AuthSecretPost},
		{"", "s", []string{"none"}, AuthNone},
		{AuthSecretBasic, "s", []string{"client_secret_post"}, AuthSecretBasic},
	} {
		if got := pickAuthMethod(tt.preferred, tt.secret, tt.supported); got != tt.want {
			t.Errorf("pickAuthMethod(%q, %q, %v) = %q, want %q", tt.preferred, tt.secret, tt.supported, got, tt.want)
		}
	}
}

func pemOf(t *testing.T, key any) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

func TestClientAssertion(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	s, err := parseSigner(pemOf(t, ec), "")
	if err != nil || s.alg != "ES256" {
		t.Fatalf("parseSigner(P-256) = %v, %v", s, err)
	}
	jwt, err := s.assertion("client-1", "https://as.example", time.Unix(1000, 0))
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("assertion has %d parts", len(parts))
	}
	var claims map[string]any
	b, _ := base64.RawURLEncoding.DecodeString(parts[1])
	if err := json.Unmarshal(b, &claims); err != nil {
		t.Fatal(err)
	}
	if claims["iss"] != "client-1" || claims["sub"] != "client-1" || claims["aud"] != "https://as.example" || claims["jti"] == "" {
		t.Errorf("claims = %v", claims)
	}
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	h := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	r, ss := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	if len(sig) != 64 || !ecdsa.Verify(&ec.PublicKey, h[:], r, ss) {
		t.Error("the ES256 signature does not verify")
	}

	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	if s, err := parseSigner(pemOf(t, rk), "RS256"); err != nil || s.alg != "RS256" {
		t.Errorf("parseSigner(RSA) = %v, %v", s, err)
	}
	for _, tt := range []struct{ pem, alg, want string }{
		{"not pem", "", "not PEM"},
		{pemOf(t, ec), "RS256", "cannot sign RS256"},
		{pemOf(t, rk), "ES256", "signs RS256"},
		{"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "", "cannot parse"},
	} {
		if _, err := parseSigner(tt.pem, tt.alg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parseSigner(..., %q) = %v, want %q", tt.alg, err, tt.want)
		}
	}
}

// TestCanonicalResource checks the resource toolbridge names to the
// authorization server when the server publishes no resource metadata: the
// server's URL without the credentials a config may put in it. It travels
// in the login URL (printed by auth login --no-browser, opened in a
// browser) and to a third party's endpoints, where no masking reaches it.
func TestCanonicalResource(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"https://mcp.example/mcp", "https://mcp.example/mcp"},
		{"https://mcp.example/mcp/", "https://mcp.example/mcp"},
		{"https://mcp.example/mcp#frag", "https://mcp.example/mcp"},
		{"https://bob:pw-secret@mcp.example/mcp", "https://mcp.example/mcp"},
		{"https://mcp.example/mcp?api_key=key-secret&x=1", "https://mcp.example/mcp"},
		{"http://127.0.0.1:8931/mcp?", "http://127.0.0.1:8931/mcp"},
	} {
		u, err := url.Parse(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := canonicalResource(u); got != tt.want {
			t.Errorf("canonicalResource(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
