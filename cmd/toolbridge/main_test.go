package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCmd runs one command line in process and returns its exit code and
// output.
func runCmd(t *testing.T, environ []string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, stdio{in: strings.NewReader(""), out: &out, err: &errOut}, environ)
	return code, out.String(), errOut.String()
}

// TestDemoScript runs the README's first command: the scripted session
// checks every step's result itself and fails if one is wrong.
func TestDemoScript(t *testing.T) {
	code, out, errOut := runCmd(t, nil, "demo", "--script")
	if code != 0 {
		t.Fatalf("demo --script exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"tool_search", "math::convert_units", "212", "Did you mean", "All 8 steps worked"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"config"}, 2, "config check"},
		{[]string{"call"}, 2, "call takes TOOL"},
		{[]string{"serve", "--no-such-flag"}, 2, "flag provided but not defined"},
		{[]string{"tools", "--config", "/nonexistent/toolbridge.yaml"}, 1, "/nonexistent/toolbridge.yaml"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, errOut := runCmd(t, nil, tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, errOut, tt.code, tt.want)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := runCmd(t, nil, "version")
	if code != 0 || !strings.HasPrefix(out, "toolbridge ") {
		t.Fatalf("version: exit %d, %q", code, out)
	}
}

func TestConfigCheckPrintsMaskedConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	cfg := `{"mcpServers": {"gh": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "${TOKEN}"}}}}`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, []string{"TOKEN=ghp_supersecret"}, "config", "check", path)
	if code != 0 {
		t.Fatalf("config check: exit %d\n%s", code, errOut)
	}
	if strings.Contains(out, "ghp_supersecret") || !strings.Contains(out, "GITHUB_TOKEN") {
		t.Fatalf("config check must name the key and mask its value:\n%s", out)
	}
}
