package testenv

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Check statuses the conformance suite reports.
const (
	StatusSuccess = "SUCCESS"
	StatusFailure = "FAILURE"
	StatusWarning = "WARNING"
	StatusInfo    = "INFO"
)

// ScenarioTimeout bounds one scenario run, so a hanging server under test
// fails that scenario instead of the whole test binary's -timeout.
const ScenarioTimeout = 2 * time.Minute

// Check is one entry of a scenario's checks.json.
type Check struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	Status       string          `json:"status"`
	ErrorMessage string          `json:"errorMessage,omitempty"`
	Details      json.RawMessage `json:"details,omitempty"`
}

// ScenarioResult is the outcome of one conformance scenario.
type ScenarioResult struct {
	// Name is the scenario, e.g. "tools-call-simple-text".
	Name string
	// Passed is the suite's own verdict: the CLI exited 0 and no check failed.
	// WARNING and INFO checks do not fail a scenario.
	Passed bool
	// Checks are the scenario's checks in the order the suite recorded them.
	Checks []Check
	// Output is the CLI's stdout and stderr, colour codes removed.
	Output string
	// Attempts is how many runs it took (more than 1 only with retries).
	Attempts int
}

// Failures returns the checks whose status is FAILURE.
func (r ScenarioResult) Failures() []Check {
	var out []Check
	for _, c := range r.Checks {
		if c.Status == StatusFailure {
			out = append(out, c)
		}
	}
	return out
}

// Summary is a one-line verdict for logs: "PASS name (n checks)" or the
// first failure's message.
func (r ScenarioResult) Summary() string {
	counts := map[string]int{}
	for _, c := range r.Checks {
		counts[c.Status]++
	}
	tally := fmt.Sprintf("%d ok, %d failed, %d warnings, %d info; attempts %d",
		counts[StatusSuccess], counts[StatusFailure], counts[StatusWarning], counts[StatusInfo], r.Attempts)
	if r.Passed {
		return fmt.Sprintf("PASS %-32s (%s)", r.Name, tally)
	}
	msg := "no failing check recorded"
	if f := r.Failures(); len(f) > 0 {
		msg = f[0].ID + ": " + f[0].ErrorMessage
	}
	return fmt.Sprintf("FAIL %-32s (%s) %s", r.Name, tally, msg)
}

// ListScenarios returns every server scenario the pinned suite knows
// (`conformance list --server`), pending ones included, in the suite's order.
func ListScenarios(ctx context.Context, env *NPMEnv) ([]string, error) {
	bin, err := env.BinPath(BinConformance)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, ScenarioTimeout)
	defer cancel()
	out, err := commandContext(ctx, bin, "list", "--server").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("running conformance list --server: %w\n%s", err, out)
	}
	names, err := parseScenarioListing(string(out))
	if err != nil {
		return nil, fmt.Errorf("parsing conformance list --server: %w\n%s", err, out)
	}
	return names, nil
}

