package config

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// secretConfig is a config with a secret in every place Redacted covers.
// Each secret is a distinct string so the test can look for each one.
func secretConfig() (*Config, []string) {
	secrets := []string{
		"s3cr3t-env-value", "s3cr3t-env-dotted", "s3cr3t-header", "s3cr3t-header-2",
		"s3cr3t-auth-token", "s3cr3t-userinfo-user", "s3cr3t-userinfo-pass", "s3cr3t-query-token",
		"s3cr3t-fragment", "s3cr3t-pg-pass", "s3cr3t-flag-value", "s3cr3t-flag-eq", "s3cr3t-name-eq",
		"s3cr3t-bearer", "s3cr3t-hook-arg", "s3cr3t-arg-url-key", "s3cr3t-client-secret", "s3cr3t-private-key",
		"s3cr3t-introspection",
	}
	c := Default()
	c.Servers = map[string]Server{
		"local": {
			Command: "npx",
			Args: []string{
				"-y", "@modelcontextprotocol/server-postgres",
				"postgresql://reader:s3cr3t-pg-pass@db.internal:5432/shop",
				"--api-key", "s3cr3t-flag-value",
				"--client-secret=s3cr3t-flag-eq",
				"GITHUB_TOKEN=s3cr3t-name-eq",
				"--header", "Authorization: Bearer s3cr3t-bearer",
				"--endpoint=https://api.example.com/v1?key=s3cr3t-arg-url-key&region=eu",
			},
			Env: map[string]string{"API_TOKEN": "s3cr3t-env-value", "FOO.BAR": "s3cr3t-env-dotted"},
		},
		"remote": {
			URL:     "https://s3cr3t-userinfo-user:s3cr3t-userinfo-pass@mcp.example.com/mcp?access_token=s3cr3t-query-token&region=eu#auth=s3cr3t-fragment",
			Headers: map[string]string{"Authorization": "Bearer s3cr3t-header", "X-Api-Key": "s3cr3t-header-2"},
		},
		"login": {
			URL:  "https://login.example.com/mcp",
			Auth: Auth{Type: AuthOAuth, ClientID: "public-id", ClientSecret: "s3cr3t-client-secret", Scopes: []string{"read"}},
		},
		"machine": {
			URL:  "https://machine.example.com/mcp",
			Auth: Auth{Type: AuthClientCredentials, ClientID: "ci", PrivateKey: "-----BEGIN PRIVATE KEY-----\ns3cr3t-private-key\n-----END PRIVATE KEY-----\n"},
		},
	}
	c.Serve.AuthToken = "s3cr3t-auth-token"
	c.Serve.OAuth.IntrospectionClientSecret = "s3cr3t-introspection"
	c.Hooks = []Hook{{Match: "*", Command: "hook", Args: []string{"--token", "s3cr3t-hook-arg"}, Events: []string{HookBefore}, Timeout: DefaultHookTimeout}}
	return &c, secrets
}

func TestRenderMasksEverySecret(t *testing.T) {
	c, secrets := secretConfig()
	before := c.clone()
	for _, format := range []string{"yaml", "json"} {
		out, err := c.Render(format)
		if err != nil {
			t.Fatalf("Render(%s): %v", format, err)
		}
		text := string(out)
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("Render(%s) leaks %q:\n%s", format, s, text)
			}
		}
		// What is not secret stays readable.
		for _, keep := range []string{"db.internal:5432/****", "mcp.example.com:443/mcp", "region=****", "API_TOKEN", "FOO.BAR", "X-Api-Key", "--api-key", "GITHUB_TOKEN=", "Authorization: " + Mask, "@modelcontextprotocol/server-postgres", "public-id", "client_secret"} {
			if !strings.Contains(text, keep) {
				t.Errorf("Render(%s) lost %q:\n%s", format, keep, text)
			}
		}
	}
	if !reflect.DeepEqual(c, before) {
		t.Errorf("Render changed the config")
	}
}

