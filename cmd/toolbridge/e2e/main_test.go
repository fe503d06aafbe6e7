// Package e2e runs the toolbridge binary as users do: real upstream MCP
// servers from the npm registry behind it, a real MCP client in front of
// it, over stdio and streamable HTTP.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
)

// binary is the toolbridge built once for the whole package.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "toolbridge-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Pinned tool definitions go to a state directory of the run's own,
	// never the user's; each test gets one of its own as well (testEnv).
	if err := os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "toolbridge")
	build := exec.Command("go", "build", "-o", binary, "github.com/toolbridge/toolbridge/cmd/toolbridge")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building toolbridge:", err)
		os.Exit(1)
	}
	// Every gateway the tests start inherits this. The tests list tools
	// expecting every configured server in the list, as before startup_wait
	// existed: on a loaded machine the 13 reference servers can take longer
	// than the 5s default, and a list without them would fail the test for
	// the wrong reason. Tests of startup_wait itself set it in their own
	// environment, which comes later and wins.
	if err := os.Setenv("TOOLBRIDGE_STARTUP_WAIT", "10m"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Gateways the tests stop with SIGTERM stop at once: no load balancer
	// watches their /readyz. The drain tests (deploy_*_test.go) set
	// serve.drain_delay in their gateways' own environment, which wins.
	if err := os.Setenv("TOOLBRIDGE_SERVE__DRAIN_DELAY", "0s"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	demoServer.Remove()
	conformanceClient.Remove()
	driftServer.Remove()
	hostileServer.Remove()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// testEnv is the environment of a toolbridge the test runs: this
// process's, a default state directory of the test's own (so pins one
// test records never meet another test's servers; a state_dir the config
// or env sets still wins), then env, which wins.
func testEnv(t testing.TB, env []string) []string {
	return append(append(os.Environ(), "XDG_STATE_HOME="+t.TempDir()), env...)
}

// writeConfig writes a config file into a temp dir and returns its path.
func writeConfig(t testing.TB, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// gateway is a toolbridge process serving stdio, with an MCP client on it.
type gateway struct {
	c      *client.Client
	cmd    *exec.Cmd
	stderr *testenv.SyncBuffer
	closed bool
}

// startStdio starts toolbridge with args and initializes a client over its
// stdio. The process and its children are checked for leaks at cleanup.
func startStdio(t *testing.T, env []string, args ...string) *gateway {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	g := &gateway{stderr: &testenv.SyncBuffer{}}
	tr := transport.NewStdioWithOptions(binary, env, args,
		transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
			cmd := exec.Command(command, args...)
			cmd.Env = testEnv(t, env)
			cmd.Stderr = g.stderr
			g.cmd = cmd
			return cmd, nil
		}))
	g.c = client.NewClient(tr)
	if err := g.c.Start(ctx); err != nil {
		t.Fatalf("starting toolbridge: %v", err)
	}
	t.Cleanup(func() { g.close(t) })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "toolbridge-e2e", Version: "0"}
	if _, err := g.c.Initialize(ctx, init); err != nil {
		t.Fatalf("initializing toolbridge: %v\nstderr:\n%s", err, g.stderr)
	}
	return g
}

// close ends the session the way a client does (closing stdin) and checks
// that toolbridge exited and left no child process behind.
func (g *gateway) close(t *testing.T) {
	t.Helper()
	if g.closed {
		return
	}
	g.closed = true
	pid := g.cmd.Process.Pid
	descendants := testenv.DescendantProcesses(pid)
	_ = g.c.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var alive []int
		for _, p := range append(descendants, pid) {
			if testenv.ProcessAlive(p) {
				alive = append(alive, p)
			}
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes left behind after the client closed stdin: %v (of toolbridge %d and its children %v)\nstderr:\n%s", alive, pid, descendants, g.stderr)
			for _, p := range alive {
				_ = testenv.KillProcessGroup(p)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (g *gateway) call(t *testing.T, name string, args any) (*mcp.CallToolResult, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := g.c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("calling %s: %v\nstderr:\n%s", name, err, g.stderr)
	}
	return res, textOf(res)
}

func (g *gateway) toolNames(t *testing.T) []string {
	t.Helper()
	res, err := g.c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	names := make([]string, len(res.Tools))
	for i, tool := range res.Tools {
		names[i] = tool.Name
	}
	return names
}

func textOf(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}
