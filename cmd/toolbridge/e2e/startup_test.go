package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
)

// TestStartDoesNotWaitForAHungServer runs toolbridge with two demo servers,
// one that never answers initialize (a real process, connect timeout 2m)
// and one that comes up only when the test lets it. initialize is answered
// while the hung server is still connecting; the first tools/list answers,
// after startup_wait, with the servers that are up; the late server joins
// with list_changed; and stderr has the one summary line of the start.
func TestStartDoesNotWaitForAHungServer(t *testing.T) {
	dir := t.TempDir()
	pidFile, gate := filepath.Join(dir, "hung.pids"), filepath.Join(dir, "gate")
	late := "while [ ! -e " + gate + " ]; do sleep 0.05; done; exec " + demoServerBinary(t) + " notes"
	cfg := demoConfig(t, "",
		"  hung:\n    command: sh\n    connect_timeout: 2m\n    args: [-c, "+yamlString(pidFileScript(pidFile, "wait"))+"]\n"+
			"  late:\n    command: sh\n    connect_timeout: 2m\n    args: [-c, "+yamlString(late)+"]\n")
	// startStdio returns once initialize is answered.
	g := startStdio(t, []string{"TOOLBRIDGE_STARTUP_WAIT=1s"}, "serve", "--config", cfg, "--mode", "off")
	for _, pid := range readPids(t, pidFile, 2) {
		if !testenv.ProcessAlive(pid) {
			t.Fatalf("the hung server's process %d is not running", pid)
		}
	}
	if stderr := g.stderr.String(); strings.Contains(stderr, "hung ") {
		t.Fatalf("initialize was answered only after the hung server was given up on:\n%s", stderr)
	}

	changed := make(chan struct{}, 16)
	g.c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			changed <- struct{}{}
		}
	})
	first := g.toolNames(t)
	if !slices.Contains(first, "convert_units") || slices.Contains(first, "create_note") {
		t.Fatalf("first tools/list = %v, want the math server's tools and not the late one's", first)
	}
	// stderr is copied from a pipe of its own: the line written before the
	// answer may reach the buffer after it.
	summary := fmt.Sprintf("toolbridge: 2 of 4 servers up, %d tools; bridge mode off (off: pass-through", len(first))
	for wait := time.Now().Add(time.Minute); !strings.Contains(g.stderr.String(), summary); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(wait) {
			t.Fatalf("stderr has no start-up summary %q:\n%s", summary, g.stderr)
		}
	}

	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(time.Minute)
	for {
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no tools/list_changed brought the late server's tools\nstderr:\n%s", g.stderr)
		}
		if names := g.toolNames(t); slices.Contains(names, "create_note") {
			if !slices.Contains(names, "convert_units") {
				t.Fatalf("after the late server joined, tools/list = %v lost the math server", names)
			}
			break
		}
	}
}