func TestRedactedIsADeepCopy(t *testing.T) {
	c, _ := secretConfig()
	r := c.Redacted()
	if c.Servers["local"].Env["API_TOKEN"] != "s3cr3t-env-value" || c.Servers["local"].Args[3] != "--api-key" ||
		c.Servers["local"].Args[4] != "s3cr3t-flag-value" || c.Hooks[0].Args[1] != "s3cr3t-hook-arg" {
		t.Errorf("Redacted modified the original: %+v", c.Servers["local"])
	}
	if r.Servers["local"].Env["API_TOKEN"] != Mask || r.Serve.AuthToken != Mask || r.Servers["remote"].Headers["X-Api-Key"] != Mask {
		t.Errorf("Redacted copy not masked: %+v", r)
	}
	var nilCfg *Config
	if nilCfg.Redacted() != nil {
		t.Errorf("nil.Redacted() != nil")
	}
}

func TestRedactURL(t *testing.T) {
	// By default a URL shows as scheme://host:port, the path with every
	// segment but common endpoint words masked, and every query value
	// masked; with full (show_full_urls) only its credentials are masked.
	tests := []struct{ in, want, full string }{
		{"", "", ""},
		{"https://mcp.example.com/mcp", "https://mcp.example.com:443/mcp", "https://mcp.example.com/mcp"},
		{"https://u:p@h.example/x", "https://****@h.example:443/****", "https://****@h.example/x"},
		{"https://tok@h.example/", "https://****@h.example:443/", "https://****@h.example/"},
		{"https://h.example/?api_key=abc&q=1&Token=x", "https://h.example:443/?api_key=****&q=****&Token=****", "https://h.example/?api_key=****&q=1&Token=****"},
		{"https://h.example/?sig=abc%20d&page=2", "https://h.example:443/?sig=****&page=****", "https://h.example/?sig=****&page=2"},
		{"https://h.example/?signal=on&design=x", "https://h.example:443/?signal=****&design=****", "https://h.example/?signal=on&design=x"},
		{"https://h.example/mcp?KEY=a&ApiKey=b&apikey=c&access_token=d&AUTH=e&Signature=f&secret=g&Password=h&x-amz-sig=i&q=keep",
			"https://h.example:443/mcp?KEY=****&ApiKey=****&apikey=****&access_token=****&AUTH=****&Signature=****&secret=****&Password=****&x-amz-sig=****&q=****",
			"https://h.example/mcp?KEY=****&ApiKey=****&apikey=****&access_token=****&AUTH=****&Signature=****&secret=****&Password=****&x-amz-sig=****&q=keep"},
		{"http://user:pa55@127.0.0.1:8080/mcp?token=t", "http://****@127.0.0.1:8080/mcp?token=****", "http://****@127.0.0.1:8080/mcp?token=****"},
		{"http://u:***@127.0.0.1:1/mcp", "http://****@127.0.0.1:1/mcp", "http://****@127.0.0.1:1/mcp"},
		{"https://h.example/mcp?api%5Fkey=x", "https://h.example:443/mcp?api%5Fkey=****", "https://h.example/mcp?api%5Fkey=****"},
		{"https://h.example/mcp?token", "https://h.example:443/mcp?****", "https://h.example/mcp?token"},
		{"https://h.example/mcp?token=", "https://h.example:443/mcp?token=****", "https://h.example/mcp?token=****"},
		{"wss://h.example/ws?auth=x", "wss://h.example:443/****?auth=****", "wss://h.example/ws?auth=****"},
		{"https://h.example/#access_token=abc&state=s", "https://h.example:443/#access_token=****&state=****", "https://h.example/#access_token=****&state=s"},
		{"postgresql://u:pw@localhost:5432/db?sslmode=disable&password=x", "postgresql://****@localhost:5432/****?sslmode=****&password=****",
			"postgresql://****@localhost:5432/db?sslmode=disable&password=****"},
		{"https://h.example/%zz", Mask, Mask},
		// Secrets in the path (Zapier-style) and under parameter names no
		// list knows.
		{"https://actions.example.com/sk-SECRET123/mcp", "https://actions.example.com:443/****/mcp", "https://actions.example.com/sk-SECRET123/mcp"},
		{"https://h.example/api/v1/abcDEF123456/sse", "https://h.example:443/api/v1/****/sse", "https://h.example/api/v1/abcDEF123456/sse"},
		{"https://h.example/mcp?hmac=SECRET456&ts=1", "https://h.example:443/mcp?hmac=****&ts=****", "https://h.example/mcp?hmac=SECRET456&ts=1"},
		{"https://h.example/mcp?SECRET789", "https://h.example:443/mcp?****", "https://h.example/mcp?SECRET789"},
		{"http://[::1]/mcp", "http://[::1]:80/mcp", "http://[::1]/mcp"},
		{"http://[::1]:9000/MCP/", "http://[::1]:9000/MCP/", "http://[::1]:9000/MCP/"},
		{"stdio://local", "stdio://local", "stdio://local"},
	}
	for _, tt := range tests {
		if got := RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := ShowURL(tt.in, false); got != tt.want {
			t.Errorf("ShowURL(%q, false) = %q, want %q", tt.in, got, tt.want)
		}
		if got := ShowURL(tt.in, true); got != tt.full {
			t.Errorf("ShowURL(%q, true) = %q, want %q", tt.in, got, tt.full)
		}
	}
}

