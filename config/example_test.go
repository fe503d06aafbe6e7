package config_test

import (
	"fmt"
	"log"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/toolbridge/toolbridge/config"
)

// Load reads a Claude Desktop claude_desktop_config.json as it is; the
// environment expands ${VAR} references and may override settings.
func ExampleLoad() {
	dir, err := os.MkdirTemp("", "toolbridge-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "claude_desktop_config.json")
	desktop := `{
  "globalShortcut": "CommandOrControl+Shift+Space",
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/alice/Desktop"]
    },
    "github": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"}
    }
  }
}`
	if err := os.WriteFile(path, []byte(desktop), 0o600); err != nil {
		log.Fatal(err)
	}

	cfg, err := config.Load(config.LoadOptions{
		Path:    path,
		Environ: []string{"GITHUB_TOKEN=ghp_example", "TOOLBRIDGE_MODE=on"},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Servers)) {
		s := cfg.Servers[name]
		fmt.Printf("%s: %s %v (%s)\n", name, s.Command, s.Args, s.UpstreamTransport())
	}
	fmt.Println("token set:", cfg.Servers["github"].Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "")
	fmt.Println("mode:", cfg.Mode)
	fmt.Println("threshold:", cfg.ThresholdPct)
	// Output:
	// filesystem: npx [-y @modelcontextprotocol/server-filesystem /Users/alice/Desktop] (stdio)
	// github: npx [-y @modelcontextprotocol/server-github] (stdio)
	// token set: true
	// mode: on
	// threshold: 10
}
