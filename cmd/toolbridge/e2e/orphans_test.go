package e2e

import (
	"context"
	"fmt"
	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// running reports whether pid is a live process (a zombie is not: it has
// ended and only waits to be reaped).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// TestKill9LeavesNoOrphans kills toolbridge with SIGKILL while a call is
// stuck in a server that ignores SIGTERM and that left a grandchild behind
// (sh -c 'sleep 300 & exec server'): soon after, no process toolbridge
// started is alive, children and grandchildren alike.
func TestKill9LeavesNoOrphans(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc (Linux)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	script := filepath.Join(dir, "stuck.sh")
	if err := os.WriteFile(script, []byte(stuckServer), 0o600); err != nil {
		t.Fatal(err)
	}
	called := filepath.Join(dir, "called")
	// The server ignores SIGTERM (its children inherit that), starts a
	// grandchild, runs the stuck server and, should its stdin close,
	// sleeps on.
	body := "trap '' TERM; " + pidFileScript(pids, "sh "+script+" "+called+"; sleep 300")
	cfg := demoConfig(t, "timeouts: {call: 5m}\n", "  stuck:\n    command: sh\n    args: [-c, "+yamlString(body)+"]\n")
	p := startRaw(t, nil, "serve", "--config", cfg, "--mode", "off")
	p.initialize(ctx)
	started := append(readPids(t, pids, 2), waitForDemoChildren(t, p.pid())...)
	p.send(`{"jsonrpc":"2.0","id":"stuck-1","method":"tools/call","params":{"name":"stuck_forever","arguments":{}}}`)
	waitCalled(t, called)
	all := append(testenv.DescendantProcesses(p.pid()), started...)
	if len(all) < 4 {
		t.Fatalf("found only %v of toolbridge's processes", all)
	}

	if err := syscall.Kill(p.pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	deadline := start.Add(20 * time.Second)
	for {
		var alive []int
		for _, pid := range all {
			if running(pid) {
				alive = append(alive, pid)
			}
		}
		if len(alive) == 0 {
			t.Logf("all %d processes gone %s after the SIGKILL", len(all), time.Since(start).Round(10*time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			killAll(alive)
			t.Fatalf("processes toolbridge started outlived its SIGKILL by 20s: %v of %v", alive, all)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
