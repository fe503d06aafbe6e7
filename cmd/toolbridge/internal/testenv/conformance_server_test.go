package testenv

import (
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestConformanceServerLifecycle checks that ConformanceServer answers on the
// URL it returns and that its process is gone once the test that started it ends.
func TestConformanceServerLifecycle(t *testing.T) {
	before := ChildProcesses(os.Getpid())
	var started []int
	t.Run("serve", func(t *testing.T) {
		url := ConformanceServer(t)
		if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
			t.Fatalf("ConformanceServer = %q, want http://127.0.0.1:PORT/mcp", url)
		}
		resp, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/health")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /health = %s", resp.Status)
		}
		started = newPids(before, ChildProcesses(os.Getpid()))
		if len(started) == 0 {
			t.Fatal("no new child process while the server runs: the leak check could not fail")
		}
	})
	for _, pid := range started {
		if slices.Contains(ChildProcesses(os.Getpid()), pid) || ProcessAlive(pid) {
			t.Errorf("conformance server (pid %d) still present after its test ended", pid)
		}
	}
}
