package testenv

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// clientScenarioName is what the suite's client scenario names look like:
// a server scenario name, or one under a group ("auth/metadata-default").
var clientScenarioName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*(/[a-z0-9][a-z0-9_.-]*)?$`)

// RunClientConformance runs one client scenario of the suite with command
// as the client under test:
//
//	conformance client --command COMMAND --scenario NAME --output-dir DIR
//
// The suite starts the scenario's server and runs command (split at
// spaces, through a shell) with the server's URL as its last argument.
// The verdict is the suite's own: the CLI exits 0 only when the client
// exited 0 within the suite's timeout and no check failed or warned. A
// scenario that fails is a result with Passed false and a nil error; the
// error is for when the suite gave no verdict.
func RunClientConformance(ctx context.Context, env *NPMEnv, command, scenario string) (ScenarioResult, error) {
	res := ScenarioResult{Name: scenario, Attempts: 1}
	if len(scenario) > 128 || !clientScenarioName.MatchString(scenario) {
		return res, fmt.Errorf("running conformance client scenario %q: not a scenario name", scenario)
	}
	bin, err := env.BinPath(BinConformance)
	if err != nil {
		return res, err
	}
	outDir, err := os.MkdirTemp("", "toolbridge-conformance-client-")
	if err != nil {
		return res, fmt.Errorf("creating conformance output directory: %w", err)
	}
	defer os.RemoveAll(outDir)

	ctx, cancel := context.WithTimeout(ctx, ScenarioTimeout)
	defer cancel()
	cmd := commandContext(ctx, bin, "client", "--command", command, "--scenario", scenario, "--output-dir", outDir)
	out, runErr := cmd.CombinedOutput()
	res.Output = stripANSI(string(out))
	if ctx.Err() != nil {
		return res, fmt.Errorf("running conformance client scenario %s: %w (after %s)\n%s", scenario, ctx.Err(), ScenarioTimeout, res.Output)
	}
	var exitErr *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exitErr) {
		return res, fmt.Errorf("running conformance client scenario %s: %w\n%s", scenario, runErr, res.Output)
	}
	checks, err := readClientChecks(outDir)
	if err != nil {
		return res, fmt.Errorf("reading conformance client scenario %s results (exit: %v): %w\n%s", scenario, runErr, err, res.Output)
	}
	res.Checks = checks
	res.Passed = runErr == nil && len(res.Failures()) == 0
	return res, nil
}

// readClientChecks loads the one checks.json a client run writes, under
// DIR/NAME-<timestamp>/ (nested for a grouped name such as auth/x).
func readClientChecks(outDir string) ([]Check, error) {
	var found []string
	err := filepath.WalkDir(outDir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "checks.json" {
			found = append(found, path)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("finding checks.json under %s: %w", outDir, err)
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("finding checks.json under %s: want exactly one, found %d (%s)", outDir, len(found), strings.Join(found, ", "))
	}
	data, err := os.ReadFile(found[0])
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", found[0], err)
	}
	return parseChecks(data)
}
