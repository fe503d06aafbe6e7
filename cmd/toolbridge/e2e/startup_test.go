package e2e

import (
	"context"
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
// The first list says, in its _meta and on stderr, which servers it went
// without and which setting waits longer (a one-shot client such as
// Inspector's CLI never sees the list_changed); --startup-wait sets it.
func TestStartDoesNotWaitForAHungServer(t *testing.T) {
	dir := t.TempDir()
	pidFile, gate := filepath.Join(dir, "hung.pids"), filepath.Join(dir, "gate")
	late := "while [ ! -e " + gate + " ]; do sleep 0.05; done; exec " + demoServerBinary(t) + " notes"
	cfg := demoConfig(t, "",
		"  hung:\n    command: sh\n    connect_timeout: 2m\n    args: [-c, "+yamlString(pidFileScript(pidFile, "wait"))+"]\n"+
			"  late:\n    command: sh\n    connect_timeout: 2m\n    args: [-c, "+yamlString(late)+"]\n")
	// startStdio returns once initialize is answered.
	// The flag overrides TestMain's TOOLBRIDGE_STARTUP_WAIT=10m.
	g := startStdio(t, nil, "serve", "--config", cfg, "--mode", "off", "--startup-wait", "1s")
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
	res, err := g.c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var first []string
	for _, tool := range res.Tools {
		first = append(first, tool.Name)
	}
	if !slices.Contains(first, "convert_units") || slices.Contains(first, "create_note") {
		t.Fatalf("first tools/list = %v, want the math server's tools and not the late one's", first)
	}
	var note map[string]any
	if res.Meta != nil {
		note, _ = res.Meta.AdditionalFields["io.toolbridge/startup"].(map[string]any)
	}
	if note == nil {
		t.Fatalf("the first tools/list, answered while 2 servers were connecting, has no io.toolbridge/startup in _meta: %+v", res.Meta)
	}
	if got := fmt.Sprint(note["still_connecting"]); got != "[hung late]" || note["startup_wait"] != "1s" {
		t.Errorf("_meta io.toolbridge/startup = %v, want still_connecting [hung late] and startup_wait 1s", note)
	}
	if msg, _ := note["message"].(string); !strings.Contains(msg, "--startup-wait") || !strings.Contains(msg, "2 servers still connecting") {
		t.Errorf("_meta message %q does not say how many servers it lacks and name --startup-wait", msg)
	}
	// stderr is copied from a pipe of its own: the line written before the
	// answer may reach the buffer after it.
	summary := fmt.Sprintf("toolbridge: 2 of 4 servers up, %d tools; bridge mode off (off: pass-through", len(first))
	for wait := time.Now().Add(time.Minute); !strings.Contains(g.stderr.String(), summary); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(wait) {
			t.Fatalf("stderr has no start-up summary %q:\n%s", summary, g.stderr)
		}
	}

	for wait := time.Now().Add(time.Minute); !strings.Contains(g.stderr.String(), "--startup-wait 30s"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(wait) {
			t.Fatalf("stderr does not say that the list went without servers still connecting, nor name --startup-wait:\n%s", g.stderr)
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
