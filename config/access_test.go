package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestOAuthAndAccessConfig(t *testing.T) {
	const serve = `
serve:
  transport: http
  oauth:
    issuer: https://idp.example.com
    audience: https://gw.example.com/mcp
`
	tests := []struct {
		name    string
		body    string
		wantErr string
		check   func(t *testing.T, c *Config)
	}{
		{name: "the issue's example", body: serve + `    required_scopes: [mcp:tools]
access:
  - groups: [dev]
    allow: ["github::*", "filesystem::read_*"]
  - subjects: [alice@example.com]
    allow: ["*"]
    deny: ["*::delete_*"]
`, check: func(t *testing.T, c *Config) {
			want := OAuth{Issuer: "https://idp.example.com", Audience: "https://gw.example.com/mcp", GroupsClaim: "groups", RequiredScopes: []string{"mcp:tools"}}
			if !reflect.DeepEqual(c.Serve.OAuth, want) {
				t.Errorf("oauth = %+v, want %+v", c.Serve.OAuth, want)
			}
			if len(c.Access) != 2 || c.Access[1].Deny[0] != "*::delete_*" || c.Access[0].Groups[0] != "dev" {
				t.Errorf("access = %+v", c.Access)
			}
		}},
		{name: "loopback issuer over http", body: strings.Replace(serve, "https://idp.example.com", "http://127.0.0.1:9998", 1)},
		{name: "localhost issuer over http", body: strings.Replace(serve, "https://idp.example.com", "http://localhost:9998/realms/x", 1)},
		{name: "remote issuer over http", body: strings.Replace(serve, "https://idp.example.com", "http://idp.example.com", 1),
			wantErr: "serve.oauth.issuer: " + `issuer "http://idp.example.com" must use https://`},
		{name: "issuer with a query", body: strings.Replace(serve, "https://idp.example.com", "https://idp.example.com/?x=1", 1),
			wantErr: "invalid issuer"},
		{name: "no audience", body: strings.Replace(serve, "    audience: https://gw.example.com/mcp\n", "", 1),
			wantErr: "serve.oauth.audience: missing"},
		{name: "audience not a URL", body: strings.Replace(serve, "https://gw.example.com/mcp", "gateway", 1),
			wantErr: "invalid resource URL"},
		{name: "both auth_token and oauth", body: serve + "  auth_token: s3cret-token\n",
			wantErr: "serve.oauth and serve.auth_token are both set"},
		{name: "oauth over stdio", body: strings.Replace(serve, "transport: http", "transport: stdio", 1),
			wantErr: "needs serve.transport: http"},
		{name: "empty groups claim", body: serve + "    groups_claim: \"\"\n", wantErr: "groups_claim: must not be empty"},
		{name: "scope with a space", body: serve + "    required_scopes: [\"a b\"]\n", wantErr: "invalid scope"},
		{name: "introspection", body: serve + "    introspection_url: https://idp.example.com/oauth/introspect\n    introspection_client_id: gw\n    introspection_client_secret: ${INTRO_SECRET}\n",
			check: func(t *testing.T, c *Config) {
				o := c.Serve.OAuth
				if o.IntrospectionURL != "https://idp.example.com/oauth/introspect" || o.IntrospectionClientID != "gw" || o.IntrospectionClientSecret != "s3cr3t-from-env" {
					t.Errorf("introspection = %q %q (secret from ${INTRO_SECRET}: %v)", o.IntrospectionURL, o.IntrospectionClientID, o.IntrospectionClientSecret == "s3cr3t-from-env")
				}
			}},
		{name: "introspection over plain http", body: serve + "    introspection_url: http://idp.example.com/introspect\n    introspection_client_id: gw\n    introspection_client_secret: x\n",
			wantErr: "serve.oauth.introspection_url: " + `introspection endpoint "http://idp.example.com/introspect" must use https://`},
		{name: "introspection without a client", body: serve + "    introspection_url: https://idp.example.com/introspect\n",
			wantErr: "serve.oauth.introspection_client_id: missing"},
		{name: "introspection without a secret", body: serve + "    introspection_url: https://idp.example.com/introspect\n    introspection_client_id: gw\n",
			wantErr: "serve.oauth.introspection_client_secret: missing"},
		{name: "introspection client without an endpoint", body: serve + "    introspection_client_id: gw\n    introspection_client_secret: s3cr3t-from-env\n",
			wantErr: "serve.oauth.introspection_url: missing"},
		{name: "access without oauth", body: "access:\n  - groups: [dev]\n    allow: [\"*\"]\n", wantErr: "access: needs serve.oauth"},
		{name: "rule selects nobody", body: serve + "access:\n  - allow: [\"*\"]\n", wantErr: "access[0]: selects nobody"},
		{name: "rule allows and denies nothing", body: serve + "access:\n  - groups: [dev]\n", wantErr: "access[0].allow: missing"},
		{name: "bad glob", body: serve + "access:\n  - groups: [dev]\n    allow: [\"[\"]\n", wantErr: "access[0].allow[0]: invalid glob"},
		{name: "bad deny glob", body: serve + "access:\n  - groups: [dev]\n    allow: [\"*\"]\n    deny: [\"a[\"]\n", wantErr: "access[0].deny[0]: invalid glob"},
		{name: "empty group", body: serve + "access:\n  - groups: [\"\"]\n    allow: [\"*\"]\n", wantErr: "access[0].groups[0]: must not be empty"},
		{name: "unknown key in a rule", body: serve + "access:\n  - group: [dev]\n    allow: [\"*\"]\n", wantErr: "unknown key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(path, []byte(tt.body), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := Load(LoadOptions{Path: path, Environ: []string{"TOOLBRIDGE_STATE_DIR=" + t.TempDir(), "INTRO_SECRET=s3cr3t-from-env"}})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Load error = %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret-token") || strings.Contains(err.Error(), "s3cr3t-from-env") {
					t.Fatalf("the error shows the auth token: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if tt.check != nil {
				tt.check(t, cfg)
			}
		})
	}
}

func TestOAuthFromEnvironment(t *testing.T) {
	cfg, err := Load(LoadOptions{Environ: []string{
		"TOOLBRIDGE_STATE_DIR=" + t.TempDir(),
		"TOOLBRIDGE_SERVE__TRANSPORT=http",
		"TOOLBRIDGE_SERVE__OAUTH__ISSUER=https://idp.example.com",
		"TOOLBRIDGE_SERVE__OAUTH__AUDIENCE=https://gw.example.com/mcp",
		"TOOLBRIDGE_SERVE__OAUTH__REQUIRED_SCOPES=mcp:tools,mcp:call",
	}})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got := cfg.Serve.OAuth.RequiredScopes; len(got) != 2 || got[1] != "mcp:call" {
		t.Errorf("required_scopes = %q", got)
	}
}
