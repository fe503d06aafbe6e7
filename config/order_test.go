package config

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestServerNamesKeepFileOrder: the servers come back in the order the
// file lists them, in each format (the parsers give maps, which lose it).
func TestServerNamesKeepFileOrder(t *testing.T) {
	want := []string{"zeta", "biomcp", "fetch", "alpha"}
	for name, text := range map[string]string{
		"c.yaml": "mcpServers:\n  zeta: {command: z}\n  biomcp:\n    command: b\n  fetch: {command: f}\n  alpha: {command: a}\n",
		"c.json": `{"x-other": {"x": [1, {"y": 2}]}, "mcpServers": {"zeta": {"command": "z"}, "biomcp": {"command": "b", "args": ["{"]}, "fetch": {"command": "f"}, "alpha": {"command": "a"}}}`,
		"c.toml": "[mcpServers.zeta]\ncommand = \"z\"\n[mcpServers.\"biomcp\"]\ncommand = \"b\"\n[mcpServers.biomcp.env]\nA = \"1\"\n[mcpServers.fetch]\ncommand = \"f\"\n[mcpServers.alpha]\ncommand = \"a\"\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := Load(LoadOptions{Path: path, Environ: []string{"TOOLBRIDGE_STATE_DIR=" + t.TempDir()}})
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.ServerNames(); !slices.Equal(got, want) {
				t.Errorf("ServerNames = %v, want %v", got, want)
			}
		})
	}
	// Without a file, by name.
	cfg := Default()
	cfg.Servers = map[string]Server{"b": {}, "a": {}}
	if got := cfg.ServerNames(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("ServerNames without a file = %v", got)
	}
	cfg.SetServerOrder([]string{"b", "gone"})
	if got := cfg.ServerNames(); !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("ServerNames with an order = %v", got)
	}
}