func TestRenderRoundTrip(t *testing.T) {
	// A config without secrets renders to a file that loads back equal.
	c, err := Load(LoadOptions{Path: "testdata/full.yaml", Environ: fullEnviron})
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range c.Servers {
		s.Env, s.Headers = nil, nil
		s.URL = strings.ReplaceAll(s.URL, "api_key=sk_fullSecret&", "")
		// Rendering shows the URL as written only with show_full_urls.
		s.fullURLs, s.referenced = true, nil
		c.Servers[name] = s
	}
	c.ShowFullURLs = true
	c.Serve.AuthToken = ""
	for _, format := range []string{"yaml", "json"} {
		out, err := c.Render(format)
		if err != nil {
			t.Fatalf("Render(%s): %v", format, err)
		}
		path := filepath.Join(t.TempDir(), "rendered."+format)
		if err := os.WriteFile(path, out, 0o600); err != nil {
			t.Fatal(err)
		}
		// The environment names search.embeddings.api_key_env's variable.
		back, err := Load(LoadOptions{Path: path, Environ: fullEnviron})
		if err != nil {
			t.Fatalf("loading rendered %s: %v\n%s", format, err, out)
		}
		if !reflect.DeepEqual(back, c) {
			t.Errorf("%s round trip:\n got %+v\nwant %+v\n%s", format, *back, *c, out)
		}
	}
}

func TestRenderDefaultsRoundTrip(t *testing.T) {
	d := Default()
	for _, format := range []string{"yaml", "json"} {
		out, err := d.Render(format)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Load(LoadOptions{Path: writeFile(t, "d."+format, string(out))})
		if err != nil {
			t.Fatalf("loading rendered defaults (%s): %v\n%s", format, err, out)
		}
		// Empty lists render as [] and come back empty, not nil.
		back.NeverDefer, back.Tools, back.Hooks, back.Serve.AllowedOrigins, back.Serve.AllowedHosts = nil, nil, nil, nil, nil
		if !reflect.DeepEqual(*back, d) {
			t.Errorf("%s round trip of defaults:\n got %+v\nwant %+v", format, *back, d)
		}
	}
}

func TestRenderFormats(t *testing.T) {
	d := Default()
	if _, err := d.Render("xml"); err == nil || !strings.Contains(err.Error(), `unknown format "xml": want yaml or json`) {
		t.Errorf("Render(xml) error = %v", err)
	}
	out, err := d.Render("json")
	if err != nil {
		t.Fatal(err)
	}
	// Keys keep the reference order, durations read as durations.
	text := string(out)
	if i, j := strings.Index(text, `"mcpServers"`), strings.Index(text, `"audit"`); i < 0 || j < i {
		t.Errorf("JSON keys out of order:\n%s", text)
	}
	if !strings.Contains(text, `"connect": "30s"`) {
		t.Errorf("duration not rendered as a string:\n%s", text)
	}
	var nilCfg *Config
	if _, err := nilCfg.Render("yaml"); err == nil {
		t.Errorf("nil.Render succeeded")
	}
}

