package e2e

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
)

// callUntilOK calls add until it answers 3 or the deadline passes, and
// returns the error results it saw on the way.
func callUntilOK(ctx context.Context, t *testing.T, p *stdioProc, deadline time.Duration) []string {
	t.Helper()
	var errors []string
	end := time.Now().Add(deadline)
	for time.Now().Before(end) {
		callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		isErr, text := p.callTool(callCtx, "add", map[string]any{"a": 1, "b": 2})
		cancel()
		if !isErr && text == "3" {
			return errors
		}
		errors = append(errors, text)
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("add never worked again within %s; errors seen: %q\nstderr:\n%s", deadline, errors, p.stderrText())
	return nil
}

// TestCrashedUpstreamIsRestarted kills a stdio server mid-session: calls
// meanwhile get an error naming the server and the next attempt; it is
// restarted with backoff, and calls work again without the client
// reconnecting.
func TestCrashedUpstreamIsRestarted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := startRaw(t, nil, "serve", "--config", demoConfig(t, "restart: {initial: 2s, max: 4s}\n", ""), "--mode", "off")
	p.initialize(ctx)
	if isErr, text := p.callTool(ctx, "add", map[string]any{"a": 1, "b": 2}); isErr || text != "3" {
		t.Fatalf("add before the crash: isError=%v %q", isErr, text)
	}
	waitForDemoChildren(t, p.pid())
	old := findChild(t, p.pid(), "demo-server math")
	if err := testenv.KillProcessGroup(old); err != nil {
		t.Fatal(err)
	}
	seen := callUntilOK(ctx, t, p, 30*time.Second)
	if len(seen) == 0 {
		t.Fatal("add worked at once after the kill: the test could not see the server down")
	}
	if !strings.Contains(seen[0], `"math"`) {
		t.Errorf("first error after the crash does not name the server: %q", seen[0])
	}
	if !strings.Contains(strings.Join(seen, "\n"), "next attempt in") {
		t.Errorf("no error said when the next attempt is: %q", seen)
	}
	if now := findChild(t, p.pid(), "demo-server math"); now == old {
		t.Errorf("math runs as the same pid %d after the restart", now)
	}
	if !saysReconnected(p.stderr.WaitFor(ctx, saysReconnected)) {
		t.Errorf("no reconnect line on stderr:\n%s", p.stderrText())
	}
	// The surviving server was never disturbed, and the catalog kept the
	// restarted server's tools.
	if names := p.toolNames(ctx); !containsAll(names, "add", "reverse_text") {
		t.Errorf("tools/list after the restart: %v", names)
	}
}

// TestHTTPUpstreamComesBack stops an HTTP upstream and starts it again on
// the same address: toolbridge reconnects and re-initializes by itself.
func TestHTTPUpstreamComesBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	demo := demoServerBinary(t)
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	start := func() *exec.Cmd {
		cmd := exec.Command(demo, "-http", addr, "math")
		testenv.SetProcessGroup(cmd)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = testenv.KillProcessGroup(cmd.Process.Pid); _ = cmd.Wait() })
		deadline := time.Now().Add(30 * time.Second)
		for {
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Close()
				return cmd
			}
			if time.Now().After(deadline) {
				t.Fatalf("demo-server did not listen on %s", addr)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	server := start()
	cfg := writeConfig(t, "toolbridge.yaml", "restart: {initial: 300ms, max: 1s}\nmcpServers:\n  math:\n    url: http://"+addr+"/mcp\n")
	p := startRaw(t, nil, "serve", "--config", cfg, "--mode", "off")
	p.initialize(ctx)
	if isErr, text := p.callTool(ctx, "add", map[string]any{"a": 1, "b": 2}); isErr || text != "3" {
		t.Fatalf("add before the server went away: isError=%v %q", isErr, text)
	}

	_ = testenv.KillProcessGroup(server.Process.Pid)
	_ = server.Wait()
	if isErr, text := p.callTool(ctx, "add", map[string]any{"a": 1, "b": 2}); !isErr || !strings.Contains(text, `"math"`) {
		t.Errorf("add while the server is away: isError=%v %q, want an error naming math", isErr, text)
	}
	start()
	callUntilOK(ctx, t, p, 30*time.Second)
	if !saysReconnected(p.stderr.WaitFor(ctx, saysReconnected)) {
		t.Errorf("no reconnect line on stderr:\n%s", p.stderrText())
	}
}

func containsAll(list []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, v := range list {
			found = found || v == w
		}
		if !found {
			return false
		}
	}
	return true
}

// saysReconnected reports whether toolbridge's stderr has a reconnect line.
func saysReconnected(stderr string) bool { return strings.Contains(stderr, "reconnected") }
