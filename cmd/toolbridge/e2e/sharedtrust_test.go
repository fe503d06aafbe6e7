package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/bridge/state/statetest"
)

// TestTrustApproveReleasesEveryReplica: two gateways share pins through a
// real redis-server (each with a state directory of its own, so only
// Redis can carry the approval); a definition changed upstream is held by
// both; "toolbridge trust approve" run once, as on one replica, makes the
// tool listed and callable on both without a call or a reload.
func TestTrustApproveReleasesEveryReplica(t *testing.T) {
	srv := statetest.Start(t)
	c := copyCatalog(t)
	cfg := driftConfig(t, c, "", "github")
	replica := func() []string {
		return []string{"TOOLBRIDGE_STATE_DIR=" + t.TempDir(), "TOOLBRIDGE_REDIS__URL=" + srv.URL()}
	}
	// A first run pins on first use, into Redis.
	if code, out, errOut := runCLI(t, replica(), "tools", "-c", cfg); code != 0 {
		t.Fatalf("toolbridge tools exited %d\n%s\n%s", code, out, errOut)
	}
	tool := c.tool(t, "github", "create_issue")
	tool["description"] = "Create a new issue in a GitHub repository." + poison
	c.write(t)

	env1, env3 := replica(), replica()
	g1 := startStdio(t, env1, "serve", "-c", cfg, "--mode", "off")
	g3 := startStdio(t, env3, "serve", "-c", cfg, "--mode", "off")
	for i, g := range []*gateway{g1, g3} {
		if contains(g.toolNames(t), "create_issue") {
			t.Fatalf("replica %d lists the changed create_issue before any approval", i+1)
		}
	}
	approved := time.Now()
	code, out, errOut := runCLI(t, env1, "trust", "approve", "github::create_issue", "-c", cfg)
	if code != 0 || !strings.Contains(out, "approved github::create_issue (sha256:") {
		t.Fatalf("trust approve exited %d\n%s\n%s", code, out, errOut)
	}
	done := time.Since(approved)
	deadline := time.Now().Add(30 * time.Second) // far above the 2 s it should take
	for !contains(g3.toolNames(t), "create_issue") {
		if time.Now().After(deadline) {
			t.Fatalf("replica 3 still does not list create_issue 30s after the approval\nstderr:\n%s", g3.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("replica 3 listed the tool %v after trust approve began (%v after it ended)", time.Since(approved), time.Since(approved)-done)
	for i, g := range []*gateway{g1, g3} {
		if res, text := g.call(t, "create_issue", map[string]any{"owner": "o", "repo": "r", "title": "t"}); res.IsError || !strings.Contains(text, "called github::create_issue") {
			t.Errorf("replica %d: call after the approval = isError %v %q", i+1, res.IsError, text)
		}
	}
}
