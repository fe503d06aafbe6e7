package config

import (
	"strings"
	"testing"
)

// TestVariableValuesNeverInErrors loads configs whose bad values come from
// ${VAR} references: every error names the variable and never repeats its
// value, which may be a secret put in the wrong key (#24 item 6).
func TestVariableValuesNeverInErrors(t *testing.T) {
	long := "LONGVAL-" + strings.Repeat("x9", 40)
	tests := []struct {
		name, file, value, wantVar string
	}{
		{"duration", "timeouts:\n  connect: ${X}\n", "ARGVAL222", "${X}"},
		{"server duration", "mcpServers: {a: {command: echo, connect_timeout: \"${X}\"}}\n", "ARGVAL222", "${X}"},
		{"duration with unit", "timeouts: {call: \"${X}s\"}\n", "ARGVAL222", "${X}"},
		{"number-like duration", "timeouts: {call: \"${X}\"}\n", "4242424242", "${X}"},
		{"mode", "mode: ${M}\n", "MODEVAL333", "${M}"},
		{"mode short", "mode: ${M}\n", "q", "${M}"},
		{"mode mixed case", "mode: ${M}\n", "  MoDeVaL444 ", "${M}"},
		{"integer", "context_window: ${N}\n", "INTVAL555", "${N}"},
		{"float", "threshold_pct: ${N}\n", "FLOATVAL666", "${N}"},
		{"boolean", "serve: {allow_remote: \"${B}\"}\n", "BOOLVAL777", "${B}"},
		{"listen", "serve: {listen: \"${L}\"}\n", "LISTENVAL888", "${L}"},
		{"tokenizer", "tokenizer: ${T}\n", "TOKVAL999", "${T}"},
		{"long value", "mode: ${M}\n", long, "${M}"},
		{"quoted value", "mode: ${M}\n", `QUOTE"VAL\1010`, "${M}"},
		{"url", "mcpServers: {r: {url: \"${U}\"}}\n", "not a url URLVAL1111", "${U}"},
		// The error is about type, and quotes the transport beside it.
		{"sibling key", "mcpServers: {r: {url: \"http://127.0.0.1:9/mcp\", type: http, transport: \"${T}\"}}\n", "sse", "${T}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "c.yaml", tt.file)
			name := strings.Trim(tt.wantVar, "${}")
			_, err := Load(LoadOptions{Path: path, Environ: []string{name + "=" + tt.value}})
			if err == nil {
				t.Fatalf("Load accepted %q with %s=%q", tt.file, name, tt.value)
			}
			msg := err.Error()
			for _, shown := range []string{strings.TrimSpace(tt.value), strings.ToLower(strings.TrimSpace(tt.value)), tt.value[:min(len(tt.value), 30)]} {
				if len(shown) >= 4 && strings.Contains(msg, shown) || strings.Contains(msg, `"`+shown+`"`) {
					t.Errorf("the error repeats the value of %s (%q):\n%s", name, shown, msg)
				}
			}
			if !strings.Contains(msg, tt.wantVar) {
				t.Errorf("the error does not name %s:\n%s", tt.wantVar, msg)
			}
		})
	}
}

// TestScrubMasksOnlySecrets checks which values a server's error
// scrubbing masks: values of env and header names that look secret and
// values taken from ${VAR} references, but not every env value of six or
// more characters, so that a server named like one of its env values is
// still named in its errors (#24 item 16).
func TestScrubMasksOnlySecrets(t *testing.T) {
	path := writeFile(t, "c.yaml", `mcpServers:
  memory:
    command: npx
    env:
      MEMORY_FILE_PATH: memory
      STORE_NAME: notebook
      GITHUB_TOKEN: ghp-literal-000
      FROM_ENV: "${REFD}"
      MIXED: "prefix-${OTHER}"
  remote:
    url: https://mcp.example.com/mcp
    headers:
      X-Team: platform
      X-Api-Key: literal-header-key
`)
	cfg, err := Load(LoadOptions{Path: path, Environ: []string{"REFD=referenced-value-111", "OTHER=other-value-222"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		server, text  string
		secrets, keep []string
	}{
		{"memory", "memory::store_note failed: notebook full; echoed ghp-literal-000, referenced-value-111, other-value-222",
			[]string{"ghp-literal-000", "referenced-value-111", "other-value-222"}, []string{"memory::store_note", "notebook full"}},
		{"remote", "remote::x failed: platform quota; echoed literal-header-key",
			[]string{"literal-header-key"}, []string{"remote::x", "platform quota"}},
	} {
		got := cfg.Servers[tt.server].Scrub(tt.text)
		for _, secret := range tt.secrets {
			if strings.Contains(got, secret) {
				t.Errorf("%s: Scrub left %q in %q", tt.server, secret, got)
			}
		}
		for _, keep := range tt.keep {
			if !strings.Contains(got, keep) {
				t.Errorf("%s: Scrub masked %q, which is no secret: %q", tt.server, keep, got)
			}
		}
	}
}

// TestScrubMasksURLPathSecrets checks that a secret in an upstream URL's
// path or under a parameter name no list knows is masked in errors, in
// URLs and on its own (#24 item 5), unless show_full_urls is set.
func TestScrubMasksURLPathSecrets(t *testing.T) {
	s := Server{URL: "https://actions.example.com/api/sk-PATHSECRET1/mcp?hmac=HMACSECRET2"}
	text := `Post "https://actions.example.com/api/sk-PATHSECRET1/mcp?hmac=HMACSECRET2": 404 Not Found for /api/sk-PATHSECRET1/mcp (hmac HMACSECRET2)`
	got := s.Scrub(text)
	for _, secret := range []string{"sk-PATHSECRET1", "HMACSECRET2"} {
		if strings.Contains(got, secret) {
			t.Errorf("Scrub left %q in %q", secret, got)
		}
	}
	if !strings.Contains(got, "https://actions.example.com:443/api/****/mcp?hmac=****") {
		t.Errorf("Scrub does not show the URL as scheme://host:port and a masked path: %q", got)
	}

	path := writeFile(t, "c.yaml", "show_full_urls: true\nmcpServers: {r: {url: \"https://actions.example.com/api/sk-PATHSECRET1/mcp?hmac=HMACSECRET2&token=TOKSECRET3\"}}\n")
	cfg, err := Load(LoadOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	got = cfg.Servers["r"].Scrub(`Post "https://actions.example.com/api/sk-PATHSECRET1/mcp?hmac=HMACSECRET2&token=TOKSECRET3": 404`)
	if want := `Post "https://actions.example.com/api/sk-PATHSECRET1/mcp?hmac=HMACSECRET2&token=****": 404`; got != want {
		t.Errorf("with show_full_urls, Scrub = %q, want %q (the path shown, credentials still masked)", got, want)
	}
}

// TestScrubResultKeepsOtherURLs checks that a tool's error text keeps the
// URLs it is about (with their credentials masked), while the server's own
// URL secrets are masked wherever they appear.
func TestScrubResultKeepsOtherURLs(t *testing.T) {
	s := Server{URL: "https://actions.example.com/sk-PATHSECRET1/mcp?hmac=HMACSECRET2"}
	got := s.ScrubResult(`fetch https://docs.example.org/guide/page?id=7&token=T0KEN99 failed; called via https://actions.example.com/sk-PATHSECRET1/mcp?hmac=HMACSECRET2`)
	want := `fetch https://docs.example.org/guide/page?id=7&token=**** failed; called via https://actions.example.com/****/mcp?hmac=****`
	if got != want {
		t.Errorf("ScrubResult:\n got %q\nwant %q", got, want)
	}
}
