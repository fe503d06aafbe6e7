package testenv

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseScenarioListing(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		want    []string
		wantErr bool
	}{
		{
			name: "suite output",
			out:  "Server scenarios (test against a server):\n  - server-initialize\n  - ping\n",
			want: []string{"server-initialize", "ping"},
		},
		{
			name: "colour codes and npm warning",
			out:  "npm warn something\nServer scenarios:\n  - \x1b[32mtools-list\x1b[0m\n",
			want: []string{"tools-list"},
		},
		{name: "nothing listed", out: "Server scenarios (test against a server):\n", wantErr: true},
		{name: "empty", out: "", wantErr: true},
		{name: "junk name", out: "  - --url http://x\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseScenarioListing(tt.out)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("parseScenarioListing = %v, want an error", got)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("parseScenarioListing = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestParseChecks(t *testing.T) {
	tests := []struct {
		name     string
		json     string
		statuses []string
		wantErr  bool
	}{
		{
			name:     "suite format",
			json:     `[{"id":"a","name":"A","description":"d","status":"SUCCESS","timestamp":"t","specReferences":[{"id":"x"}]},{"id":"b","status":"FAILURE","errorMessage":"boom","details":{"n":2}}]`,
			statuses: []string{StatusSuccess, StatusFailure},
		},
		{name: "info only", json: `[{"id":"a","status":"INFO"},{"id":"b","status":"WARNING"}]`, statuses: []string{StatusInfo, StatusWarning}},
		{name: "empty array", json: `[]`, statuses: nil},
		{name: "unknown status", json: `[{"id":"a","status":"PASSED"}]`, wantErr: true},
		{name: "missing status", json: `[{"id":"a"}]`, wantErr: true},
		{name: "not an array", json: `{"id":"a"}`, wantErr: true},
		{name: "truncated", json: `[{"id":"a","status":"SUCC`, wantErr: true},
		{name: "empty input", json: ``, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checks, err := parseChecks([]byte(tt.json))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("parseChecks = %+v, want an error", checks)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range checks {
				got = append(got, c.Status)
			}
			if !slices.Equal(got, tt.statuses) {
				t.Fatalf("statuses = %v, want %v", got, tt.statuses)
			}
		})
	}
}

func TestReadChecksFindsTheScenarioDirectory(t *testing.T) {
	dir := t.TempDir()
	checks := []Check{{ID: "ping", Status: StatusSuccess}}
	data, err := json.Marshal(checks)
	if err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "server-ping-2026-01-01T00-00-00-000Z")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "checks.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readChecks(dir, "ping")
	if err != nil || len(got) != 1 || got[0].ID != "ping" {
		t.Fatalf("readChecks = %+v, %v", got, err)
	}
	if _, err := readChecks(dir, "tools-list"); err == nil {
		t.Error("readChecks for a scenario with no directory: want an error")
	}
}

