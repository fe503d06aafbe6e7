package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// SuiteTimeout bounds one run of the whole suite.
const SuiteTimeout = 10 * time.Minute

// resultDirName matches the per-scenario directories the CLI writes under
// --output-dir: "server-<scenario>-<ISO timestamp with : and . as ->".
var resultDirName = regexp.MustCompile(`^server-(.+)-(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z)$`)

// scenarioMarker starts each scenario's section of a suite run's output.
var scenarioMarker = regexp.MustCompile(`(?m)^=== Running scenario: (\S+) ===$`)

// summaryLine is one verdict of the "=== SUMMARY ===" block.
var summaryLine = regexp.MustCompile(`(?m)^([✓✗]) (\S+): (\d+) passed, (\d+) failed$`)

// RunSuite runs every server scenario of the suite in one CLI process, which
// is much cheaper than one Node start per scenario:
//
//	conformance server --url URL --suite all --output-dir DIR
//
// Each scenario's verdict is read from its checks.json and cross-checked
// against the CLI's summary line; a disagreement, or a listed scenario the
// run did not report, is an error. Results follow [ListScenarios]' order.
func RunSuite(ctx context.Context, env *NPMEnv, url string) ([]ScenarioResult, error) {
	names, err := ListScenarios(ctx, env)
	if err != nil {
		return nil, err
	}
	bin, err := env.BinPath(BinConformance)
	if err != nil {
		return nil, err
	}
	outDir, err := os.MkdirTemp("", "toolbridge-conformance-suite-")
	if err != nil {
		return nil, fmt.Errorf("creating conformance output directory: %w", err)
	}
	defer os.RemoveAll(outDir)

	ctx, cancel := context.WithTimeout(ctx, SuiteTimeout)
	defer cancel()
	out, runErr := commandContext(ctx, bin, "server", "--url", url, "--suite", "all", "--output-dir", outDir).CombinedOutput()
	output := stripANSI(string(out))
	if ctx.Err() != nil {
		return nil, fmt.Errorf("running the conformance suite: %w (after %s)\n%s", ctx.Err(), SuiteTimeout, output)
	}
	var exitErr *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exitErr) {
		return nil, fmt.Errorf("running the conformance suite: %w\n%s", runErr, output)
	}
	results, err := collectSuite(names, outDir, output)
	if err != nil {
		return results, fmt.Errorf("reading the conformance suite results (exit: %v): %w\n%s", runErr, err, output)
	}
	anyFailed := false
	for _, r := range results {
		anyFailed = anyFailed || !r.Passed
	}
	if (runErr != nil) != anyFailed {
		return results, fmt.Errorf("reading the conformance suite results: exit %v disagrees with %d scenario verdicts\n%s", runErr, len(results), output)
	}
	return results, nil
}

// collectSuite turns a suite run's output directory and console output into
// one result per listed scenario.
func collectSuite(names []string, outDir, output string) ([]ScenarioResult, error) {
	dirs, err := scenarioDirs(outDir)
	if err != nil {
		return nil, err
	}
	sections := splitSections(output)
	summary, err := parseSummary(output)
	if err != nil {
		return nil, err
	}
	results := make([]ScenarioResult, 0, len(names))
	for _, name := range names {
		res := ScenarioResult{Name: name, Attempts: 1, Output: sections[name]}
		passed, reported := summary[name]
		if !reported {
			return results, fmt.Errorf("scenario %s: missing from the summary", name)
		}
		switch dir, ok := dirs[name]; {
		case ok:
			data, err := os.ReadFile(filepath.Join(dir, "checks.json"))
			if err != nil {
				return results, fmt.Errorf("scenario %s: %w", name, err)
			}
			if res.Checks, err = parseChecks(data); err != nil {
				return results, fmt.Errorf("scenario %s: %w", name, err)
			}
		case strings.Contains(output, "Failed to run scenario "+name+":"):
			// The scenario threw before writing checks.json; the CLI counts
			// that as one failed check, and so do we.
			res.Checks = []Check{{ID: name, Name: name, Description: "Failed to run scenario", Status: StatusFailure,
				ErrorMessage: truncate(strings.TrimSpace(res.Output), 500)}}
		default:
			return results, fmt.Errorf("scenario %s: no checks.json and no failure message", name)
		}
		res.Passed = len(res.Failures()) == 0
		if res.Passed != passed {
			return results, fmt.Errorf("scenario %s: checks.json says passed=%v, the summary says %v", name, res.Passed, passed)
		}
		results = append(results, res)
	}
	if len(summary) != len(names) {
		return results, fmt.Errorf("summary lists %d scenarios, the suite lists %d", len(summary), len(names))
	}
	return results, nil
}

// scenarioDirs maps scenario names to their result directories under outDir.
func scenarioDirs(outDir string) (map[string]string, error) {
	entries, err := os.ReadDir(outDir)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", outDir, err)
	}
	dirs := map[string]string{}
	for _, e := range entries {
		m := resultDirName.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		if _, dup := dirs[m[1]]; dup {
			return nil, fmt.Errorf("reading %s: scenario %s has two result directories", outDir, m[1])
		}
		dirs[m[1]] = filepath.Join(outDir, e.Name())
	}
	return dirs, nil
}

// splitSections cuts a suite run's output into each scenario's part.
func splitSections(output string) map[string]string {
	sections := map[string]string{}
	idx := scenarioMarker.FindAllStringSubmatchIndex(output, -1)
	for i, m := range idx {
		end := len(output)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		} else if s := strings.Index(output[m[0]:], "=== SUMMARY ==="); s >= 0 {
			end = m[0] + s
		}
		sections[output[m[2]:m[3]]] = output[m[0]:end]
	}
	return sections
}

// parseSummary reads the verdicts of the "=== SUMMARY ===" block.
func parseSummary(output string) (map[string]bool, error) {
	i := strings.LastIndex(output, "=== SUMMARY ===")
	if i < 0 {
		return nil, errors.New("finding the summary: the suite printed none")
	}
	verdicts := map[string]bool{}
	for _, m := range summaryLine.FindAllStringSubmatch(output[i:], -1) {
		failed, err := strconv.Atoi(m[4])
		if err != nil {
			return nil, fmt.Errorf("parsing summary line %q: %w", m[0], err)
		}
		passed := m[1] == "✓"
		if passed != (failed == 0) {
			return nil, fmt.Errorf("parsing summary line %q: mark and failure count disagree", m[0])
		}
		if _, dup := verdicts[m[2]]; dup {
			return nil, fmt.Errorf("parsing summary: scenario %s listed twice", m[2])
		}
		verdicts[m[2]] = passed
	}
	if len(verdicts) == 0 {
		return nil, errors.New("parsing the summary: no verdict lines")
	}
	return verdicts, nil
}

// RetryFailed reruns each failed scenario of results on its own, up to
// retries times, and keeps the last verdict (Attempts counts all runs).
func RetryFailed(ctx context.Context, env *NPMEnv, url string, results []ScenarioResult, retries int) ([]ScenarioResult, error) {
	out := make([]ScenarioResult, len(results))
	copy(out, results)
	for i := range out {
		for n := 0; n < retries && !out[i].Passed; n++ {
			r, err := RunConformance(ctx, env, url, out[i].Name)
			if err != nil {
				return out, err
			}
			r.Attempts = out[i].Attempts + 1
			out[i] = r
		}
	}
	return out, nil
}
