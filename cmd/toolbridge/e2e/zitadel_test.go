package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
)

// TestZitadelIssuedTokens: the gateway validates access tokens that a real
// OpenID provider issued: zitadel's example OP (github.com/zitadel/oidc,
// an OpenID-certified library), built once into the test cache and run on
// 127.0.0.1. Its service clients get JWT access tokens with the
// client_credentials grant; the gateway finds the JWKS through the OP's
// discovery document, checks iss, aud, exp and the scope, and reads the
// groups claim: svc-dev sees the math server and not text, svc-ops the
// other way round. svc-opaque gets an opaque token, which the gateway
// checks at the OP's RFC 7662 introspection endpoint (serve.oauth.
// introspection_url, the client secret from the environment). A token
// without the required scope gets the 403 that asks for it, a made-up
// opaque token a 401, and no token or secret reaches the gateway's output
// (debug logging on, so refusals are logged with their reasons).
func TestZitadelIssuedTokens(t *testing.T) {
	const introSecret = "intro-secret-e2e-51c7"
	t.Setenv("TOOLBRIDGE_STATE_DIR", t.TempDir())
	t.Setenv("ZITADEL_INTROSPECTION_SECRET", introSecret)
	port := testenv.FreePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	op := testenv.StartZitadelOP(t, testenv.ZitadelOptions{
		Audience:       url,
		IntrospectorID: "toolbridge-gw", IntrospectorSecret: introSecret,
		Clients: []testenv.ZitadelClient{
			{ID: "svc-opaque", Secret: "opaque-secret-2d4e", Groups: []string{"ops"}},
			// Tokens minted for an upstream, not for the gateway.
			{ID: "svc-upstream", Secret: "upstream-secret-7a3c", JWT: true, Groups: []string{"dev"}, Audience: "https://upstream.example.com/mcp"},
			{ID: "svc-upstream-opaque", Secret: "upstream-secret-4e1b", Groups: []string{"dev"}, Audience: "https://upstream.example.com/mcp"},
			{ID: "svc-dev", Secret: "dev-secret-6f1e", JWT: true, Groups: []string{"dev"}},
			{ID: "svc-ops", Secret: "ops-secret-93ab", JWT: true, Groups: []string{"ops"}},
		},
	})
	cfg := demoConfig(t, "mode: on\n"+
		"serve:\n  oauth:\n    issuer: "+op.Issuer+"\n    audience: "+url+"\n    required_scopes: [mcp:tools]\n"+
		"    introspection_url: "+op.Issuer+"/oauth/introspect\n    introspection_client_id: toolbridge-gw\n"+
		"    introspection_client_secret: ${ZITADEL_INTROSPECTION_SECRET}\n"+
		"access:\n  - groups: [dev]\n    allow: [\"math::*\"]\n  - groups: [ops]\n    allow: [\"text::*\"]\n", "")
	g := startHTTPCommandOn(t, port, "serve", "-v", "-c", cfg)

	devToken := op.Token(t, "svc-dev", "dev-secret-6f1e", "mcp:tools")
	opsToken := op.Token(t, "svc-ops", "ops-secret-93ab", "mcp:tools")
	opaqueToken := op.Token(t, "svc-opaque", "opaque-secret-2d4e", "mcp:tools")
	if strings.Count(devToken, ".") != 2 {
		t.Fatalf("zitadel's OP gave svc-dev a token that is not a JWT (%d dots)", strings.Count(devToken, "."))
	}
	for _, tc := range []struct {
		who, token, own, other, ownServer, otherServer string
	}{
		{"svc-dev", devToken, "math::evaluate_expression", "text::base64_decode", "math", "text"},
		{"svc-ops", opsToken, "text::base64_decode", "math::evaluate_expression", "text", "math"},
		{"svc-opaque", opaqueToken, "text::base64_decode", "math::evaluate_expression", "text", "math"},
	} {
		t.Run(tc.who, func(t *testing.T) {
			c := bearerClient(t, g.url, tc.token)
			if isErr, text := toolText(t, c, "tool_describe", map[string]any{"tool_name": tc.own}); isErr {
				t.Errorf("%s cannot describe its own %s: %s", tc.who, tc.own, text)
			}
			if isErr, text := toolText(t, c, "tool_describe", map[string]any{"tool_name": tc.other}); !isErr || !strings.Contains(text, "Unknown tool") {
				t.Errorf("%s describes %s of the other group: isError=%v %s", tc.who, tc.other, isErr, text)
			}
			_, text := toolText(t, c, "tool_search", map[string]any{"query": "", "limit": 50})
			if strings.Contains(text, "- "+tc.otherServer+" (") || !strings.Contains(text, "- "+tc.ownServer+" (") {
				t.Errorf("%s's catalog: %s, want server %s and not %s", tc.who, text, tc.ownServer, tc.otherServer)
			}
		})
	}
	if isErr, text := toolText(t, bearerClient(t, g.url, devToken), "tool_call", map[string]any{
		"tool_name": "math::evaluate_expression", "tool_args": map[string]any{"expression": "6 * 7"}}); isErr || !strings.Contains(text, "42") {
		t.Errorf("svc-dev's call: isError=%v %s", isErr, text)
	}

	// The OP's tokens without mcp:tools: 403 insufficient_scope, naming
	// it, for a JWT and an opaque token alike.
	narrow := op.Token(t, "svc-dev", "dev-secret-6f1e", "openid")
	narrowOpaque := op.Token(t, "svc-opaque", "opaque-secret-2d4e", "openid")
	for _, tok := range []string{narrow, narrowOpaque} {
		status, www := ping(t, g.url, tok)
		if status != http.StatusForbidden || !strings.Contains(www, "insufficient_scope") || !strings.Contains(www, "mcp:tools") {
			t.Errorf("a token without mcp:tools: %d %q, want 403 insufficient_scope naming mcp:tools", status, www)
		}
	}
	// A made-up opaque token (the OP's introspection says inactive), a
	// real one with a character changed, and the OP's real tokens (JWT and
	// opaque) minted for an upstream's audience: 401, no passthrough.
	forged := opaqueToken[:len(opaqueToken)-3] + "AAA"
	upstreamJWT := op.Token(t, "svc-upstream", "upstream-secret-7a3c", "mcp:tools")
	upstreamOpaque := op.Token(t, "svc-upstream-opaque", "upstream-secret-4e1b", "mcp:tools")
	for name, tok := range map[string]string{"made up": "made-up-opaque-token-0e9f", "tampered": forged, "JWT for an upstream": upstreamJWT, "opaque for an upstream": upstreamOpaque} {
		if status, www := ping(t, g.url, tok); status != http.StatusUnauthorized || !strings.Contains(www, "invalid_token") {
			t.Errorf("%s token: %d %q, want 401 invalid_token", name, status, www)
		}
	}

	// The log reaches the buffer through a pipe: wait (bounded) for the
	// two wrong-audience refusals before reading it.
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := g.stderr.WaitFor(wctx, func(s string) bool { return strings.Count(s, "aud does not name this gateway") >= 2 })
	if !strings.Contains(out, "refused an access token") {
		t.Errorf("toolbridge -v logged no refusal: the grep below would prove nothing\n%s", out)
	}
	if n := strings.Count(out, "aud does not name this gateway"); n < 2 {
		t.Errorf("%d refusals for the wrong audience logged, want 2 (the upstream's JWT and opaque token)\n%s", n, out)
	}
	for _, tok := range []string{devToken, opsToken, opaqueToken, narrow, narrowOpaque, forged, upstreamJWT, upstreamOpaque, "dev-secret-6f1e", "ops-secret-93ab", "opaque-secret-2d4e", introSecret} {
		if strings.Contains(out, tok) || strings.Contains(out, tok[len(tok)-12:]) {
			t.Errorf("toolbridge's stderr holds a token or secret (…%s)", tok[len(tok)-4:])
		}
	}
}

// ping posts a JSON-RPC ping with token and returns the status and the
// WWW-Authenticate header.
func ping(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// bearerClient is an MCP session over streamable HTTP that sends token.
func bearerClient(t *testing.T, url, token string) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// toolText calls a tool and returns isError and the text content.
func toolText(t *testing.T, c *client.Client, name string, args map[string]any) (bool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var texts []string
	for _, ct := range res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return res.IsError, strings.Join(texts, "\n")
}