// TestReadClientChecks: a client run writes one checks.json, under
// NAME-<timestamp>/, nested for a grouped name; none or two is an error.
func TestReadClientChecks(t *testing.T) {
	data, err := json.Marshal([]Check{{ID: "mcp-client-initialization", Status: StatusSuccess}})
	if err != nil {
		t.Fatal(err)
	}
	write := func(dir, sub string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, sub, "checks.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	flat, nested, none, two := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	write(flat, "initialize-2026-01-01T00-00-00-000Z")
	write(nested, "auth/metadata-default-2026-01-01T00-00-00-000Z")
	write(two, "a-2026-01-01T00-00-00-000Z")
	write(two, "b-2026-01-01T00-00-00-000Z")
	for _, dir := range []string{flat, nested} {
		if got, err := readClientChecks(dir); err != nil || len(got) != 1 || got[0].Status != StatusSuccess {
			t.Errorf("readClientChecks(%s) = %+v, %v", dir, got, err)
		}
	}
	for _, dir := range []string{none, two} {
		if _, err := readClientChecks(dir); err == nil {
			t.Errorf("readClientChecks(%s): want an error", dir)
		}
	}
	if _, err := RunClientConformance(context.Background(), nil, "true", "--scenario=x"); err == nil || !strings.Contains(err.Error(), "not a scenario name") {
		t.Errorf("RunClientConformance with a flag as the scenario: %v", err)
	}
}

func TestScenarioResultSummaryAndFailures(t *testing.T) {
	pass := ScenarioResult{Name: "ping", Passed: true, Attempts: 1, Checks: []Check{{ID: "ping", Status: StatusSuccess}, {ID: "x", Status: StatusInfo}}}
	fail := ScenarioResult{Name: "tools-list", Attempts: 2, Checks: []Check{{ID: "a", Status: StatusSuccess}, {ID: "tools-list", Status: StatusFailure, ErrorMessage: "no tools"}}}
	if len(pass.Failures()) != 0 {
		t.Errorf("pass.Failures() = %v", pass.Failures())
	}
	if f := fail.Failures(); len(f) != 1 || f[0].ID != "tools-list" {
		t.Errorf("fail.Failures() = %v", f)
	}
	if s := pass.Summary(); !strings.HasPrefix(s, "PASS ping") || !strings.Contains(s, "1 ok, 0 failed") {
		t.Errorf("pass.Summary() = %q", s)
	}
	if s := fail.Summary(); !strings.HasPrefix(s, "FAIL tools-list") || !strings.Contains(s, "no tools") || !strings.Contains(s, "attempts 2") {
		t.Errorf("fail.Summary() = %q", s)
	}
}

func TestParseScenarioList(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    []string
		wantErr string
	}{
		{name: "comments and blanks", text: "# header\n\nping\n  tools-list  \n# tail\n", want: []string{"ping", "tools-list"}},
		{name: "duplicate", text: "ping\nping\n", wantErr: "already listed on line 1"},
		{name: "space inside", text: "tools list\n", wantErr: "not a scenario name"},
		{name: "flag", text: "--url\n", wantErr: "not a scenario name"},
		{name: "upper case", text: "Ping\n", wantErr: "not a scenario name"},
		{name: "only comments", text: "# nothing\n", wantErr: "no scenarios"},
		{name: "empty", text: "", wantErr: "no scenarios"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseScenarioList(tt.text)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseScenarioList = %v, %v; want error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("ParseScenarioList = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestDirectBaselineParses(t *testing.T) {
	names, err := DirectBaseline()
	if err != nil {
		t.Fatal(err)
	}
	// The direct run passes most of the suite; a short list means the golden
	// file was truncated, and a gateway compared against it would prove little.
	if len(names) < minDirectBaseline {
		t.Fatalf("%s lists %d scenarios, want at least %d", DirectBaselineFile, len(names), minDirectBaseline)
	}
}

func TestRegressions(t *testing.T) {
	results := []ScenarioResult{
		{Name: "ping", Passed: true},
		{Name: "tools-list", Passed: false},
		{Name: "extra", Passed: false},
	}
	tests := []struct {
		name     string
		baseline []string
		want     []string
	}{
		{name: "all pass", baseline: []string{"ping"}, want: nil},
		{name: "one fails", baseline: []string{"ping", "tools-list"}, want: []string{"tools-list"}},
		{name: "missing counts as regression", baseline: []string{"ping", "prompts-list"}, want: []string{"prompts-list"}},
		{name: "failures outside the baseline are ignored", baseline: []string{"ping"}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Regressions(tt.baseline, results); !slices.Equal(got, tt.want) {
				t.Fatalf("Regressions = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNodeMajor(t *testing.T) {
	tests := []struct {
		in      string
		want    int
		wantErr bool
	}{
		{in: "v20.20.2\n", want: 20},
		{in: "v22.1.0", want: 22},
		{in: "18.0.0", want: 18},
		{in: "", wantErr: true},
		{in: "vX.1", wantErr: true},
	}
	for _, tt := range tests {
		got, err := nodeMajor(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("nodeMajor(%q) = %d, %v; want %d (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestModuleVersionAndSafeName(t *testing.T) {
	tests := []struct{ module, want string }{
		{"github.com/mark3labs/mcp-go@v1.2.1", "v1.2.1"},
		{"github.com/mark3labs/mcp-go@v1.2.1 => ../mcp-go@ /src/mcp-go", "v1.2.1"},
		{"github.com/mark3labs/mcp-go@v0.0.0-2026+dirty/x", "v0.0.0-2026_dirty_x"},
		{"github.com/mark3labs/mcp-go", "unknown"},
	}
	for _, tt := range tests {
		if got := safeName(moduleVersion(tt.module)); got != tt.want {
			t.Errorf("safeName(moduleVersion(%q)) = %q, want %q", tt.module, got, tt.want)
		}
	}
}

// TestPinnedPackagesAreExact guards reproducibility: package.json pins exact
// versions and the lockfile agrees with it.
func TestPinnedPackagesAreExact(t *testing.T) {
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(packageJSON, &pkg); err != nil {
		t.Fatalf("decoding npm/package.json: %v", err)
	}
	var lock struct {
		LockfileVersion int `json:"lockfileVersion"`
		Packages        map[string]struct {
			Version      string            `json:"version"`
			Integrity    string            `json:"integrity"`
			Dependencies map[string]string `json:"dependencies"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(packageLockJSON, &lock); err != nil {
		t.Fatalf("decoding npm/package-lock.json: %v", err)
	}
	if lock.LockfileVersion < 2 {
		t.Errorf("lockfileVersion = %d, want >= 2", lock.LockfileVersion)
	}
	for _, name := range []string{"@modelcontextprotocol/conformance", "@modelcontextprotocol/server-everything", "@modelcontextprotocol/server-filesystem", "@modelcontextprotocol/server-memory"} {
		v, ok := pkg.Dependencies[name]
		if !ok {
			t.Errorf("npm/package.json does not pin %s", name)
			continue
		}
		if strings.ContainsAny(v, "^~<>=*x ") {
			t.Errorf("%s is pinned as %q, want an exact version", name, v)
		}
		if root := lock.Packages[""].Dependencies[name]; root != v {
			t.Errorf("lockfile root has %s@%q, package.json %q: run npm install --package-lock-only in npm/", name, root, v)
		}
		entry := lock.Packages["node_modules/"+name]
		if entry.Version != v || entry.Integrity == "" {
			t.Errorf("lockfile has %s@%q (integrity %q), want %q with an integrity hash", name, entry.Version, entry.Integrity, v)
		}
	}
	if got := lock.Packages["node_modules/@modelcontextprotocol/conformance"].Version; got != "0.1.10" {
		t.Errorf("conformance suite is %q; 0.1.10 is the newest that runs on Node 20 and the golden list was made with it", got)
	}
}
