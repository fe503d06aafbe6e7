package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toolbridge/toolbridge/bridge/upstream/oauth/oauthtest"
)

// TestRefusedRefreshEchoNeverLeaks runs the gateway against an
// authorization server whose token endpoint answers invalid_grant with an
// error_description that echoes the request, refresh token included
// (#24 item 1). The gateway turns the server into "needs login", and the
// refresh token it sent appears nowhere: not on stderr, not in /readyz,
// not in the error the client gets, not under "needs_login" in
// state/oauth/remote.json and not in `toolbridge auth status`, while the
// server's code and the rest of its words still do.
func TestRefusedRefreshEchoNeverLeaks(t *testing.T) {
	as := oauthtest.NewEcho()
	t.Cleanup(as.Close)
	state := t.TempDir()
	cfg := writeConfig(t, "toolbridge.yaml", fmt.Sprintf(
		"mcpServers:\n  remote:\n    url: %s/mcp\nstate_dir: %s\ntoken_store: file\nmode: on\n", as.URL(), state))
	outputs := []string{authLogin(t, cfg)}

	g := startHTTP(t, "--config", cfg)
	c := connectedSession(t, g, "the gateway to connect with the stored login")
	if text, isErr := callEcho(t, c); isErr || text != "echo: hi" {
		t.Fatalf("call after login = %q (isError %v)\nstderr:\n%s", text, isErr, g.stderr)
	}

	var mu sync.Mutex
	var sent []string
	refuse := oauthtest.EchoingRefusal("invalid_grant")
	as.SetTokenHook(func(w http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		for _, k := range []string{"refresh_token", "client_secret", "client_assertion"} {
			sent = append(sent, r.PostForm[k]...)
		}
		if _, secret, ok := r.BasicAuth(); ok {
			sent = append(sent, secret)
		}
		mu.Unlock()
		return refuse(w, r)
	})
	as.ExpireAccessTokens() // the next call gets a 401 and refreshes

	text, isErr := callEcho(t, c)
	if !isErr || !strings.Contains(text, "toolbridge auth login remote") {
		t.Errorf("call after the refused refresh = %q (isError %v), want an error naming auth login", text, isErr)
	}
	body, remote := remoteReadyz(t, g)
	if remote["needs_login"] != true {
		t.Errorf("/readyz after the refused refresh: %s", body)
	}
	raw, err := os.ReadFile(filepath.Join(state, "oauth", "remote.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		NeedsLogin string `json:"needs_login"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatalf("state/oauth/remote.json: %v", err)
	}
	code, status, statusErr := runCLI(t, nil, "auth", "status", "-c", cfg)
	if code != 0 {
		t.Errorf("auth status exited %d: %s%s", code, status, statusErr)
	}
	for what, out := range map[string]string{"needs_login": rec.NeedsLogin, "auth status": status} {
		if !strings.Contains(out, "invalid_grant") || !strings.Contains(out, "rejected request") {
			t.Errorf("%s lost the server's answer: %q", what, out)
		}
	}
	outputs = append(outputs, text, body, rec.NeedsLogin, status, statusErr, g.stderr.String())

	mu.Lock()
	defer mu.Unlock()
	if len(sent) == 0 {
		t.Fatal("the gateway sent no refresh token: the test proves nothing")
	}
	all := strings.Join(outputs, "\n")
	for _, s := range sent {
		if strings.Contains(all, s[:min(len(s), 16)]) {
			t.Errorf("the refresh token (or a secret) the gateway sent (%d chars) appears in its outputs:\n%s", len(s), all)
		}
	}
}
