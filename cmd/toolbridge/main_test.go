package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
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
	for _, want := range []string{"tool_search", "math::convert_units", "212", "Did you mean", "(no parameters)", allStepsWorked} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}

// TestParseCommandLine checks what each command line parses into, without
// running anything: the command, its positional arguments and its flags,
// wherever the flags stand.
func TestParseCommandLine(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		cmd     string            // the command's path
		rest    []string          // positional arguments
		flags   map[string]string // flag values that must be set
		wantErr string            // "" when the line must parse
	}{
		{"flags after the query", []string{"search", "list tags", "-c", "servers.json"}, "toolbridge search", []string{"list tags"}, map[string]string{"config": "servers.json"}, ""},
		{"flags before the query", []string{"search", "--config=servers.json", "--limit", "3", "list", "tags"}, "toolbridge search", []string{"list", "tags"}, map[string]string{"config": "servers.json", "limit": "3"}, ""},
		{"format after the tool", []string{"describe", "T", "--format", "openai"}, "toolbridge describe", []string{"T"}, map[string]string{"format": "openai"}, ""},
		{"flags between tools", []string{"describe", "a", "-c", "f.yaml", "b"}, "toolbridge describe", []string{"a", "b"}, map[string]string{"config": "f.yaml"}, ""},
		{"call with JSON then flags", []string{"call", "math::add", `{"a":1,"b":2}`, "-c", "f.json"}, "toolbridge call", []string{"math::add", `{"a":1,"b":2}`}, map[string]string{"config": "f.json"}, ""},
		{"a negative number after --", []string{"call", "math::add", "-c", "f.json", "--", "-1"}, "toolbridge call", []string{"math::add", "-1"}, map[string]string{"config": "f.json"}, ""},
		{"serve is the default", []string{"--config", "f.yaml", "--mode", "off"}, "toolbridge serve", nil, map[string]string{"config": "f.yaml", "mode": "off"}, ""},
		{"no arguments serve", nil, "toolbridge serve", nil, nil, ""},
		{"bool config-key flag", []string{"serve", "--allow-remote", "--listen", "0.0.0.0:1"}, "toolbridge serve", nil, map[string]string{"allow-remote": "true", "listen": "0.0.0.0:1"}, ""},
		{"tools takes the decision flags", []string{"tools", "--json", "--threshold-pct", "5"}, "toolbridge tools", nil, map[string]string{"json": "true", "threshold-pct": "5"}, ""},
		{"config check FILE then flags", []string{"config", "check", "f.yaml", "--format", "json"}, "toolbridge config check", []string{"f.yaml"}, map[string]string{"format": "json"}, ""},
		{"demo flags", []string{"demo", "--script", "-v", "--mode", "auto"}, "toolbridge demo", nil, map[string]string{"script": "true", "verbose": "true", "mode": "auto"}, ""},

		{"tools has no --listen", []string{"tools", "--listen", "x"}, "", nil, nil, "unknown flag: --listen"},
		{"search has no --mode", []string{"search", "q", "--mode", "on"}, "", nil, nil, "unknown flag: --mode"},
		{"missing flag value", []string{"search", "q", "-c"}, "", nil, nil, "flag needs an argument"},
		{"missing --format value", []string{"describe", "T", "--format"}, "", nil, nil, "flag needs an argument"},
		{"bad int", []string{"search", "q", "--limit", "many"}, "", nil, nil, "invalid argument"},
		{"bad bool", []string{"tools", "--json=maybe"}, "", nil, nil, "invalid argument"},
		{"unknown shorthand", []string{"describe", "T", "-x"}, "", nil, nil, "unknown shorthand flag: 'x'"},
		{"describe without a tool", []string{"describe", "-c", "f.yaml"}, "", nil, nil, "describe takes one or more tool names"},
		{"call without a tool", []string{"call"}, "", nil, nil, "call takes TOOL"},
		{"call with three arguments", []string{"call", "a", "{}", "x"}, "", nil, nil, "call takes TOOL"},
		{"call with broken JSON", []string{"call", "a", `{"a":`}, "", nil, nil, "not valid JSON"},
		{"serve takes no arguments", []string{"serve", "extra"}, "", nil, nil, "takes no arguments"},
		{"version takes no arguments", []string{"version", "x"}, "", nil, nil, "takes no arguments"},
		{"config check takes one file", []string{"config", "check", "a", "b"}, "", nil, nil, "takes one FILE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &app{io: stdio{in: strings.NewReader(""), out: &bytes.Buffer{}, err: &bytes.Buffer{}}}
			cmd, rest, err := parseOnly(a.root(), defaultCommand(tt.args))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parsing %q: %v", tt.args, err)
			}
			if got := cmd.CommandPath(); got != tt.cmd {
				t.Errorf("command %q, want %q", got, tt.cmd)
			}
			if fmt.Sprint(rest) != fmt.Sprint(tt.rest) {
				t.Errorf("positional %q, want %q", rest, tt.rest)
			}
			for name, want := range tt.flags {
				f := cmd.Flags().Lookup(name)
				if f == nil || !f.Changed || f.Value.String() != want {
					t.Errorf("flag --%s = %v, want %q set", name, f, want)
				}
			}
		})
	}
}

