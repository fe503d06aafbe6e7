// Command client runs toolbridge as the client under test of the official
// MCP conformance suite's client scenarios:
//
//	go build -o /tmp/toolbridge ./cmd/toolbridge
//	go build -o /tmp/conformance-client ./examples/conformance/client
//	npx @modelcontextprotocol/conformance@0.1.10 client \
//	    --command "/tmp/conformance-client --toolbridge /tmp/toolbridge" \
//	    --scenario tools_call
//
// The suite starts a server for the scenario and runs the command with the
// server's URL as its last argument, the scenario's name in
// MCP_CONFORMANCE_SCENARIO and any extra context (JSON) in
// MCP_CONFORMANCE_CONTEXT. This program writes a toolbridge config whose one
// server, "conformance", is that URL, and runs toolbridge's own commands
// against it (tools, call, ...) as the scenario asks; nothing here speaks
// MCP itself. It exits 0 when every command did what it should.
//
// Without --toolbridge it runs the toolbridge found on PATH.
//
// Each scenario is one entry of the scenarios table below: the config entry
// for the suite's server, and the toolbridge commands to run with what
// their output must show.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/toolbridge/toolbridge/bridge/upstream/oauth"
)

// serverName is the name the suite's server gets in the generated config.
const serverName = "conformance"

// scenario is what toolbridge does for one conformance scenario.
type scenario struct {
	// server returns the config entry (as in mcpServers) for the suite's
	// server at url; nil means the plain streamable-HTTP entry.
	server func(url string, sc Context) (map[string]any, error)
	// steps are the toolbridge commands to run, in order.
	steps []step
	// mayFail: the scenario's server never lets the call succeed (the
	// suite judges only what the client sent), so a step still needing a
	// login after maxLogins logins is the expected end, not an error.
	mayFail bool
}

// step is one toolbridge command line; "-c CONFIG" is added to it.
type step struct {
	args []string
	// want must appear in the command's output, stdout or stderr (""
	// checks only the exit code, which must be 0 either way).
	want string
	// browser makes this program play the browser for the step (`auth
	// login --no-browser`): it follows the authorization URL toolbridge
	// prints and delivers the redirect to toolbridge's 127.0.0.1
	// listener. The suite's authorization server approves at once.
	browser bool
	// relogin, when the step fails saying to run `toolbridge auth login`
	// (a 403 asking for more scope), logs in again and reruns the step,
	// at most maxLogins logins in all, as a user would and no more.
	relogin bool
}

// maxLogins bounds the logins of one scenario run: a server that never
// accepts the token must not keep the client logging in (the suite's
// auth/scope-retry-limit allows 3).
const maxLogins = 3

// clientMetadataURL is the client ID metadata document URL the suite's
// auth/basic-cimd scenario expects a client to use where the
// authorization server supports them.
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

// authLogin logs in, playing the browser.
var authLogin = step{args: []string{"auth", "login", serverName, "--no-browser"}, want: "Logged in to " + serverName, browser: true}

// authScenario runs an auth/* scenario as a user would: log in, then call
// the suite's tool, logging in again if toolbridge says a login is needed.
// For client credentials the login gets the token without a browser.
var authScenario = scenario{server: authServer, steps: []step{
	authLogin,
	{args: []string{"call", serverName + "::test-tool"}, want: "test", relogin: true},
}}

// authServer is the config entry of an auth scenario's server: client
// credentials (a secret or a private key) when the context carries them,
// else an OAuth login that uses the client ID metadata document where the
// server supports one and dynamic registration elsewhere.
func authServer(url string, sc Context) (map[string]any, error) {
	auth := map[string]any{"client_metadata_url": clientMetadataURL}
	switch {
	case sc.String("private_key_pem") != "":
		auth = map[string]any{"type": "client_credentials", "client_id": sc.String("client_id"),
			"private_key": sc.String("private_key_pem"), "signing_alg": sc.String("signing_algorithm")}
	case sc.String("client_secret") != "":
		auth = map[string]any{"type": "client_credentials", "client_id": sc.String("client_id"),
			"client_secret": sc.String("client_secret")}
	}
	return map[string]any{"url": url, "transport": "streamable-http", "auth": auth}, nil
}