// parseScenarioListing reads the "  - name" lines of `conformance list`.
func parseScenarioListing(out string) ([]string, error) {
	var names []string
	sc := bufio.NewScanner(strings.NewReader(stripANSI(out)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		name, ok := strings.CutPrefix(line, "- ")
		if !ok {
			continue
		}
		name = strings.TrimSpace(name)
		if !validScenarioName(name) {
			return nil, fmt.Errorf("reading scenario %q: not a scenario name", name)
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		return nil, errors.New("reading scenarios: none listed")
	}
	return names, nil
}

// RunConformance runs one scenario of the suite against the MCP server at url
// (streamable HTTP):
//
//	conformance server --url URL --scenario NAME --output-dir DIR
//
// and reads DIR/server-NAME-<timestamp>/checks.json. A scenario that fails
// is a result with Passed false and a nil error; the error is for when the
// suite gave no verdict (it could not start, crashed, or wrote no checks).
func RunConformance(ctx context.Context, env *NPMEnv, url, scenario string) (ScenarioResult, error) {
	res := ScenarioResult{Name: scenario, Attempts: 1}
	if !validScenarioName(scenario) {
		return res, fmt.Errorf("running conformance scenario %q: not a scenario name", scenario)
	}
	bin, err := env.BinPath(BinConformance)
	if err != nil {
		return res, err
	}
	outDir, err := os.MkdirTemp("", "toolbridge-conformance-")
	if err != nil {
		return res, fmt.Errorf("creating conformance output directory: %w", err)
	}
	defer os.RemoveAll(outDir)

	ctx, cancel := context.WithTimeout(ctx, ScenarioTimeout)
	defer cancel()
	cmd := commandContext(ctx, bin, "server", "--url", url, "--scenario", scenario, "--output-dir", outDir)
	out, runErr := cmd.CombinedOutput()
	res.Output = stripANSI(string(out))
	if ctx.Err() != nil {
		return res, fmt.Errorf("running conformance scenario %s: %w (after %s)\n%s", scenario, ctx.Err(), ScenarioTimeout, res.Output)
	}
	var exitErr *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exitErr) {
		return res, fmt.Errorf("running conformance scenario %s: %w\n%s", scenario, runErr, res.Output)
	}
	checks, err := readChecks(outDir, scenario)
	if err != nil {
		return res, fmt.Errorf("reading conformance scenario %s results (exit: %v): %w\n%s", scenario, runErr, err, res.Output)
	}
	res.Checks = checks
	failed := len(res.Failures()) > 0
	if runErr != nil && !failed {
		return res, fmt.Errorf("running conformance scenario %s: %w with no failing check\n%s", scenario, runErr, res.Output)
	}
	res.Passed = runErr == nil && !failed
	return res, nil
}

// readChecks loads the checks.json the CLI writes under
// DIR/server-SCENARIO-<timestamp>/.
func readChecks(outDir, scenario string) ([]Check, error) {
	dirs, err := scenarioDirs(outDir)
	if err != nil {
		return nil, err
	}
	dir, ok := dirs[scenario]
	if !ok || len(dirs) != 1 {
		return nil, fmt.Errorf("finding checks.json under %s: want exactly one result directory, for %s; found %d", outDir, scenario, len(dirs))
	}
	data, err := os.ReadFile(filepath.Join(dir, "checks.json"))
	if err != nil {
		return nil, fmt.Errorf("reading checks.json of %s: %w", scenario, err)
	}
	return parseChecks(data)
}

// parseChecks decodes a checks.json array and rejects entries without a
// known status, which would otherwise count as passing.
func parseChecks(data []byte) ([]Check, error) {
	var checks []Check
	if err := json.Unmarshal(data, &checks); err != nil {
		return nil, fmt.Errorf("decoding checks.json: %w", err)
	}
	for i, c := range checks {
		switch c.Status {
		case StatusSuccess, StatusFailure, StatusWarning, StatusInfo:
		default:
			return nil, fmt.Errorf("decoding checks.json: check %d (%q) has unknown status %q", i, c.ID, c.Status)
		}
	}
	return checks, nil
}

// RunScenarios runs the scenarios one after another (they share the server
// under test) and reruns a failing one up to retries more times, keeping the
// last result. It stops at the first scenario the suite gives no verdict for
// and returns the results so far with that error.
func RunScenarios(ctx context.Context, env *NPMEnv, url string, scenarios []string, retries int) ([]ScenarioResult, error) {
	results := make([]ScenarioResult, 0, len(scenarios))
	for _, name := range scenarios {
		var res ScenarioResult
		for attempt := 1; attempt <= retries+1; attempt++ {
			r, err := RunConformance(ctx, env, url, name)
			r.Attempts = attempt
			if err != nil {
				return append(results, r), err
			}
			res = r
			if res.Passed {
				break
			}
		}
		results = append(results, res)
	}
	return results, nil
}
