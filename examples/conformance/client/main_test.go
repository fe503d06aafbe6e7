package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeToolbridge stands in for toolbridge: it prints its arguments and
// the config it was given, and fails a call to a tool named "fail" the
// way toolbridge fails one that needs a login.
const fakeToolbridge = `#!/bin/sh
echo "args: $*"
for a in "$@"; do case "$a" in *.json) cat "$a";; esac; done
case "$*" in *::fail*) echo "run: toolbridge auth login conformance" >&2; exit 3;; esac
exit 0
`

// TestRun drives the wrapper with a stand-in toolbridge: the config it
// writes, the steps' checks, and every broken command line.
func TestRun(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "toolbridge")
	if err := os.WriteFile(bin, []byte(fakeToolbridge), 0o755); err != nil {
		t.Fatal(err)
	}
	scenarios["test-fails"] = scenario{steps: []step{{args: []string{"call", serverName + "::fail"}}}}
	scenarios["test-passes"] = scenario{steps: []step{{args: []string{"call", serverName + "::ok"}, want: "args: call conformance::ok -c"}}}
	t.Cleanup(func() { delete(scenarios, "test-fails"); delete(scenarios, "test-passes") })

	url := "http://127.0.0.1:1/mcp"
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		wantErr  string // "" for success
		wantSeen string // in the output passed through
	}{
		{"passes", []string{"--toolbridge", bin, url}, map[string]string{"MCP_CONFORMANCE_SCENARIO": "test-passes"}, "", `"url": "` + url + `"`},
		{"output lacks what the scenario wants", []string{"--toolbridge", bin, url}, map[string]string{"MCP_CONFORMANCE_SCENARIO": "tools_call"}, `did not print "The sum of 5 and 3 is 8"`, "args: call conformance::add_numbers"},
		{"failing command", []string{"--toolbridge", bin, url}, map[string]string{"MCP_CONFORMANCE_SCENARIO": "test-fails"}, "exited 3", ""},
		{"unknown scenario", []string{"--toolbridge", bin, url}, map[string]string{"MCP_CONFORMANCE_SCENARIO": "nope"}, `"nope" is not supported (supported: `, ""},
		{"no scenario", []string{"--toolbridge", bin, url}, nil, `scenario "" is not supported`, ""},
		{"no URL", []string{"--toolbridge", bin}, map[string]string{"MCP_CONFORMANCE_SCENARIO": "initialize"}, "want the server URL", ""},
		{"two URLs", []string{"--toolbridge", bin, "a", "b"}, map[string]string{"MCP_CONFORMANCE_SCENARIO": "initialize"}, "want the server URL", ""},
		{"broken context", []string{"--toolbridge", bin, url}, map[string]string{"MCP_CONFORMANCE_SCENARIO": "initialize", "MCP_CONFORMANCE_CONTEXT": "{"}, "reading MCP_CONFORMANCE_CONTEXT", ""},
		{"misspelt flag", []string{"--toolbrige", bin, url}, map[string]string{"MCP_CONFORMANCE_SCENARIO": "initialize"}, "flag provided but not defined", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(context.Background(), tt.args, func(k string) string { return tt.env[k] }, &out, &errOut)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("run: %v\n%s%s", err, out.String(), errOut.String())
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("run: %v, want an error containing %q", err, tt.wantErr)
			}
			if !strings.Contains(out.String()+errOut.String(), tt.wantSeen) {
				t.Errorf("output lacks %q:\n%s%s", tt.wantSeen, out.String(), errOut.String())
			}
		})
	}
}

// TestWriteConfig: the plain entry is the URL over streamable HTTP, in a
// file only its owner reads (auth entries hold secrets).
func TestWriteConfig(t *testing.T) {
	path, err := writeConfig(t.TempDir(), "http://127.0.0.1:9/mcp", scenario{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Servers map[string]map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	if got := cfg.Servers[serverName]; got["url"] != "http://127.0.0.1:9/mcp" || got["transport"] != "streamable-http" {
		t.Fatalf("config %s", data)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("config mode %v, %v; want 0600", info.Mode(), err)
	}
}