// scenarios are the client scenarios toolbridge takes part in, by the
// suite's names. The auth/* scenarios add entries here whose server sets
// the entry's auth settings from the context, and whose steps run the
// toolbridge auth commands first.
var scenarios = map[string]scenario{
	// The handshake: toolbridge connects, initializes and lists the tools
	// (there are none), and says the server is up on stderr.
	"initialize": {steps: []step{
		{args: []string{"tools"}, want: "✓ " + serverName + " "},
	}},
	// A tool call with number arguments through tool_call's path.
	"tools_call": {steps: []step{
		{args: []string{"call", serverName + "::add_numbers", `{"a":5,"b":3}`}, want: "The sum of 5 and 3 is 8"},
	}},
	// The server asks for input during the call; toolbridge's call answers
	// with the requested schema's defaults (SEP-1034), as --elicit defaults
	// tells it to.
	"elicitation-sep1034-client-defaults": {steps: []step{
		{args: []string{"call", serverName + "::test_client_elicitation_defaults", "--elicit", "defaults"}, want: "Elicitation completed"},
	}},
	// The server ends the call's SSE stream before the answer; toolbridge
	// resumes it with a GET carrying Last-Event-ID after the retry time the
	// server asked for (SEP-1699), and gets the answer there.
	"sse-retry": {steps: []step{
		{args: []string{"call", serverName + "::test_reconnection"}, want: "Reconnection test completed successfully"},
	}},

	// OAuth (issue #15): discovery from the 401 through protected resource
	// metadata at its four placements, then authorization server metadata
	// or OpenID discovery, dynamic registration, PKCE and the resource
	// indicator.
	"auth/metadata-default": authScenario,
	"auth/metadata-var1":    authScenario,
	"auth/metadata-var2":    authScenario,
	"auth/metadata-var3":    authScenario,
	// A client ID metadata document URL as client_id instead of DCR.
	"auth/basic-cimd": authScenario,
	// 2025-03-26 servers: no resource metadata; metadata at the root, or
	// none and the default endpoints.
	"auth/2025-03-26-oauth-metadata-backcompat": authScenario,
	"auth/2025-03-26-oauth-endpoint-fallback":   authScenario,
	// Scope selection: the challenge's scope, else scopes_supported, else
	// none; a 403 insufficient_scope steps up at the next login, and a
	// server that never accepts gets at most maxLogins logins.
	"auth/scope-from-www-authenticate":  authScenario,
	"auth/scope-from-scopes-supported":  authScenario,
	"auth/scope-omitted-when-undefined": authScenario,
	"auth/scope-step-up":                authScenario,
	"auth/scope-retry-limit":            {server: authServer, steps: []step{authLogin, {args: []string{"call", serverName + "::test-tool"}, relogin: true}}, mayFail: true},
	// Token endpoint authentication: what the server registered the
	// client for.
	"auth/token-endpoint-auth-basic": authScenario,
	"auth/token-endpoint-auth-post":  authScenario,
	"auth/token-endpoint-auth-none":  authScenario,
	// Client credentials with private_key_jwt (ES256) or
	// client_secret_basic, keys from MCP_CONFORMANCE_CONTEXT.
	"auth/client-credentials-jwt":   authScenario,
	"auth/client-credentials-basic": authScenario,
}

// Context is the scenario's extra context from MCP_CONFORMANCE_CONTEXT
// (for the auth scenarios: client ids, secrets, keys), empty when unset.
type Context map[string]any

// String returns the context's string value for key, "" when absent.
func (c Context) String(key string) string {
	s, _ := c[key].(string)
	return s
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance client:", err)
		os.Exit(1)
	}
}

