package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toolbridge/toolbridge/bridge/access/accesstest"
	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
)

// TestTypeScriptSDKClientOAuth: the official TypeScript SDK client against
// a gateway with serve.oauth, its tokens from a local issuer (accesstest:
// RFC 8414 metadata, dynamic registration, authorization code + PKCE, JWT
// access tokens and a JWKS). The SDK discovers everything from the 401,
// logs in, gets a token, and runs a bridge session in which the caller (in
// group dev) finds, describes and calls the math tool it may use and does
// not see the text server's tools.
func TestTypeScriptSDKClientOAuth(t *testing.T) {
	env := testenv.NPM(t)
	t.Setenv("TOOLBRIDGE_STATE_DIR", t.TempDir())
	iss := accesstest.New(t)
	iss.LoginAs("dev-user@example.com", "dev")
	port := testenv.FreePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	cfg := demoConfig(t, "mode: on\n"+
		"serve:\n  oauth:\n    issuer: "+iss.URL+"\n    audience: "+url+"\n    required_scopes: [mcp:tools]\n"+
		"access:\n  - groups: [dev]\n    allow: [\"math::*\"]\n", "")
	g := startHTTPCommandOn(t, port, "serve", "-c", cfg)
	s := testenv.TSSession{
		Session: testenv.SessionOAuth, Transport: "http", URL: g.url,
		Want: "math::evaluate_expression", WantQuery: "evaluate math expression", WantArgs: map[string]any{"expression": "2 + 3 * 4"},
		Hidden: "text::base64_decode", HiddenQuery: "decode base64 text",
	}
	report, driverErr, err := env.RunTSSession(t.Context(), s)
	driverErr += "\n--- toolbridge stderr ---\n" + g.stderr.String()
	if err != nil {
		t.Fatalf("%v\n--- stderr ---\n%s", err, driverErr)
	}
	for _, p := range report.Problems() {
		t.Error(p)
	}
	if t.Failed() {
		t.Logf("--- stderr ---\n%s", driverErr)
	}
	if strings.Contains(g.stderr.String(), "eyJ") {
		t.Error("toolbridge's stderr holds something that looks like a JWT")
	}
	t.Logf("%d steps passed", len(report.Steps))
}
