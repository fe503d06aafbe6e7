package testenv

import (
	"bufio"
	_ "embed"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// directBaselineText is testdata/conformance-direct.txt: the scenarios that
// pass when the pinned suite runs directly against mcp-go's conformance
// server. Tests that run the suite through toolbridge compare against it.
//
//go:embed testdata/conformance-direct.txt
var directBaselineText string

// DirectBaselineFile is the golden file's path relative to this package.
const DirectBaselineFile = "testdata/conformance-direct.txt"

// DirectBaseline returns the scenarios that pass directly against mcp-go's
// conformance server, as pinned in testdata/conformance-direct.txt.
func DirectBaseline() ([]string, error) {
	names, err := ParseScenarioList(directBaselineText)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", DirectBaselineFile, err)
	}
	return names, nil
}

// scenarioName is what the suite's scenario names look like.
var scenarioName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)

// validScenarioName reports whether s looks like a suite scenario name; it
// keeps flags and junk out of the CLI's argument list.
func validScenarioName(s string) bool {
	return len(s) <= 128 && scenarioName.MatchString(s)
}

// ParseScenarioList parses a scenario list: one name per line, blank lines
// and lines starting with '#' ignored. Duplicates, malformed names and an
// empty list are errors.
func ParseScenarioList(text string) ([]string, error) {
	var names []string
	seen := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		if !validScenarioName(s) {
			return nil, fmt.Errorf("line %d: %q is not a scenario name", line, s)
		}
		if prev, dup := seen[s]; dup {
			return nil, fmt.Errorf("line %d: scenario %q already listed on line %d", line, s, prev)
		}
		seen[s] = line
		names = append(names, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading scenario list: %w", err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("reading scenario list: no scenarios")
	}
	return names, nil
}

// Regressions returns the baseline scenarios that did not pass in results,
// including those missing from results, in baseline order.
func Regressions(baseline []string, results []ScenarioResult) []string {
	var out []string
	for _, name := range baseline {
		i := slices.IndexFunc(results, func(r ScenarioResult) bool { return r.Name == name })
		if i < 0 || !results[i].Passed {
			out = append(out, name)
		}
	}
	return out
}
