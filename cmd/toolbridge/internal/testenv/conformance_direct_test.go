package testenv

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// update rewrites testdata/conformance-direct.txt from a fresh run.
var update = flag.Bool("update", false, "rewrite "+DirectBaselineFile+" from this run")

const (
	// minDirectBaseline is the fewest scenarios the golden list may hold; the
	// direct run passed 28 of 31 when it was made.
	minDirectBaseline = 20
	// directRetries reruns a failing scenario once: tools-call-with-progress
	// and tools-call-with-logging race upstream.
	directRetries = 1
	// updateRuns is how many clean passes in a row put a scenario in the
	// golden list, so a flaky one that got lucky stays out.
	updateRuns = 3
)

// TestConformanceDirect runs every server scenario of the pinned conformance
// suite directly against mcp-go's conformance server. It logs each verdict and
// fails if a scenario of the golden list does not pass (after one retry).
func TestConformanceDirect(t *testing.T) {
	env := NPM(t)
	url := ConformanceServer(t)
	ctx := t.Context()

	scenarios, err := ListScenarios(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("conformance suite lists %d server scenarios: %s", len(scenarios), strings.Join(scenarios, " "))

	if *update {
		updateDirectBaseline(t, env, url, scenarios)
		return
	}

	baseline, err := DirectBaseline()
	if err != nil {
		t.Fatal(err)
	}
	if len(baseline) < minDirectBaseline {
		t.Fatalf("%s lists %d scenarios, want at least %d", DirectBaselineFile, len(baseline), minDirectBaseline)
	}
	for _, name := range baseline {
		if !slices.Contains(scenarios, name) {
			t.Errorf("%s lists %q, which the suite no longer has; regenerate with -update", DirectBaselineFile, name)
		}
	}

	start := time.Now()
	results, err := RunSuite(ctx, env, url)
	if err != nil {
		logResults(t, results)
		t.Fatal(err)
	}
	t.Logf("whole suite in one run took %s", time.Since(start).Round(time.Millisecond))
	if got := len(results); got != len(scenarios) {
		t.Fatalf("RunSuite returned %d results for %d scenarios", got, len(scenarios))
	}
	results, err = RetryFailed(ctx, env, url, results, directRetries)
	logResults(t, results)
	if err != nil {
		t.Fatal(err)
	}
	passed := 0
	for _, r := range results {
		if r.Passed {
			passed++
		}
	}
	t.Logf("%d/%d scenarios passed directly; with retries %s", passed, len(results), time.Since(start).Round(time.Millisecond))

	for _, name := range Regressions(baseline, results) {
		i := slices.IndexFunc(results, func(r ScenarioResult) bool { return r.Name == name })
		if i < 0 {
			t.Errorf("golden scenario %s did not run", name)
			continue
		}
		t.Errorf("golden scenario %s no longer passes: %s\n%s", name, results[i].Summary(), results[i].Output)
	}
	for _, r := range results {
		if r.Passed && !slices.Contains(baseline, r.Name) {
			t.Logf("note: %s passed but is not in %s (flaky, or newly passing: consider -update)", r.Name, DirectBaselineFile)
		}
	}
}

// logResults writes one line per scenario to the test log.
func logResults(t *testing.T, results []ScenarioResult) {
	t.Helper()
	var b strings.Builder
	for _, r := range results {
		b.WriteString(r.Summary())
		b.WriteByte('\n')
	}
	t.Logf("per-scenario results:\n%s", b.String())
}

// updateDirectBaseline runs the whole suite updateRuns times without retries and
// writes the scenarios that passed every time.
func updateDirectBaseline(t *testing.T, env *NPMEnv, url string, scenarios []string) {
	t.Helper()
	passes := map[string]int{}
	lastFailure := map[string]string{}
	for range updateRuns {
		results, err := RunSuite(t.Context(), env, url)
		logResults(t, results)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range results {
			if r.Passed {
				passes[r.Name]++
			} else {
				lastFailure[r.Name] = failureMessage(r)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `# Conformance scenarios that pass when the pinned @modelcontextprotocol/conformance
# (npm/package-lock.json) runs directly against mcp-go's examples/conformance server
# (the mcp-go version in go.mod). TestConformanceDirect fails when one of them stops
# passing; tests that run the suite through toolbridge compare against this list.
#
# Regenerate: go test ./cmd/toolbridge/internal/testenv -run TestConformanceDirect -args -update
# A scenario is listed only if it passed %d runs out of %d without retries.
#
# Not listed:
`, updateRuns, updateRuns)
	for _, name := range scenarios {
		if passes[name] < updateRuns {
			fmt.Fprintf(&b, "#   %s: passed %d/%d; %s\n", name, passes[name], updateRuns, lastFailure[name])
		}
	}
	b.WriteString("\n")
	for _, name := range scenarios {
		if passes[name] == updateRuns {
			b.WriteString(name + "\n")
		}
	}
	if err := os.WriteFile(DirectBaselineFile, []byte(b.String()), 0o644); err != nil {
		t.Fatalf("writing %s: %v", DirectBaselineFile, err)
	}
	t.Logf("wrote %s:\n%s", DirectBaselineFile, b.String())
}

// failureMessage is a short reason for a failed scenario, for the golden
// file's comments.
func failureMessage(r ScenarioResult) string {
	f := r.Failures()
	if len(f) == 0 {
		return "no failing check recorded"
	}
	msg := strings.Join(strings.Fields(f[0].ID+": "+f[0].ErrorMessage), " ")
	return truncate(msg, 110)
}