// TestCommandHelp: -h lists the commands at the top and only a command's
// own flags below it.
func TestCommandHelp(t *testing.T) {
	tests := []struct {
		args    []string
		want    []string
		notWant []string
	}{
		{[]string{"--help"}, []string{"serve", "demo", "tools", "search", "describe", "call", "config", "version"}, nil},
		{[]string{"-h"}, []string{"Available Commands", "search"}, nil},
		{[]string{"help"}, []string{"Available Commands"}, nil},
		{[]string{"tools", "-h"}, []string{"--config", "--json", "--mode"}, []string{"--listen", "--transport", "--watch", "--script"}},
		{[]string{"search", "--help"}, []string{"--config", "--limit"}, []string{"--listen", "--mode", "--format"}},
		{[]string{"describe", "-h"}, []string{"--format"}, []string{"--listen", "--limit"}},
		{[]string{"call", "-h"}, []string{"--config"}, []string{"--listen", "--format", "--limit"}},
		{[]string{"serve", "-h"}, []string{"--listen", "--transport", "--watch", "--allow-remote"}, []string{"--script", "--json"}},
		{[]string{"demo", "-h"}, []string{"--script", "--listen"}, []string{"--watch", "--json"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := runCmd(t, nil, tt.args...)
			if code != 0 {
				t.Fatalf("exit %d, stderr %s", code, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("help lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(out, w) {
					t.Errorf("help shows %q, which is not this command's:\n%s", w, out)
				}
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"serch", "q"}, 2, "search"}, // did you mean
		{[]string{"config"}, 2, "config needs a subcommand: check"},
		{[]string{"config", "chek"}, 2, `did you mean "check"`},
		{[]string{"call"}, 2, "call takes TOOL"},
		{[]string{"serve", "--no-such-flag"}, 2, "unknown flag: --no-such-flag"},
		{[]string{"tools", "--listen", "x"}, 2, "Run 'toolbridge tools --help'"},
		{[]string{"serve", "--watch"}, 2, "--watch needs a config file"},
		{[]string{"tools", "--config", "/nonexistent/toolbridge.yaml"}, 1, "/nonexistent/toolbridge.yaml"},
		// A flag value that is wrong whatever the file says is a wrong
		// command line too, as the docs promise (exit 2).
		{[]string{"serve", "--mode", "sometimes"}, 2, "flag --mode"},
		{[]string{"serve", "--mode", "maybe"}, 2, `invalid value "maybe": want on, auto or off`},
		{[]string{"serve", "--transport", "htp"}, 2, "did you mean http?"},
		{[]string{"tools", "--threshold-pct", "abc"}, 2, "flag --threshold-pct"},
		{[]string{"demo", "--mode", "maybe"}, 2, "Run 'toolbridge demo --help'"},
		{[]string{"config", "check", "--listen", "nope"}, 2, "flag --listen"},
		{[]string{"search"}, 2, "search needs a QUERY"},
		{[]string{"search", " "}, 2, "search needs a QUERY"},
		{[]string{"config", "check", "a.yaml", "-c", "b.yaml"}, 2, "two config files"},
		{[]string{"describe", "T", "--format", "xml"}, 2, "--format must be mcp or openai"},
		{[]string{"call", "T", "--elicit", "always"}, 2, "--elicit must be decline or defaults"},
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

// TestNoServersConfigured: the commands that list or call tools say there
// is nothing configured and fail, rather than printing an empty answer.
func TestNoServersConfigured(t *testing.T) {
	empty := writeTestFile(t, "empty.json", `{"mcpServers": {}}`)
	for _, args := range [][]string{
		{"tools"},
		{"search", "list tags"},
		{"describe", "math::add"},
		{"call", "math::add", `{"a":1}`},
		{"tools", "-c", empty},
		{"call", "math::add", "-c", empty},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errOut := runCmd(t, nil, args...)
			if code == 0 || !strings.Contains(errOut, "no servers configured") {
				t.Fatalf("exit %d, stderr %q; want a failure saying no servers are configured", code, errOut)
			}
			if strings.Contains(errOut, "search") && args[0] != "search" {
				t.Errorf("%s speaks of search: %q", args[0], errOut)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
		})
	}
}

// TestOneShotCommandsFlagsAnywhere runs search, describe and call against
// a real stdio server with the flags after the positional arguments, as
// users type them.
func TestOneShotCommandsFlagsAnywhere(t *testing.T) {
	cfg := writeTestFile(t, "servers.json", fmt.Sprintf(`{"mcpServers": {"math": {"command": %q, "args": ["math"]}}}`, demoServer(t)))

	code, out, errOut := runCmd(t, nil, "search", "convert temperature", "-c", cfg, "--limit", "2")
	if code != 0 || !strings.Contains(out, "math::convert_units") {
		t.Fatalf("search: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	code, out, errOut = runCmd(t, nil, "describe", "convert_units", "--format", "openai", "-c", cfg)
	if code != 0 {
		t.Fatalf("describe: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var described any
	if err := json.Unmarshal([]byte(out), &described); err != nil || !strings.Contains(out, `"function"`) || strings.Contains(out, `"inputSchema"`) {
		t.Fatalf("describe --format openai did not print OpenAI function JSON (%v):\n%s", err, out)
	}

	code, out, errOut = runCmd(t, nil, "call", "math::convert_units", `{"value":100,"from":"celsius","to":"fahrenheit"}`, "-c", cfg)
	if code != 0 || !strings.Contains(out, "212") {
		t.Fatalf("call: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	// A core tool is reachable too: describe and call do not depend on
	// what bridge mode would defer.
	coreCfg := writeTestFile(t, "core.json", fmt.Sprintf(`{"mcpServers": {"math": {"command": %q, "args": ["math"], "defer": "never"}}}`, demoServer(t)))
	code, out, errOut = runCmd(t, nil, "call", "convert_units", `{"value":0,"from":"celsius","to":"fahrenheit"}`, "-c", coreCfg)
	if code != 0 || !strings.Contains(out, "32") {
		t.Fatalf("call of a core tool: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, _, errOut = runCmd(t, nil, "search", "convert", "-c", coreCfg)
	if code == 0 || !strings.Contains(errOut, "nothing to search") {
		t.Fatalf("search with nothing deferrable: exit %d, stderr %q", code, errOut)
	}
}

// TestDemoWithConfigStaysBridged: a config file given to the demo adds its
// servers but keeps bridge mode, unless the file sets mode itself.
func TestDemoWithConfigStaysBridged(t *testing.T) {
	noMode := writeTestFile(t, "plain.yaml", "threshold_pct: 50\n")
	code, out, errOut := runCmd(t, nil, "demo", "--script", "-c", noMode)
	if code != 0 || !strings.Contains(out, allStepsWorked) {
		t.Fatalf("demo -c FILE without mode did not bridge: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	modeOff := writeTestFile(t, "off.yaml", "mode: off\n")
	code, out, _ = runCmd(t, nil, "demo", "--script", "-c", modeOff)
	if code == 0 || strings.Contains(out, allStepsWorked) {
		t.Fatalf("demo -c FILE with mode: off still bridged (exit %d):\n%s", code, out)
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := runCmd(t, nil, "version")
	if code != 0 || !strings.HasPrefix(out, "toolbridge ") {
		t.Fatalf("version: exit %d, %q", code, out)
	}
}

func TestConfigCheckPrintsMaskedConfig(t *testing.T) {
	path := writeTestFile(t, "claude_desktop_config.json", `{"mcpServers": {"gh": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "${TOKEN}"}}}}`)
	for _, args := range [][]string{{"config", "check", path}, {"config", "check", "-c", path}, {"config", "check", "--format", "json", path}} {
		code, out, errOut := runCmd(t, []string{"TOKEN=ghp_supersecret"}, args...)
		if code != 0 {
			t.Fatalf("%q: exit %d\n%s", args, code, errOut)
		}
		if strings.Contains(out, "ghp_supersecret") || !strings.Contains(out, "GITHUB_TOKEN") {
			t.Fatalf("%q must name the key and mask its value:\n%s", args, out)
		}
	}
}

func writeTestFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// demoServerBin is a real stdio MCP server for the one-shot commands to
// talk to.
var demoServerBin = &testenv.GoBinary{Package: "github.com/toolbridge/toolbridge/examples/servers/demo-server"}

func TestMain(m *testing.M) {
	code := m.Run()
	demoServerBin.Remove()
	os.Exit(code)
}

func demoServer(t *testing.T) string { return demoServerBin.Path(t) }

// allStepsWorked is how demo --script ends when every step worked.
var allStepsWorked = fmt.Sprintf("All %d steps worked", len(demoScript))

// TestNoServerUp: when every configured server fails, the one-shot
// commands say there is no tool, not something about bridge mode.
func TestNoServerUp(t *testing.T) {
	cfg := writeTestFile(t, "broken.json", `{"mcpServers": {"x": {"command": "/nonexistent/toolbridge-test-server"}}}`)
	for _, args := range [][]string{{"call", "x::y"}, {"describe", "x::y"}, {"search", "y"}} {
		code, _, errOut := runCmd(t, nil, append(args, "-c", cfg)...)
		if code != 1 || !strings.Contains(errOut, "no configured server offers a tool") || strings.Contains(errOut, "deferr") {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut)
		}
	}
}

// TestOneShotSaysWhenEveryToolIsHeld: when every tool a server offers is
// quarantined, the one-shot commands say how many are held and how to
// review them, not that no server offers a tool.
func TestOneShotSaysWhenEveryToolIsHeld(t *testing.T) {
	cfg := writeTestFile(t, "held.json", fmt.Sprintf(`{"state_dir": %q, "trust": {"new_servers": "quarantine"}, "mcpServers": {"math": {"command": %q, "args": ["math"]}}}`, t.TempDir(), demoServer(t)))
	for _, args := range [][]string{{"search", "add two numbers"}, {"describe", "math::add"}} {
		code, _, errOut := runCmd(t, nil, append(args, "-c", cfg)...)
		if code != 1 || !strings.Contains(errOut, "14 held (quarantined) on math") || !strings.Contains(errOut, "toolbridge trust list") {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut)
		}
	}
}

// TestOneShotAdviceIsForTerminals: what the meta-tools tell a model to do
// next (call tool_search with some JSON) reaches a terminal user as the
// toolbridge command to type.
func TestOneShotAdviceIsForTerminals(t *testing.T) {
	cfg := writeTestFile(t, "servers.json", fmt.Sprintf(`{"mcpServers": {"math": {"command": %q, "args": ["math"]}}}`, demoServer(t)))
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"call", "convert_unit", "{}"}, 1, `Did you mean: math::convert_units? Or find tools with: toolbridge search "<what you want to do>"`},
		{[]string{"call", "qqqzzz"}, 1, `Find tools with: toolbridge search "<what you want to do>"`},
		{[]string{"describe", "qqqzzz"}, 1, `toolbridge search`},
		{[]string{"search", "convert temperature"}, 0, `Run one with: toolbridge call <id> '{...}'`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := runCmd(t, nil, append(tt.args, "-c", cfg)...)
			if code != tt.code || !strings.Contains(out, tt.want) {
				t.Fatalf("exit %d, stdout %q; want exit %d and %q\nstderr:\n%s", code, out, tt.code, tt.want, errOut)
			}
			if strings.Contains(out, "tool_search {") || strings.Contains(out, "tool_call {") || strings.Contains(out, "with tool_search") {
				t.Errorf("stdout gives a model's advice: %q", out)
			}
			if tt.code != 0 && !strings.Contains(errOut, tt.args[0]+" failed (see above)") {
				t.Errorf("stderr %q does not say the %s failed", errOut, tt.args[0])
			}
		})
	}
}

// TestDemoKeepsOutOfTheUsersState: the demo's pins are of its own example
// servers; written to the default state_dir they would quarantine a real
// server's tools that share a name (time, notes, ...). A state_dir the user
// set is still used.
func TestDemoKeepsOutOfTheUsersState(t *testing.T) {
	home := t.TempDir()
	code, out, errOut := runCmd(t, []string{"HOME=" + home}, "demo", "--script")
	if code != 0 {
		t.Fatalf("demo --script exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(home, ".local", "state", "toolbridge")); !os.IsNotExist(err) {
		t.Errorf("the demo wrote to the default state_dir under HOME (stat: %v)", err)
	}
	state := t.TempDir()
	code, out, errOut = runCmd(t, []string{"HOME=" + home, "TOOLBRIDGE_STATE_DIR=" + state}, "demo", "--script")
	if code != 0 {
		t.Fatalf("demo --script with TOOLBRIDGE_STATE_DIR exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if pins, _ := filepath.Glob(filepath.Join(state, "pins", "*.json")); len(pins) == 0 {
		t.Errorf("the demo wrote no pins to the state_dir the user set (%s)", state)
	}
}
