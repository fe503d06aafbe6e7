package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/bridge/upstream/oauth"
	"github.com/toolbridge/toolbridge/bridge/upstream/oauth/oauthtest"
)

// mcpSession is an MCP client on a gateway serving HTTP.
func mcpSession(t *testing.T, g *httpGateway) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(g.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "toolbridge-e2e", Version: "0"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatalf("initialize: %v\nstderr:\n%s", err, g.stderr)
	}
	return c
}

// connectedSession waits until /readyz says the remote server is
// connected and a new session lists tool_call, and returns that session.
// Both are needed: /readyz reports the connection as soon as it is up,
// and the catalog with the server's tools (and so the meta-tools) is
// registered a few milliseconds later, after the trust review and the
// index.
func connectedSession(t *testing.T, g *httpGateway, what string) *client.Client {
	t.Helper()
	waitUntil(t, what, func() bool {
		_, r := remoteReadyz(t, g)
		return r["connected"] == true
	})
	c := mcpSession(t, g)
	waitUntil(t, what+" (tool_call listed)", func() bool {
		res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
		return err == nil && slices.ContainsFunc(res.Tools, func(tool mcp.Tool) bool { return tool.Name == "tool_call" })
	})
	return c
}

// callEcho calls remote::echo through tool_call and returns the result's
// text and whether it is an error.
func callEcho(t *testing.T, c *client.Client) (string, bool) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = "tool_call"
	req.Params.Arguments = map[string]any{"tool_name": "remote::echo", "tool_args": map[string]any{"text": "hi"}}
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatalf("tool_call: %v", err)
	}
	return textOf(res), res.IsError
}

// remoteReadyz returns /readyz's body and the remote server's entry.
func remoteReadyz(t *testing.T, g *httpGateway) (string, map[string]any) {
	t.Helper()
	resp, err := http.Get(g.base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var doc struct {
		Servers []map[string]any `json:"servers"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("/readyz: %v: %s", err, b)
	}
	for _, s := range doc.Servers {
		if s["name"] == "remote" {
			return string(b), s
		}
	}
	t.Fatalf("/readyz has no remote: %s", b)
	return "", nil
}

// authLogin runs `toolbridge auth login remote --no-browser` and plays
// the browser, returning everything it printed.
func authLogin(t *testing.T, cfg string) string {
	t.Helper()
	return authLoginEnv(t, nil, cfg)
}

// authLoginEnv is authLogin with env added to this process's environment
// (a token key, a state directory), which wins.
func authLoginEnv(t *testing.T, env []string, cfg string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "auth", "login", "remote", "-c", cfg, "--no-browser")
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var printed strings.Builder
	if err := oauth.FollowPrinted(ctx, stderr, &printed, nil); err != nil {
		t.Errorf("following the login URL: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("auth login: %v\n%s%s", err, out.String(), printed.String())
	}
	return out.String() + printed.String()
}

// waitUntil polls cond with a generous deadline.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestServeWithLogin runs the gateway in front of a server that needs an
// OAuth login, against a real authorization server in this process:
// startup says "needs login", a login in another process is picked up
// without a restart, a token the server revokes mid-session turns calls
// into isError results naming `toolbridge auth login`, and two gateways
// sharing one token store refresh without spending a refresh token twice.
// No token, code or secret reaches any output.
func TestServeWithLogin(t *testing.T) {
	as := oauthtest.NewEcho()
	t.Cleanup(as.Close)
	state := t.TempDir()
	cfg := writeConfig(t, "toolbridge.yaml", fmt.Sprintf(
		"mcpServers:\n  remote:\n    url: %s/mcp\nstate_dir: %s\ntoken_store: file\nmode: on\n", as.URL(), state))
	var outputs []string

	g := startHTTP(t, "--config", cfg)
	waitUntil(t, "the startup line", func() bool {
		return strings.Contains(g.stderr.String(), "needs login: run `toolbridge auth login remote`")
	})
	body, remote := remoteReadyz(t, g)
	if remote["needs_login"] != true || remote["connected"] != false {
		t.Errorf("/readyz before login: %s", body)
	}
	outputs = append(outputs, body)

	outputs = append(outputs, authLogin(t, cfg))
	c := connectedSession(t, g, "the gateway to pick up the login")
	if text, isErr := callEcho(t, c); isErr || text != "echo: hi" {
		t.Fatalf("call after login = %q (isError %v)\nstderr:\n%s", text, isErr, g.stderr)
	}

	// The server revokes every token mid-session.
	as.RevokeAll()
	text, isErr := callEcho(t, c)
	if !isErr || !strings.Contains(text, "toolbridge auth login remote") {
		t.Errorf("call after revocation = %q (isError %v), want an error naming auth login", text, isErr)
	}
	body, remote = remoteReadyz(t, g)
	if remote["needs_login"] != true {
		t.Errorf("/readyz after revocation: %s", body)
	}
	outputs = append(outputs, body, text)
	if n := as.FailedRefreshes.Load(); n != 1 {
		t.Errorf("%d failed refreshes after the revocation, want 1 (never a loop)", n)
	}
	outputs = append(outputs, authLogin(t, cfg))
	if text, isErr := callEcho(t, c); isErr || text != "echo: hi" {
		t.Fatalf("call after logging in again = %q (isError %v)", text, isErr)
	}

	// A second gateway on the same state directory; the server ends the
	// access token early and both gateways get its 401 at once.
	g2 := startHTTP(t, "--config", cfg)
	c2 := mcpSession(t, g2)
	as.ExpireAccessTokens()
	refreshesBefore := as.Refreshes.Load()
	var wg sync.WaitGroup
	for _, cl := range []*client.Client{c, c2, c, c2} {
		wg.Go(func() {
			req := mcp.CallToolRequest{}
			req.Params.Name = "tool_call"
			req.Params.Arguments = map[string]any{"tool_name": "remote::echo", "tool_args": map[string]any{"text": "hi"}}
			res, err := cl.CallTool(t.Context(), req)
			if err != nil || res.IsError {
				t.Errorf("call after expiry: %v %v", err, res)
			}
		})
	}
	wg.Wait()
	if n := as.FailedRefreshes.Load(); n != 1 {
		t.Errorf("%d failed refreshes, want still 1: two gateways spent one refresh token twice", n)
	}
	if n := as.Refreshes.Load() - refreshesBefore; n != 1 {
		t.Errorf("%d refreshes for one expiry across two gateways, want 1", n)
	}

	outputs = append(outputs, g.stderr.String(), g2.stderr.String())
	all := strings.Join(outputs, "\n")
	for _, secret := range as.Secrets() {
		if strings.Contains(all, secret) {
			t.Errorf("a token, code or secret (%d chars) appears in the gateway's outputs", len(secret))
		}
	}
}
