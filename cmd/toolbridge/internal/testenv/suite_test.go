package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// suiteOutput mimics `conformance server --suite all` (0.1.10) console
// output: one marker per scenario, then the summary.
const suiteOutput = `Running all suite (3 scenarios) against http://127.0.0.1:1/mcp


=== Running scenario: ping ===
Running client scenario 'ping' against server: http://127.0.0.1:1/mcp
Results saved to /tmp/x/server-ping-2026-11-22T06-12-15-985Z

=== Running scenario: tools-list ===
Running client scenario 'tools-list' against server: http://127.0.0.1:1/mcp
Results saved to /tmp/x/server-tools-list-2026-11-22T06-12-16-005Z

=== Running scenario: tools-call-with-progress ===
Failed to run scenario tools-call-with-progress: Error: connect ECONNREFUSED 127.0.0.1:1


=== SUMMARY ===
✓ ping: 1 passed, 0 failed
✗ tools-list: 0 passed, 1 failed
✗ tools-call-with-progress: 0 passed, 1 failed

Total: 1 passed, 2 failed
`

// writeResultDir creates a per-scenario result directory like the CLI does.
func writeResultDir(t *testing.T, outDir, scenario, checksJSON string) {
	t.Helper()
	dir := filepath.Join(outDir, "server-"+scenario+"-2026-11-22T06-12-15-985Z")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "checks.json"), []byte(checksJSON), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCollectSuite(t *testing.T) {
	names := []string{"ping", "tools-list", "tools-call-with-progress"}
	okDirs := func(t *testing.T, dir string) {
		writeResultDir(t, dir, "ping", `[{"id":"ping","status":"SUCCESS"}]`)
		writeResultDir(t, dir, "tools-list", `[{"id":"tools-list","status":"FAILURE","errorMessage":"no tools"}]`)
	}
	tests := []struct {
		name    string
		names   []string
		output  string
		dirs    func(t *testing.T, dir string)
		wantErr string
	}{
		{name: "real format", names: names, output: suiteOutput, dirs: okDirs},
		{name: "no summary", names: names, output: strings.Split(suiteOutput, "=== SUMMARY")[0], dirs: okDirs, wantErr: "printed none"},
		{name: "scenario missing from summary", names: append(names, "prompts-list"), output: suiteOutput, dirs: okDirs, wantErr: "prompts-list: missing from the summary"},
		{
			name: "summary disagrees with checks", names: names, output: suiteOutput,
			dirs: func(t *testing.T, dir string) {
				writeResultDir(t, dir, "ping", `[{"id":"ping","status":"FAILURE"}]`)
				writeResultDir(t, dir, "tools-list", `[{"id":"tools-list","status":"FAILURE"}]`)
			},
			wantErr: "summary says true",
		},
		{
			name: "no checks and no failure message", names: names,
			output: strings.Replace(suiteOutput, "Failed to run scenario tools-call-with-progress:", "", 1), dirs: okDirs,
			wantErr: "no checks.json and no failure message",
		},
		{
			name: "broken checks.json", names: names, output: suiteOutput,
			dirs: func(t *testing.T, dir string) {
				writeResultDir(t, dir, "ping", `[{"id":"ping","status":`)
				writeResultDir(t, dir, "tools-list", `[]`)
			},
			wantErr: "decoding checks.json",
		},
		{
			name: "summary lists an unknown scenario", names: names[:2], output: suiteOutput, dirs: okDirs,
			wantErr: "summary lists 3 scenarios, the suite lists 2",
		},
		{
			name: "contradictory summary line", names: names,
			output: strings.Replace(suiteOutput, "✓ ping: 1 passed, 0 failed", "✓ ping: 1 passed, 2 failed", 1), dirs: okDirs,
			wantErr: "mark and failure count disagree",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.dirs(t, dir)
			results, err := collectSuite(tt.names, dir, tt.output)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("collectSuite error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(results) != 3 {
				t.Fatalf("got %d results, want 3", len(results))
			}
			ping, list, progress := results[0], results[1], results[2]
			if ping.Name != "ping" || !ping.Passed || len(ping.Checks) != 1 {
				t.Errorf("ping = %+v, want passed with one check", ping)
			}
			if !strings.Contains(ping.Output, "Running client scenario 'ping'") || strings.Contains(ping.Output, "tools-list") {
				t.Errorf("ping output = %q, want only its own section", ping.Output)
			}
			if list.Passed || len(list.Failures()) != 1 {
				t.Errorf("tools-list = %+v, want failed", list)
			}
			if progress.Passed || len(progress.Failures()) != 1 || !strings.Contains(progress.Failures()[0].ErrorMessage, "ECONNREFUSED") {
				t.Errorf("tools-call-with-progress = %+v, want a failure carrying the error", progress)
			}
			if strings.Contains(progress.Output, "SUMMARY") {
				t.Errorf("last section runs into the summary: %q", progress.Output)
			}
		})
	}
}

func TestScenarioDirs(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{
		"server-tools-call-with-progress-2026-11-22T06-12-16-406Z",
		"server-resources-unsubscribe-2026-11-22T06-12-16-638Z",
		"not-a-result",
		"server-ping-yesterday",
	} {
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dirs, err := scenarioDirs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) != 2 || dirs["tools-call-with-progress"] == "" || dirs["resources-unsubscribe"] == "" {
		t.Fatalf("scenarioDirs = %v, want exactly the two result directories", dirs)
	}
	if err := os.Mkdir(filepath.Join(dir, "server-resources-unsubscribe-2026-11-22T07-00-00-000Z"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := scenarioDirs(dir); err == nil {
		t.Error("two directories for one scenario: want an error")
	}
}
