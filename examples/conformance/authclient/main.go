// Command authclient runs the official conformance suite's auth/* client
// scenarios with toolbridge as the client, as a user would: it writes a
// config naming the scenario's server, runs `toolbridge auth login` and
// `toolbridge call`, and plays the browser itself (the suite's
// authorization server approves at once, so following the authorization
// URL and delivering its redirect to toolbridge's 127.0.0.1 listener is
// the whole login).
//
// Usage (the suite appends the server URL and sets MCP_CONFORMANCE_SCENARIO
// and, for client credentials, MCP_CONFORMANCE_CONTEXT):
//
//	authclient SERVER_URL
//
// The toolbridge binary is $CONFORMANCE_TOOLBRIDGE_BIN, else toolbridge on PATH. The
// state directory is $TOOLBRIDGE_STATE_DIR, else a temporary one.
//
// Like a user, it logs in again when toolbridge says a login is needed (a
// 403 asking for more scope), at most three logins in all, so a server
// that never accepts cannot keep it logging in.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/toolbridge/toolbridge/bridge/upstream/oauth"
)

// clientMetadataURL is the client ID metadata document URL the suite's
// auth/basic-cimd scenario expects a client to use.
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

// maxLogins bounds the logins of one run (the suite's retry limit is 3).
const maxLogins = 3

// serverName is the scenario server's name in the generated config.
const serverName = "conformance"

// scenarioContext is MCP_CONFORMANCE_CONTEXT for client credentials.
type scenarioContext struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	PrivateKey   string `json:"private_key_pem"`
	SigningAlg   string `json:"signing_algorithm"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: authclient SERVER_URL")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	err := run(ctx, os.Args[len(os.Args)-1])
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "authclient:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, serverURL string) error {
	bin := os.Getenv("CONFORMANCE_TOOLBRIDGE_BIN")
	if bin == "" {
		bin = "toolbridge"
	}
	dir, err := os.MkdirTemp("", "toolbridge-authclient-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var sc scenarioContext
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &sc); err != nil {
			return fmt.Errorf("reading MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	cfgPath, clientCredentials, err := writeConfig(dir, serverURL, sc)
	if err != nil {
		return err
	}
	env := append(os.Environ(), "TOOLBRIDGE_CONFIG="+cfgPath)
	if os.Getenv("TOOLBRIDGE_STATE_DIR") == "" {
		env = append(env, "TOOLBRIDGE_STATE_DIR="+filepath.Join(dir, "state"))
	}

	if clientCredentials {
		// No login: the first request gets a token with the client's key.
		return toolbridge(ctx, bin, env, nil, "call", serverName+"::test-tool")
	}
	var last error
	for range maxLogins {
		if err := login(ctx, bin, env); err != nil {
			return err
		}
		var out lockedBuilder
		err := toolbridge(ctx, bin, env, &out, "call", serverName+"::test-tool")
		if err == nil {
			return nil
		}
		last = err
		if !strings.Contains(out.String()+err.Error(), "auth login") {
			return err
		}
	}
	return fmt.Errorf("still not authorized after %d logins: %w", maxLogins, last)
}

// writeConfig writes the config for the scenario: client credentials when
// the context carries them, else an OAuth login with the client ID
// metadata document URL the suite expects.
func writeConfig(dir, serverURL string, sc scenarioContext) (path string, clientCredentials bool, err error) {
	auth := map[string]any{"client_metadata_url": clientMetadataURL}
	switch {
	case sc.PrivateKey != "":
		key := filepath.Join(dir, "client-key.pem")
		if err := os.WriteFile(key, []byte(sc.PrivateKey), 0o600); err != nil {
			return "", false, err
		}
		auth = map[string]any{"type": "client_credentials", "client_id": sc.ClientID, "private_key_file": key, "signing_alg": sc.SigningAlg}
		clientCredentials = true
	case sc.ClientSecret != "":
		auth = map[string]any{"type": "client_credentials", "client_id": sc.ClientID, "client_secret": sc.ClientSecret}
		clientCredentials = true
	}
	cfg := map[string]any{
		"mcpServers":  map[string]any{serverName: map[string]any{"url": serverURL, "auth": auth}},
		"token_store": "file",
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	path = filepath.Join(dir, "toolbridge.json")
	// The config holds the scenario's client secret: 0600.
	return path, clientCredentials, os.WriteFile(path, b, 0o600)
}

// toolbridge runs one toolbridge command with its output on ours, a copy
// of both streams going to also (if not nil).
func toolbridge(ctx context.Context, bin string, env []string, also io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, os.Stdout, os.Stderr
	if also != nil {
		cmd.Stdout, cmd.Stderr = io.MultiWriter(os.Stdout, also), io.MultiWriter(os.Stderr, also)
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("toolbridge %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// login runs `toolbridge auth login --no-browser` and plays the browser:
// it follows the URL toolbridge prints and delivers the redirect.
func login(ctx context.Context, bin string, env []string) error {
	cmd := exec.CommandContext(ctx, bin, "auth", "login", serverName, "--no-browser")
	cmd.Env, cmd.Stdout = env, os.Stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting toolbridge auth login: %w", err)
	}
	var followErr error
	followed := false
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(os.Stderr, line)
		if u := strings.TrimSpace(line); !followed && (strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")) {
			followed = true
			if followErr = oauth.FollowOpener(http.DefaultClient)(ctx, u); followErr != nil {
				// toolbridge would wait for a redirect that never comes.
				_ = cmd.Process.Kill()
			}
		}
	}
	err = cmd.Wait()
	if err != nil {
		return errors.Join(fmt.Errorf("toolbridge auth login: %w", err), followErr)
	}
	return nil
}

// lockedBuilder collects the output of both of a command's streams, which
// os/exec copies from two goroutines.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
