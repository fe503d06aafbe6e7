package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbridge/toolbridge/bridge/upstream/oauth"
	"github.com/toolbridge/toolbridge/bridge/upstream/oauth/oauthtest"
)

// protectedServer starts the test authorization server in front of an MCP
// server with one tool, and writes a config naming it "remote", with its
// state in a temp dir and the file token store.
func protectedServer(t *testing.T) (*oauthtest.Server, []string) {
	t.Helper()
	as := oauthtest.NewEcho()
	t.Cleanup(as.Close)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "toolbridge.yaml")
	body := fmt.Sprintf("mcpServers:\n  remote:\n    url: %s/mcp\n  local:\n    command: echo\ntoken_store: file\n", as.URL())
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return as, []string{"TOOLBRIDGE_CONFIG=" + cfg, "TOOLBRIDGE_STATE_DIR=" + filepath.Join(dir, "state")}
}

// loginHeadless runs `auth login --no-browser` in process and plays the
// browser: it reads the printed URL and follows it.
func loginHeadless(t *testing.T, environ []string, server string) (int, string, string) {
	t.Helper()
	pr, pw := io.Pipe()
	var out strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- run(t.Context(), []string{"auth", "login", server, "--no-browser"}, stdio{in: strings.NewReader(""), out: &out, err: pw}, environ)
		pw.Close()
	}()
	var errOut strings.Builder
	if err := oauth.FollowPrinted(t.Context(), pr, &errOut, nil); err != nil {
		t.Errorf("following the login URL: %v", err)
	}
	return <-done, out.String(), errOut.String()
}

func TestAuthLoginStatusLogout(t *testing.T) {
	as, environ := protectedServer(t)

	code, out, errOut := runCmd(t, environ, "auth", "status")
	if code != 0 || !strings.Contains(out, "remote") || !strings.Contains(out, "no login stored") || strings.Contains(out, "local") {
		t.Fatalf("status before login: %d\n%s\n%s", code, out, errOut)
	}

	code, out, errOut = runCmd(t, environ, "call", "remote::echo", `{"text":"hi"}`)
	if code != 1 || !strings.Contains(out+errOut, "toolbridge auth login remote") {
		t.Errorf("call before login: exit %d, want 1 and a hint to log in\n%s\n%s", code, out, errOut)
	}

	code, out, errOut = loginHeadless(t, environ, "remote")
	if code != 0 || !strings.Contains(out, "Logged in to remote") || !strings.Contains(errOut, "open this URL") {
		t.Fatalf("auth login: %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if as.Logins.Load() != 1 {
		t.Errorf("%d logins at the server, want 1", as.Logins.Load())
	}

	code, out, _ = runCmd(t, environ, "auth", "status")
	if code != 0 || !strings.Contains(out, "authorized") {
		t.Errorf("status after login: %d\n%s", code, out)
	}
	code, out, errOut = runCmd(t, environ, "call", "remote::echo", `{"text":"hi"}`)
	if code != 0 || !strings.Contains(out, "echo: hi") {
		t.Errorf("call after login: exit %d\n%s\n%s", code, out, errOut)
	}

	code, out, errOut = runCmd(t, environ, "auth", "logout", "remote")
	if code != 0 || !strings.Contains(out, "Logged out of remote") {
		t.Errorf("logout: %d\n%s\n%s", code, out, errOut)
	}
	if as.Revocations.Load() != 2 {
		t.Errorf("%d revocations, want 2", as.Revocations.Load())
	}
	code, out, _ = runCmd(t, environ, "auth", "status")
	if code != 0 || !strings.Contains(out, "no login stored") {
		t.Errorf("status after logout: %d\n%s", code, out)
	}

	// Nothing secret reached any output.
	for _, s := range as.Secrets() {
		if strings.Contains(out+errOut, s) {
			t.Errorf("output leaks a secret")
		}
	}
	files, _ := filepath.Glob(filepath.Join(strings.TrimPrefix(environ[1], "TOOLBRIDGE_STATE_DIR="), "oauth", "*"))
	for _, f := range files {
		if !strings.HasPrefix(filepath.Base(f), ".") {
			t.Errorf("token file %s left after logout", f)
		}
	}
}

func TestAuthCommandErrors(t *testing.T) {
	_, environ := protectedServer(t)
	tests := []struct {
		args     []string
		code     int
		wantText string
	}{
		{[]string{"auth", "login"}, 2, "takes one SERVER"},
		{[]string{"auth", "login", "nope"}, 1, `no server "nope"`},
		{[]string{"auth", "login", "local"}, 1, "not a remote server"},
		{[]string{"auth", "logout", "a", "b"}, 2, "takes one SERVER"},
		{[]string{"auth", "status", "x"}, 2, "takes no arguments"},
		{[]string{"auth"}, 2, "needs a subcommand"},
		{[]string{"auth", "logon"}, 2, `did you mean "login"`},
	}
	for _, tt := range tests {
		code, out, errOut := runCmd(t, environ, tt.args...)
		if code != tt.code || !strings.Contains(out+errOut, tt.wantText) {
			t.Errorf("%q: exit %d, output %q %q; want exit %d and %q", tt.args, code, out, errOut, tt.code, tt.wantText)
		}
	}
}
