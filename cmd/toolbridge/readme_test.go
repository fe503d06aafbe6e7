package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/toolbridge/toolbridge/config"
)

// readmeCommands returns the first cell of every row of the command
// table in docs/commands.md (the README links to it): the command lines a
// user copies from it.
func readmeCommands(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("../../docs/commands.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(raw)
	cell := regexp.MustCompile("(?m)^\\| `(toolbridge[^`]*)` \\|")
	var lines []string
	for _, m := range cell.FindAllStringSubmatch(section, -1) {
		lines = append(lines, m[1])
	}
	if len(lines) == 0 {
		t.Fatal("docs/commands.md's table lists no command")
	}
	return lines
}

// TestReadmeCommandsExist holds the README's command table to the command
// tree, both ways: every command and flag it shows exists, and every
// command a user can run is in it. A user reads the table, not the code.
func TestReadmeCommandsExist(t *testing.T) {
	a := &app{io: stdio{in: strings.NewReader(""), out: &bytes.Buffer{}, err: &bytes.Buffer{}}}
	root := a.root()
	documented := map[string]bool{}
	for _, line := range readmeCommands(t) {
		// "toolbridge [serve] [-c FILE]" names serve, the default command.
		words := strings.Fields(strings.NewReplacer("[", " ", "]", " ").Replace(line))
		var path []string
		for _, w := range words[1:] {
			if w == "" || w[0] == '-' || strings.ToUpper(w) == w {
				break // a flag or a placeholder (FILE, TOOL…, JSON)
			}
			path = append(path, w)
		}
		cmd, rest, err := root.Find(path)
		if err != nil || len(rest) > 0 || cmd == root {
			t.Errorf("README command %q: no command %q (%v)", line, strings.Join(path, " "), err)
			continue
		}
		documented[cmd.CommandPath()] = true
		for _, w := range words {
			flag := strings.TrimRight(w, "…,")
			switch {
			case strings.HasPrefix(flag, "--"):
				if cmd.Flags().Lookup(strings.TrimPrefix(flag, "--")) == nil {
					t.Errorf("README command %q: %s has no flag %s", line, cmd.CommandPath(), flag)
				}
			case strings.HasPrefix(flag, "-") && len(flag) == 2:
				if cmd.Flags().ShorthandLookup(flag[1:]) == nil {
					t.Errorf("README command %q: %s has no flag %s", line, cmd.CommandPath(), flag)
				}
			}
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if !sub.IsAvailableCommand() || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			if sub.HasAvailableSubCommands() {
				walk(sub)
				continue
			}
			if !documented[sub.CommandPath()] {
				t.Errorf("%q is a command but the README's Commands table does not show it", sub.CommandPath())
			}
		}
	}
	walk(root)
}

// TestReadmeConfigsLoad loads every YAML config the README shows with
// toolbridge's own loader: a newcomer copies them as they are. The
// variables they reference are set, as the README tells the user to.
func TestReadmeConfigsLoad(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(raw), -1)
	if len(blocks) < 2 {
		t.Fatalf("the README shows %d YAML configs, want the common ones (2 or more)", len(blocks))
	}
	env := []string{"GATEWAY_TOKEN=t0ken", "GITHUB_TOKEN=gh", "TOOLBRIDGE_STATE_DIR=" + t.TempDir()}
	for i, b := range blocks {
		path := filepath.Join(t.TempDir(), "readme.yaml")
		if err := os.WriteFile(path, []byte(b[1]), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := config.Load(config.LoadOptions{Path: path, Environ: env}); err != nil {
			t.Errorf("README YAML config %d does not load:\n%s\n%v", i+1, b[1], err)
		}
	}
}
