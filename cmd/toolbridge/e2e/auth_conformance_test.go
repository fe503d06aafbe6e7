package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
)

// authScenarios are the official suite's 17 auth/* client scenarios in
// @modelcontextprotocol/conformance 0.1.10.
var authScenarios = []string{
	"auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
	"auth/basic-cimd",
	"auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback",
	"auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported", "auth/scope-omitted-when-undefined",
	"auth/scope-step-up", "auth/scope-retry-limit",
	"auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
	"auth/client-credentials-jwt", "auth/client-credentials-basic",
}

// issuedToken matches the access tokens the suite's servers issue.
var issuedToken = regexp.MustCompile(`(test|cc)-token-\d{6,}`)

// summaryLine is one scenario's line in the suite summary.
var summaryLine = regexp.MustCompile(`(?m)^([✓✗]) (auth/[a-z0-9-]+): (\d+) passed, (\d+) failed`)

// TestConformanceAuthSuite runs the official conformance suite's auth
// scenarios with toolbridge as the client:
//
//	conformance client --command "examples/conformance/client --toolbridge BIN" --suite auth
//
// where the wrapper drives the toolbridge binary through `auth login` and
// `call`, playing the browser. Every
// scenario must pass, and no token, code, verifier, client secret or key
// the run exchanged may appear in anything toolbridge or the wrapper
// printed.
func TestConformanceAuthSuite(t *testing.T) {
	env := testenv.NPM(t)
	dir := t.TempDir()
	command := conformanceClient.Path(t) + " --toolbridge " + binary
	outDir := filepath.Join(dir, "results")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.Bin(testenv.BinConformance), "client",
		"--command", command, "--suite", "auth", "--timeout", "180000", "--output-dir", outDir)
	// No OS keyring in tests (DBUS pointed nowhere), a state directory of
	// the test's own, and the toolbridge under test.
	cmd.Env = append(os.Environ(), "DBUS_SESSION_BUS_ADDRESS=unix:path="+filepath.Join(dir, "no-bus"),
		"XDG_STATE_HOME="+filepath.Join(dir, "xdg-state"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	testenv.SetProcessGroup(cmd)
	runErr := cmd.Run()
	summary := stdout.String()
	t.Logf("conformance client --suite auth (exit %v):\n%s", runErr, summary)

	got := map[string]bool{}
	for _, m := range summaryLine.FindAllStringSubmatch(summary, -1) {
		got[m[2]] = m[1] == "✓" && m[4] == "0"
	}
	for _, name := range authScenarios {
		pass, ran := got[name]
		switch {
		case !ran:
			t.Errorf("%s: not in the suite's summary", name)
		case !pass:
			t.Errorf("%s: failed\n%s", name, scenarioOutput(t, outDir, name))
		}
	}
	if len(got) != len(authScenarios) {
		names := make([]string, 0, len(got))
		for n := range got {
			names = append(names, n)
		}
		sort.Strings(names)
		t.Errorf("the suite ran %d auth scenarios, want %d: %v", len(got), len(authScenarios), names)
	}

	// Secrets: everything the run exchanged, as the suite's servers logged
	// it, must be absent from every output of toolbridge and the wrapper.
	secrets := exchangedSecrets(t, outDir)
	t.Logf("looking for %d secrets the run exchanged in the outputs", len(secrets))
	if len(secrets) < len(authScenarios) {
		t.Errorf("found only %d exchanged secrets to look for; the check would prove little", len(secrets))
	}
	outputs := map[string]string{"suite stdout": summary, "suite stderr": withoutEchoedContext(stderr.String())}
	files, _ := filepath.Glob(filepath.Join(outDir, "auth", "*", "std*.txt"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		outputs[f] = string(b)
	}
	if len(files) < 2*len(authScenarios) {
		t.Errorf("found %d output files, want stdout and stderr of %d scenarios", len(files), len(authScenarios))
	}
	for where, text := range outputs {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s contains a secret the run exchanged (%d chars, starting %.4q)", where, len(s), s)
			}
		}
		// The suite's access tokens are test-token-<ms> and cc-token-<ms>;
		// its logs do not carry them, so they are matched by form.
		if issuedToken.MatchString(text) {
			t.Errorf("%s contains an access token", where)
		}
		if strings.Contains(text, "PRIVATE KEY") {
			t.Errorf("%s contains a private key", where)
		}
	}
}

// scenarioOutput is the wrapper's output of one scenario, for a failure.
func scenarioOutput(t *testing.T, outDir, name string) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(outDir, name+"-*"))
	var b strings.Builder
	for _, d := range dirs {
		for _, f := range []string{"checks.json", "stdout.txt", "stderr.txt"} {
			data, _ := os.ReadFile(filepath.Join(d, f))
			b.WriteString("--- " + f + "\n" + string(data) + "\n")
		}
	}
	return b.String()
}

// secretKeys name the values in the suite's request and response logs
// that are secrets.
var secretKeys = map[string]bool{
	"code": true, "code_verifier": true, "client_secret": true, "client_assertion": true,
	"access_token": true, "refresh_token": true, "token": true, "authorization": true,
}

// exchangedSecrets collects, from every scenario's checks.json (where the
// suite logs each request and response with its body), the values of
// secret fields. Values too short to be secrets are left out.
func exchangedSecrets(t *testing.T, outDir string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(outDir, "auth", "*", "checks.json"))
	seen := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && secretKeys[strings.ToLower(k)] && len(s) >= 8 {
					seen[strings.TrimPrefix(strings.TrimPrefix(s, "Bearer "), "Basic ")] = true
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var checks any
		if err := json.Unmarshal(b, &checks); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		walk(checks)
	}
	// The suite's fixed client-credentials secret and its test-token
	// prefix (a token cut short in a log line is still a leak).
	seen["conformance-test-secret"] = true
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	return out
}

// withoutEchoedContext drops the suite's own "With context:" lines, where
// it prints the keys it hands the client; they are its output, not ours.
func withoutEchoedContext(s string) string {
	var keep []string
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(line, "With context:") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}
