package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
)

// httpGateway is a toolbridge process serving streamable HTTP.
type httpGateway struct {
	url    string // http://127.0.0.1:PORT/mcp
	base   string // http://127.0.0.1:PORT
	cmd    *exec.Cmd
	stderr *testenv.SyncBuffer
}

// startHTTP starts `toolbridge serve --transport http` on a free loopback
// port and waits until /healthz answers. It stops the process (SIGTERM)
// at cleanup and checks that no child is left behind.
func startHTTP(t *testing.T, args ...string) *httpGateway {
	t.Helper()
	return startHTTPCommand(t, "serve", args...)
}

// startHTTPCommand is startHTTP for another command that serves, e.g. demo.
func startHTTPCommand(t *testing.T, command string, args ...string) *httpGateway {
	t.Helper()
	return startHTTPCommandOn(t, testenv.FreePort(t), command, args...)
}

// startHTTPCommandOn is startHTTPCommand on a port chosen beforehand (a
// config that names the gateway's own URL, such as serve.oauth.audience,
// needs it first).
func startHTTPCommandOn(t *testing.T, port int, command string, args ...string) *httpGateway {
	t.Helper()
	return startGateway(t, testEnv(t, nil), port, command, args...)
}

// startGateway does startHTTPCommandOn's work with env as the process's
// environment. It takes a testing.TB so that a test can check how it fails.
func startGateway(t testing.TB, env []string, port int, command string, args ...string) *httpGateway {
	t.Helper()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	g := &httpGateway{url: base + "/mcp", base: base, stderr: &testenv.SyncBuffer{}}
	args = append([]string{command, "--transport", "http", "--listen", fmt.Sprintf("127.0.0.1:%d", port)}, args...)
	g.cmd = exec.Command(binary, args...)
	g.cmd.Env = env
	g.cmd.Stderr = g.stderr
	testenv.SetProcessGroup(g.cmd)
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// exited is closed (not sent on) once Wait returns, so that both the
	// start loop and the cleanup can see the exit: with a single value on a
	// channel, a gateway that exited before serving left the cleanup
	// waiting for a value the start loop had already taken, forever.
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = g.cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
			return // already gone (it failed to start): nothing to stop
		default:
		}
		descendants := testenv.DescendantProcesses(g.cmd.Process.Pid)
		_ = g.cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			t.Errorf("toolbridge did not exit within 20s of SIGINT\nstderr:\n%s", g.stderr)
			_ = testenv.KillProcessGroup(g.cmd.Process.Pid)
			<-exited
		}
		waitGone(t, descendants)
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return g
			}
		}
		select {
		case <-exited:
			t.Fatalf("toolbridge exited before serving: %v\nstderr:\n%s", waitErr, g.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("toolbridge did not serve /healthz within 2 minutes\nstderr:\n%s", g.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitGone fails the test if any of pids is still alive after a grace
// period: toolbridge must stop every child it started.
func waitGone(t testing.TB, pids []int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var alive []int
		for _, p := range pids {
			if testenv.ProcessAlive(p) {
				alive = append(alive, p)
			}
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("child processes left behind: %v", alive)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestConformanceThroughGateway runs the official conformance suite against
// toolbridge in pass-through mode, fronting mcp-go's conformance server, and
// requires every scenario that passes directly (testenv's golden list) to
// pass through the gateway too.
func TestConformanceThroughGateway(t *testing.T) {
	env := testenv.NPM(t)
	upstream := testenv.ConformanceServer(t)
	cfg := writeConfig(t, "toolbridge.yaml", "mcpServers:\n  conformance:\n    url: "+upstream+"\n")
	g := startHTTP(t, "--config", cfg, "--mode", "off")

	baseline, err := testenv.DirectBaseline()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	scenarios, err := testenv.ListScenarios(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// One retry: tools-call-with-progress and -with-logging race upstream.
	results, err := testenv.RunScenarios(ctx, env, g.url, scenarios, 1)
	if err != nil {
		t.Fatalf("running the suite: %v\ntoolbridge stderr:\n%s", err, g.stderr)
	}
	var passed, extra []string
	for _, r := range results {
		verdict := "FAIL"
		if r.Passed {
			verdict = "pass"
			passed = append(passed, r.Name)
			if !slices.Contains(baseline, r.Name) {
				extra = append(extra, r.Name)
			}
		}
		t.Logf("%-4s %s (%d attempts) %s", verdict, r.Name, r.Attempts, r.Summary())
	}
	t.Logf("through toolbridge: %d/%d scenarios passed in %s; direct baseline %d; passing through but not in the baseline: %v",
		len(passed), len(results), time.Since(start).Round(time.Second), len(baseline), extra)
	for _, name := range testenv.Regressions(baseline, results) {
		i := slices.IndexFunc(results, func(r testenv.ScenarioResult) bool { return r.Name == name })
		if i < 0 {
			t.Errorf("baseline scenario %s did not run", name)
			continue
		}
		t.Errorf("%s passes directly but not through toolbridge: %s\n%s", name, results[i].Summary(), results[i].Output)
	}
}
