package testenv

import (
	"slices"
	"strings"
	"testing"
)

// FuzzParsers feeds arbitrary text to every parser of CLI and /proc output:
// none may panic, and what they accept must be consistent.
func FuzzParsers(f *testing.F) {
	f.Add(suiteOutput)
	f.Add("Server scenarios (test against a server):\n  - server-initialize\n  - ping\n")
	f.Add("1234 (node (x)) S 99 1234 1234 0 -1")
	f.Add("# header\nping\n\ntools-list\n")
	f.Add("=== SUMMARY ===\n✓ a: 1 passed, 0 failed\n✗ a: 0 passed, 1 failed\n")
	f.Add(`{"plan":["a","b"]}` + "\n" + `{"step":"a","ok":true}` + "\n" + `{"step":"b","ok":false,"error":"x"}` + "\n" + `{"done":true,"failed":1}`)
	f.Fuzz(func(t *testing.T, s string) {
		if _, _, err := parseProcStat(s); err == nil && strings.IndexByte(s, '(') < 1 {
			t.Fatalf("parseProcStat accepted %q without a (comm) field", s)
		}
		if names, err := ParseScenarioList(s); err == nil {
			seen := map[string]bool{}
			for _, n := range names {
				if !validScenarioName(n) || seen[n] {
					t.Fatalf("ParseScenarioList(%q) returned bad or duplicate name %q", s, n)
				}
				seen[n] = true
			}
		}
		if names, err := parseScenarioListing(s); err == nil {
			for _, n := range names {
				if !validScenarioName(n) {
					t.Fatalf("parseScenarioListing(%q) returned bad name %q", s, n)
				}
			}
		}
		_, _ = parseSummary(s)
		for name, section := range splitSections(s) {
			if !strings.Contains(s, section) || !strings.Contains(section, name) {
				t.Fatalf("splitSections(%q): section for %q is not part of the input", s, name)
			}
		}
		_, _ = parseChecks([]byte(s))
		if r, err := ParseTSOutput(s); err == nil {
			for _, step := range r.Steps {
				if !slices.Contains(r.Plan, step.Name) {
					t.Fatalf("ParseTSOutput(%q) accepted step %q outside its plan %v", s, step.Name, r.Plan)
				}
			}
			if len(r.Problems()) == 0 && (len(r.Plan) == 0 || !r.Done) {
				t.Fatalf("ParseTSOutput(%q): an unfinished or planless run has no problems", s)
			}
		}
	})
}
