package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAuthConfig(t *testing.T) {
	// A real P-256 key in a file, named by ${KEYFILE} in the cases below.
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	notAKey := filepath.Join(t.TempDir(), "not-a-key.pem")
	if err := os.WriteFile(notAKey, []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		auth    string // the YAML of the auth block, indented under it
		environ []string
		want    Auth
		wantErr string
	}{
		{name: "empty", auth: "{}", want: Auth{}},
		{name: "oauth with everything", auth: `
      type: OAuth
      client_id: ${CID}
      client_secret: ${CSECRET}
      scopes: [read, "write"]
      redirect_port: ${PORT}
      client_metadata_url: https://tb.example/client.json`,
			environ: []string{"CID=my-client", "CSECRET=shh", "PORT=8765"},
			want: Auth{Type: "oauth", ClientID: "my-client", ClientSecret: "shh", Scopes: []string{"read", "write"},
				RedirectPort: 8765, ClientMetadataURL: "https://tb.example/client.json"}},
		{name: "client credentials secret", auth: `
      type: client_credentials
      client_id: ci
      client_secret: ${S}`, environ: []string{"S=x"},
			want: Auth{Type: "client_credentials", ClientID: "ci", ClientSecret: "x"}},
		{name: "client credentials key", auth: `
      type: client_credentials
      client_id: ci
      private_key_file: ${KEYFILE}
      signing_alg: ES256`,
			want: Auth{Type: "client_credentials", ClientID: "ci", PrivateKeyFile: keyFile, SigningAlg: "ES256"}},
		{name: "key file missing", auth: "\n      type: client_credentials\n      client_id: ci\n      private_key_file: ${KEYFILE}.gone", wantErr: "auth.private_key_file: reading the key"},
		{name: "key file not a key", auth: "\n      type: client_credentials\n      client_id: ci\n      private_key_file: " + notAKey, wantErr: "auth.private_key_file: " + notAKey + ": private key: cannot parse"},
		{name: "key cannot sign alg", auth: "\n      type: client_credentials\n      client_id: ci\n      private_key_file: ${KEYFILE}\n      signing_alg: RS256", wantErr: "cannot sign RS256"},
		{name: "key looks PEM but is not", auth: "\n      type: client_credentials\n      client_id: ci\n      private_key: \"-----BEGIN PRIVATE KEY-----\\nAAAA\\n-----END PRIVATE KEY-----\"", wantErr: "must be a PEM private key"},
		{name: "unset variable", auth: "\n      client_secret: ${NOPE}\n      client_id: x", wantErr: "NOPE"},
		{name: "bad type", auth: "\n      type: oauth2", wantErr: `auth.type: invalid value "oauth2"`},
		{name: "secret without id", auth: "\n      client_secret: x", wantErr: "auth.client_secret: needs auth.client_id"},
		{name: "http metadata url", auth: "\n      client_metadata_url: http://tb.example/c.json", wantErr: "auth.client_metadata_url: must be an https URL"},
		{name: "bare metadata url", auth: "\n      client_metadata_url: https://tb.example", wantErr: "must be an https URL with a path"},
		{name: "scope with space", auth: "\n      scopes: [\"read write\"]", wantErr: "auth.scopes[0]: invalid scope"},
		{name: "empty scope", auth: "\n      scopes: [\"\"]", wantErr: "auth.scopes[0]: invalid scope"},
		{name: "port range", auth: "\n      redirect_port: 70000", wantErr: "auth.redirect_port: must be a port"},
		{name: "port not a number", auth: "\n      redirect_port: lots", wantErr: "redirect_port"},
		{name: "cc without id", auth: "\n      type: client_credentials\n      client_secret: x", wantErr: "auth.client_id: missing"},
		{name: "cc without secret", auth: "\n      type: client_credentials\n      client_id: ci", wantErr: "needs client_secret, private_key or private_key_file"},
		{name: "cc with redirect", auth: "\n      type: client_credentials\n      client_id: ci\n      client_secret: s\n      redirect_port: 9000", wantErr: "no login, so no redirect"},
		{name: "two keys", auth: "\n      type: client_credentials\n      client_id: ci\n      private_key: \"-----BEGIN PRIVATE KEY-----\"\n      private_key_file: /k", wantErr: "not both"},
		{name: "key not PEM", auth: "\n      type: client_credentials\n      client_id: ci\n      private_key: s3cr3t-not-pem", wantErr: "must be a PEM private key"},
		{name: "key on oauth", auth: "\n      type: oauth\n      private_key_file: /k", wantErr: "set type: client_credentials"},
		{name: "bad alg", auth: "\n      type: client_credentials\n      client_id: ci\n      private_key_file: /k\n      signing_alg: HS256", wantErr: `auth.signing_alg: invalid value "HS256"`},
		{name: "unknown key", auth: "\n      client_ide: x", wantErr: "client_ide"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.yaml")
			body := "mcpServers:\n  remote:\n    url: https://mcp.example.com/mcp\n    auth: " + tt.auth + "\n"
			if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := Load(LoadOptions{Path: path, Environ: append(tt.environ, "KEYFILE="+keyFile)})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Load error = %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "s3cr3t") {
					t.Errorf("error quotes a secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			got := cfg.Servers["remote"].Auth
			if got.Type != tt.want.Type || got.ClientID != tt.want.ClientID || got.ClientSecret != tt.want.ClientSecret ||
				strings.Join(got.Scopes, " ") != strings.Join(tt.want.Scopes, " ") || got.RedirectPort != tt.want.RedirectPort ||
				got.ClientMetadataURL != tt.want.ClientMetadataURL || got.PrivateKeyFile != tt.want.PrivateKeyFile || got.SigningAlg != tt.want.SigningAlg {
				t.Errorf("auth = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestAuthWithStaticAuthorizationHeader(t *testing.T) {
	c := Default()
	c.Servers = map[string]Server{"remote": {URL: "https://mcp.example.com/mcp",
		Headers: map[string]string{"authorization": "Bearer s3cr3t"}, Auth: Auth{Type: AuthOAuth}}}
	normalize(&c)
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("Validate = %v, want an error that a header and an auth block conflict", err)
	}
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("the error quotes the header's secret: %v", err)
	}
}

func TestAuthOnStdioServer(t *testing.T) {
	c := Default()
	c.Servers = map[string]Server{"local": {Command: "x", Auth: Auth{ClientID: "a"}}}
	normalize(&c)
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "only remote servers (url) log in") {
		t.Errorf("Validate = %v", err)
	}
}

func TestAuthType(t *testing.T) {
	for _, tt := range []struct {
		auth Auth
		want string
	}{
		{Auth{}, ""},
		{Auth{Scopes: []string{"a"}}, AuthOAuth},
		{Auth{Type: AuthClientCredentials}, AuthClientCredentials},
	} {
		if got := (Server{Auth: tt.auth}).AuthType(); got != tt.want {
			t.Errorf("AuthType(%+v) = %q, want %q", tt.auth, got, tt.want)
		}
	}
}