// run parses the command line, writes the config and runs the scenario's
// steps.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	fs.SetOutput(stderr)
	toolbridge := fs.String("toolbridge", "", "the toolbridge binary (default: toolbridge on PATH)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: client [--toolbridge PATH] SERVER_URL\n\n"+
			"Runs the conformance scenario named by MCP_CONFORMANCE_SCENARIO against SERVER_URL\n"+
			"with toolbridge as the client (extra keys in MCP_CONFORMANCE_CONTEXT). Scenarios: %s\n\n",
			strings.Join(supported(), ", "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil // -h asked for the usage, which Parse printed
		}
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("want the server URL as the only argument, got %q", fs.Args())
	}
	url := fs.Arg(0)
	name := getenv("MCP_CONFORMANCE_SCENARIO")
	sc, ok := scenarios[name]
	if !ok {
		return fmt.Errorf("scenario %q is not supported (supported: %s)", name, strings.Join(supported(), ", "))
	}
	var scCtx Context
	if raw := getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &scCtx); err != nil {
			return fmt.Errorf("reading MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	bin := *toolbridge
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("toolbridge"); err != nil {
			return fmt.Errorf("finding toolbridge (give --toolbridge PATH): %w", err)
		}
	}

	dir, err := os.MkdirTemp("", "toolbridge-conformance-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg, err := writeConfig(dir, url, sc, scCtx)
	if err != nil {
		return err
	}
	logins := 0
	for _, st := range sc.steps {
		err := runStep(ctx, bin, cfg, dir, st, stdout, stderr)
		if st.browser {
			logins++
		}
		for st.relogin && errors.Is(err, errNeedsLogin) && logins < maxLogins {
			if err = runStep(ctx, bin, cfg, dir, authLogin, stdout, stderr); err != nil {
				break
			}
			logins++
			err = runStep(ctx, bin, cfg, dir, st, stdout, stderr)
		}
		if err != nil && sc.mayFail && errors.Is(err, errNeedsLogin) {
			fmt.Fprintf(stderr, "conformance client: %v (expected: this server never accepts)\n", err)
			return nil
		}
		if err != nil {
			return fmt.Errorf("scenario %s: %w", name, err)
		}
	}
	return nil
}

// errNeedsLogin marks a step whose toolbridge said to run auth login.
var errNeedsLogin = errors.New("toolbridge says a login is needed")

// writeConfig writes the toolbridge config for the scenario into dir and
// returns its path. Its state lives in dir too, so that no run sees
// another's tokens or pins.
func writeConfig(dir, url string, sc scenario, scCtx Context) (string, error) {
	entry := map[string]any{"url": url, "transport": "streamable-http"}
	if sc.server != nil {
		var err error
		if entry, err = sc.server(url, scCtx); err != nil {
			return "", fmt.Errorf("configuring the server: %w", err)
		}
	}
	// token_store file: tokens stay in the run's state directory, never
	// in the OS keyring of the machine running the suite.
	cfg := map[string]any{"mcpServers": map[string]any{serverName: entry}, "token_store": "file"}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "toolbridge.json")
	return path, os.WriteFile(path, data, 0o600)
}

// runStep runs one toolbridge command, passes its output through, and
// checks its exit code and output.
func runStep(ctx context.Context, bin, cfg, dir string, st step, stdout, stderr io.Writer) error {
	args := append(append([]string(nil), st.args...), "-c", cfg)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "TOOLBRIDGE_STATE_DIR="+filepath.Join(dir, "state"))
	var out syncBuffer
	cmd.Stdout = io.MultiWriter(&out, stdout)
	cmd.Stderr = io.MultiWriter(&out, stderr)
	fmt.Fprintf(stderr, "conformance client: toolbridge %s\n", strings.Join(args, " "))
	var err error
	if st.browser {
		err = runWithBrowser(ctx, cmd, &out, stderr)
	} else {
		err = cmd.Run()
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && strings.Contains(out.String(), "toolbridge auth login "+serverName):
		return fmt.Errorf("toolbridge %s exited %d: %w", st.args[0], exit.ExitCode(), errNeedsLogin)
	case errors.As(err, &exit):
		return fmt.Errorf("toolbridge %s exited %d", st.args[0], exit.ExitCode())
	case err != nil:
		return fmt.Errorf("running toolbridge: %w", err)
	}
	if st.want != "" && !strings.Contains(out.String(), st.want) {
		return fmt.Errorf("toolbridge %s did not print %q", st.args[0], st.want)
	}
	return nil
}

// syncBuffer is a bytes.Buffer that stdout and stderr may write at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// supported lists the scenario names, sorted.
func supported() []string {
	names := make([]string, 0, len(scenarios))
	for n := range scenarios {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// runWithBrowser runs cmd (`auth login --no-browser`) and plays the
// browser: it follows the authorization URL cmd prints on stderr and
// delivers the redirect to cmd's own listener. Everything cmd prints goes
// to out and stderr as runStep's other commands do.
func runWithBrowser(ctx context.Context, cmd *exec.Cmd, out io.Writer, stderr io.Writer) error {
	cmd.Stderr = nil
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("running toolbridge: %w", err)
	}
	followErr := oauth.FollowPrinted(ctx, pipe, io.MultiWriter(out, stderr), func() { _ = cmd.Process.Kill() })
	return errors.Join(cmd.Wait(), followErr)
}
