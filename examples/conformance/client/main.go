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
}

// step is one toolbridge command line; "-c CONFIG" is added to it.
type step struct {
	args []string
	// want must appear in the command's output, stdout or stderr (""
	// checks only the exit code, which must be 0 either way).
	want string
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
	if err := fs.Parse(args); err != nil {
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
	for _, st := range sc.steps {
		if err := runStep(ctx, bin, cfg, dir, st, stdout, stderr); err != nil {
			return fmt.Errorf("scenario %s: %w", name, err)
		}
	}
	return nil
}

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
	cfg := map[string]any{"mcpServers": map[string]any{serverName: entry}}
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
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
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
