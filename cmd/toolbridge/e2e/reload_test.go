package e2e

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
)

// rewrite replaces the config file's content, as an editor saving it would.
func rewrite(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// demoServers is the mcpServers section for the named demo servers.
func demoServers(t *testing.T, names ...string) string {
	demo := demoServerBinary(t)
	var b strings.Builder
	b.WriteString("mcpServers:\n")
	for _, n := range names {
		b.WriteString("  " + n + ":\n    command: " + demo + "\n    args: [" + n + "]\n")
	}
	return b.String()
}

// demoChild returns the pid of toolbridge's child serving demo server
// name, or 0.
func demoChild(pid int, name string) int {
	for p, cmd := range childCommands(pid) {
		if strings.HasSuffix(cmd, "demo-server "+name) {
			return p
		}
	}
	return 0
}

// waitStderr waits until toolbridge's stderr contains want n times.
func (p *stdioProc) waitStderr(ctx context.Context, want string, n int) {
	p.t.Helper()
	if s := p.stderr.WaitFor(ctx, func(s string) bool { return strings.Count(s, want) >= n }); strings.Count(s, want) < n {
		p.t.Fatalf("stderr never said %q (%d times):\n%s", want, n, s)
	}
}

// listChanged waits for notifications/tools/list_changed.
func (p *stdioProc) listChanged(ctx context.Context) {
	p.t.Helper()
	p.expect(ctx, "notifications/tools/list_changed", func(m rpcMessage) bool {
		return m.Method == "notifications/tools/list_changed"
	})
}

// TestSIGHUPReloadsTheConfig edits a running gateway's config and sends
// SIGHUP: a new server is started and its tools listed, an unchanged one
// keeps its process, a broken config is rejected while the old one keeps
// serving, and a removed server's process is stopped.
func TestSIGHUPReloadsTheConfig(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	path := writeConfig(t, "toolbridge.yaml", "mode: off\n"+demoServers(t, "math"))
	p := startRaw(t, nil, "serve", "--config", path)
	p.initialize(ctx)
	if names := p.toolNames(ctx); !slices.Contains(names, "add") || slices.Contains(names, "reverse_text") {
		t.Fatalf("tools before the reload: %v", names)
	}
	mathPID := demoChild(p.pid(), "math")
	if mathPID == 0 {
		t.Fatalf("no math child: %v", childCommands(p.pid()))
	}

	// Add a server.
	rewrite(t, path, "mode: off\n"+demoServers(t, "math", "text"))
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.listChanged(ctx)
	p.waitStderr(ctx, "config reloaded: added text; 1 unchanged", 1)
	if names := p.toolNames(ctx); !slices.Contains(names, "add") || !slices.Contains(names, "reverse_text") {
		t.Fatalf("tools after adding text: %v", names)
	}
	if isErr, text := p.callTool(ctx, "reverse_text", map[string]any{"text": "abc"}); isErr || text != "cba" {
		t.Errorf("reverse_text on the added server: isError=%v %q", isErr, text)
	}
	if got := demoChild(p.pid(), "math"); got != mathPID {
		t.Errorf("math's process changed from %d to %d although its config did not", mathPID, got)
	}

	// A broken config is rejected; the old one keeps serving.
	rewrite(t, path, "mode: sideways\n"+demoServers(t, "text"))
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.waitStderr(ctx, "reload rejected; still serving the previous config", 1)
	if !strings.Contains(p.stderrText(), "sideways") {
		t.Errorf("the rejection does not quote the bad value:\n%s", p.stderrText())
	}
	if isErr, text := p.callTool(ctx, "add", map[string]any{"a": 2, "b": 3}); isErr || text != "5" {
		t.Errorf("add after a rejected reload: isError=%v %q", isErr, text)
	}

	// Remove a server: its process is stopped.
	rewrite(t, path, "mode: off\n"+demoServers(t, "text"))
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.listChanged(ctx)
	p.waitStderr(ctx, "config reloaded: removed math; 1 unchanged", 1)
	waitGone(t, []int{mathPID})
	if names := p.toolNames(ctx); slices.Contains(names, "add") || !slices.Contains(names, "reverse_text") {
		t.Errorf("tools after removing math: %v", names)
	}
}

// TestWatchReloadsWhenTheFileChanges: with --watch, saving the config is
// enough.
func TestWatchReloadsWhenTheFileChanges(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	path := writeConfig(t, "toolbridge.yaml", "mode: off\n"+demoServers(t, "math"))
	p := startRaw(t, nil, "serve", "--watch", "--config", path)
	p.initialize(ctx)
	if names := p.toolNames(ctx); slices.Contains(names, "reverse_text") {
		t.Fatalf("tools before the edit: %v", names)
	}
	rewrite(t, path, "mode: off\n"+demoServers(t, "math", "text"))
	p.waitStderr(ctx, "changed: reloading the config", 1)
	// The report follows the new catalog. (A list_changed alone could be
	// the one of the start-up's publication.)
	p.waitStderr(ctx, "config reloaded: added text", 1)
	if names := p.toolNames(ctx); !slices.Contains(names, "reverse_text") {
		t.Errorf("tools after the edit: %v", names)
	}
}

func TestWatchWithoutAConfigFileIsAUsageError(t *testing.T) {
	p := startRaw(t, nil, "serve", "--watch")
	if !p.waitExit(exitWait) {
		t.Fatal("toolbridge serve --watch without a config did not exit")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(p.stderrText(), "--watch needs a config file") {
		t.Errorf("exit code %d, stderr:\n%s\nwant 2 and a message that --watch needs a config file", code, p.stderrText())
	}
}

// TestSIGTERMLetsACallInFlightFinish: a long call to the npm everything
// server is still answered after SIGTERM, within the grace period, and
// then toolbridge exits cleanly with its children stopped.
func TestSIGTERMLetsACallInFlightFinish(t *testing.T) {
	env := testenv.NPM(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": env.Bin(testenv.BinEverything), "args": []string{"stdio"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	p := startRaw(t, nil, "serve", "--mode", "off", "--config", writeConfig(t, "config.json", string(cfg)))
	p.initialize(ctx)
	// initialize is answered before the servers are up (#13); tools/list
	// waits for them, so the server's process exists before it is read.
	p.request(ctx, "tools/list", map[string]any{})
	children := testenv.DescendantProcesses(p.pid())
	if len(children) == 0 {
		t.Fatal("no child processes")
	}
	const longCall = `"long"`
	p.send(`{"jsonrpc":"2.0","id":"long","method":"tools/call","params":{"name":"trigger-long-running-operation",` +
		`"arguments":{"duration":4,"steps":4},"_meta":{"progressToken":"long"}}}`)
	// The first progress proves the call is running upstream; SIGTERM
	// then, with three seconds of it left, inside the default 10 s grace.
	p.expect(ctx, "the long call's first progress", func(m rpcMessage) bool { return m.Method == "notifications/progress" })
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	isErr, text := p.toolResult("trigger-long-running-operation", p.response(ctx, longCall))
	if isErr || !strings.Contains(text, "completed") {
		t.Errorf("the call in flight at SIGTERM: isError=%v %q, want its result", isErr, text)
	}
	if !p.waitExit(exitWait) {
		t.Fatalf("toolbridge did not exit after the call finished\nstderr:\n%s", p.stderrText())
	}
	exitedCleanly(t, p.cmd.ProcessState, p.waitErr, p.stderrText())
	waitGone(t, children)
}