func BenchmarkRender(b *testing.B) {
	c, _ := secretConfig()
	for _, format := range []string{"yaml", "json"} {
		b.Run(format, func(b *testing.B) {
			for b.Loop() {
				if _, err := c.Render(format); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestRedactURLs(t *testing.T) {
	tests := []struct{ in, want string }{
		{"no url here", "no url here"},
		{`Post "http://u:***@127.0.0.1:1/mcp?api_key=S1&x=1": dial tcp 127.0.0.1:1: connect: connection refused`,
			`Post "http://****@127.0.0.1:1/mcp?api_key=****&x=****": dial tcp 127.0.0.1:1: connect: connection refused`},
		{"two: https://a.example/?token=S1 and https://b.example/?sig=S2.",
			"two: https://a.example:443/?token=**** and https://b.example:443/?sig=****."},
		// Punctuation after a URL belongs to the line: "mcp;" was masked
		// as a secret segment and the ";" lost from the listen line.
		{"serving streamable HTTP at http://127.0.0.1:8080/mcp; connecting 1 server",
			"serving streamable HTTP at http://127.0.0.1:8080/mcp; connecting 1 server"},
		{"see (https://h.example/docs/sk-S1), then", "see (https://h.example:443/****/****), then"},
		{"url=https://a.example/p?key=S1;next", "url=https://a.example:443/****?key=****"},
		// A log line quotes an error that quotes the URL: the URL ends at
		// the escaped quote, and the backslash stays out of it (it was
		// shown as "traces%5C").
		{`err="traces export: Post \"http://localhost:4318/v1/traces\": dial tcp 127.0.0.1:4318: connect: connection refused"`,
			`err="traces export: Post \"http://localhost:4318/v1/traces\": dial tcp 127.0.0.1:4318: connect: connection refused"`},
		{`err="Post \"http://u:S0@h.example/mcp?token=S1\": refused"`, `err="Post \"http://****@h.example:80/mcp?token=****\": refused"`},
		{`Post "https://actions.example.com/sk-SECRET/mcp?hmac=H1": 404`, `Post "https://actions.example.com:443/****/mcp?hmac=****": 404`},
	}
	for _, tt := range tests {
		if got := RedactURLs(tt.in); got != tt.want {
			t.Errorf("RedactURLs(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

func TestServerScrub(t *testing.T) {
	s := Server{
		URL:     "https://mcp.example.com/mcp?api_key=sk-live-12345&x=1",
		Headers: map[string]string{"Authorization": "Bearer tok-abcdef"},
		Env:     map[string]string{"TOKEN": "ghp_secretvalue", "DEBUG": "1"},
		Auth:    Auth{ClientID: "cid", ClientSecret: "client-s3cret"},
	}
	text := `client client-s3cret; Post "https://mcp.example.com/mcp?api_key=sk-live-12345&x=1": refused; header Bearer tok-abcdef; env ghp_secretvalue; level 1;` +
		` rewritten "https://mcp.example.com/mcp?x=1&api_key=sk-live-12345"; escaped {"u":"mcp?a=1\u0026api_key=sk-live-12345"};` +
		` other "http://bob:***@other.example/?token=tok-other-999"`
	got := s.Scrub(text)
	for _, secret := range []string{"sk-live-12345", "tok-abcdef", "ghp_secretvalue", "tok-other-999", "client-s3cret"} {
		if strings.Contains(got, secret) {
			t.Errorf("Scrub left %q in %q", secret, got)
		}
	}
	if !strings.Contains(got, "mcp.example.com") || !strings.Contains(got, "level 1") {
		t.Errorf("Scrub removed more than the secrets: %q", got)
	}
}

// TestRenderOmitsZeroAuth checks that config check does not show an empty
// auth block on every server: a stdio server may not have one at all, so
// "auth: {}" under it reads as a setting that would be an error.
func TestRenderOmitsZeroAuth(t *testing.T) {
	c := Default()
	c.Servers = map[string]Server{
		"local":  {Command: "echo"},
		"remote": {URL: "https://mcp.example.com/mcp", Auth: Auth{ClientID: "cid"}},
	}
	for _, format := range []string{"yaml", "json"} {
		out, err := c.Render(format)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(regexp.MustCompile(`(?m)^\s*"?auth"?:`).FindAllString(string(out), -1)); n != 1 {
			t.Errorf("%s: %d auth blocks, want only remote's:\n%s", format, n, out)
		}
		if !strings.Contains(string(out), "cid") {
			t.Errorf("%s: remote's auth is missing:\n%s", format, out)
		}
	}
}
