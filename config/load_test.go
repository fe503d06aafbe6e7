package config

import (
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// fullEnviron supplies the variables the testdata/full.* files reference.
var fullEnviron = []string{"GITHUB_TOKEN=ghp_fullSecret", "SEARCH_KEY=sk_fullSecret", "PATH=/usr/bin"}

// wantFull is what every testdata/full.* file means with fullEnviron.
func wantFull() Config {
	return Config{
		Servers: map[string]Server{
			"github": {
				Command: "docker",
				Args:    []string{"run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"},
				Env: map[string]string{
					"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_fullSecret",
					"LOG.LEVEL":                    "debug",
				},
				Cwd:            "/srv/github",
				Defer:          DeferAlways,
				Description:    "GitHub issues and pull requests",
				AllowTools:     []string{"search_*", "get_*", "create_issue"},
				DenyTools:      []string{"delete_*"},
				ConnectTimeout: 45 * time.Second,
				CallTimeout:    2 * time.Minute,
				MaxTools:       300,
				referenced:     []string{"ghp_fullSecret"},
			},
			"search": {
				URL:        "https://search.example.com/mcp?api_key=sk_fullSecret&region=eu",
				Transport:  TransportSSE,
				Headers:    map[string]string{"Authorization": "Bearer sk_fullSecret", "X-Team": "core"},
				Defer:      DeferNever,
				Disabled:   true,
				referenced: []string{"sk_fullSecret"},
			},
		},
		Mode:               ModeOn,
		ThresholdPct:       12.5,
		ContextWindow:      128000,
		MinTokens:          5000,
		Tokenizer:          TokenizerEstimate,
		CoreTools:          []string{"bash", "read_file"},
		NeverDefer:         []string{"github__create_issue"},
		DeferrablePrefixes: []string{"mcp_", "ext_"},
		Tools: []ToolRule{
			{Match: "github::*", Class: ClassDeferrable},
			{Match: "search::quick_?", Class: ClassCore},
			{Match: "github::delete_*", Class: ClassDisabled},
		},
		Trust:      Trust{Mode: TrustWarn, NewServers: NewServersQuarantine, BlockSuspicious: true},
		Policy:     Policy{Destructive: DestructiveConfirm},
		Disclosure: DisclosureActivate,
		Search: Search{DefaultLimit: 7, MaxLimit: 30, HintTokens: 800, RevealLimit: 32, Embeddings: Embeddings{
			URL: "http://127.0.0.1:11434/v1", Model: "nomic-embed-text", Timeout: 3 * time.Second, APIKeyEnv: "SEARCH_KEY", Weight: 0.4}},
		Serve: Serve{
			Transport:      ServeHTTP,
			Listen:         "0.0.0.0:9090",
			AllowRemote:    true,
			AuthToken:      "fallback-token",
			AllowedOrigins: []string{"https://app.example.com"},
			AllowedHosts:   []string{"toolbridge.example.com"},
			MaxBodyBytes:   1 << 20,
			BodyTimeout:    45 * time.Second,
			MaxInFlight:    16,
			ShutdownGrace:  20 * time.Second,
			DrainDelay:     15 * time.Second,

			SessionIdleTimeout: 5 * time.Minute,
			MaxSessions:        100,
			OAuth:              OAuth{GroupsClaim: "groups"},
		},
		Timeouts:          Timeouts{Connect: 10 * time.Second, Call: 90 * time.Second},
		StartupWait:       2 * time.Second,
		Restart:           Restart{Initial: time.Second, Max: time.Minute},
		MaxResultBytes:    2 << 20,
		MaxToolsPerServer: 500,
		Redis:             Redis{KeyPrefix: DefaultRedisKeyPrefix, TokenKeyEnv: DefaultTokenKeyEnv},
		Telemetry:         Telemetry{Exporter: ExporterOTLP, RecordContent: true, Prometheus: true},
		Hooks: []Hook{{
			Match:   "github::*",
			Command: "/usr/local/bin/audit-hook",
			Args:    []string{"--strict"},
			Events:  []string{HookBefore, HookAfter},
			Timeout: 3 * time.Second,
		}},
		Audit:      Audit{File: "/var/log/toolbridge/audit.jsonl"},
		StateDir:   "/var/lib/toolbridge",
		TokenStore: TokenStoreAuto,
	}
}

func TestLoadFormats(t *testing.T) {
	for _, file := range []string{"testdata/full.yaml", "testdata/full.json", "testdata/full.toml"} {
		t.Run(filepath.Ext(file), func(t *testing.T) {
			got, err := Load(LoadOptions{Path: file, Environ: fullEnviron})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			want := wantFull()
			want.serverOrder = []string{"github", "search"} // as each file lists them
			if !reflect.DeepEqual(*got, want) {
				t.Errorf("Load(%s):\n got %+v\nwant %+v", file, *got, want)
			}
		})
	}
}

func TestLoadDefaultsOnly(t *testing.T) {
	got, err := Load(LoadOptions{Environ: []string{"HOME=/home/x"}})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := Default()
	want.StateDir = "/home/x/.local/state/toolbridge"
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("Load with no sources:\n got %+v\nwant %+v", *got, want)
	}
	d := Default()
	if err := d.Validate(); err != nil {
		t.Errorf("Default().Validate() = %v", err)
	}
	// A config built in code gets the checks a loaded one gets: NaN is
	// out of range (classify.Decide relies on it).
	d.ThresholdPct = math.NaN()
	if err := d.Validate(); err == nil || !strings.Contains(err.Error(), "threshold_pct: must be between 0 and 100, got NaN") {
		t.Errorf("Validate with a NaN threshold = %v", err)
	}
}

// TestLoadOwnDefaults: a command with its own defaults (the demo bridges
// unless told otherwise) keeps them where the file, the environment and
// the flags say nothing, and loses them where they do.
func TestLoadOwnDefaults(t *testing.T) {
	plain := writeFile(t, "plain.yaml", "threshold_pct: 20\n")
	setsMode := writeFile(t, "mode.yaml", "mode: auto\n")
	tests := []struct {
		name    string
		path    string
		environ []string
		want    Mode
	}{
		{"no file", "", nil, ModeOn},
		{"file without mode", plain, nil, ModeOn},
		{"file sets mode", setsMode, nil, ModeAuto},
		{"environment sets mode", plain, []string{"TOOLBRIDGE_MODE=off"}, ModeOff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Default()
			d.Mode = ModeOn
			got, err := Load(LoadOptions{Path: tt.path, Environ: tt.environ, Defaults: &d})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got.Mode != tt.want {
				t.Errorf("mode = %q, want %q", got.Mode, tt.want)
			}
		})
	}
}

// claudeFile is the Claude Desktop / Claude Code format, decoded
// independently of the package to compare against.
type claudeFile struct {
	MCPServers map[string]struct {
		Type    string            `json:"type"`
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	} `json:"mcpServers"`
}

func readClaudeFile(t *testing.T, path string) claudeFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f claudeFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestLoadClaudeDesktop(t *testing.T) {
	const path = "testdata/claude_desktop_config.json"
	got, err := Load(LoadOptions{Path: path})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := readClaudeFile(t, path)
	if len(got.Servers) != len(want.MCPServers) {
		t.Fatalf("got %d servers, want %d", len(got.Servers), len(want.MCPServers))
	}
	for name, w := range want.MCPServers {
		s, ok := got.Servers[name]
		if !ok {
			t.Errorf("server %q missing", name)
			continue
		}
		if s.Command != w.Command || !slices.Equal(s.Args, w.Args) || !reflect.DeepEqual(s.Env, w.Env) {
			t.Errorf("server %q = %+v, want command %q args %q env %v", name, s, w.Command, w.Args, w.Env)
		}
		if s.UpstreamTransport() != TransportStdio || s.Defer != DeferAuto {
			t.Errorf("server %q: transport %q defer %q, want stdio and auto", name, s.UpstreamTransport(), s.Defer)
		}
	}
	// The dotted env name survives as one key.
	if v := got.Servers["brave-search"].Env["my.dotted.VAR"]; v != "dotted value" {
		t.Errorf(`env["my.dotted.VAR"] = %q`, v)
	}
	// Everything but the servers keeps its default.
	d := Default()
	got.Servers, d.Servers = nil, nil
	got.serverOrder = nil
	if !reflect.DeepEqual(*got, d) {
		t.Errorf("non-server settings changed:\n got %+v\nwant %+v", *got, d)
	}
}

func TestLoadClaudeCode(t *testing.T) {
	const path = "testdata/claude-code/.mcp.json"
	env := []string{"SENTRY_TOKEN=sntrys_abc", "HOME=/home/alice"}
	got, err := Load(LoadOptions{Path: path, Environ: env})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := readClaudeFile(t, path)
	wantTransport := map[string]string{"linear": TransportSSE, "sentry": TransportStreamableHTTP, "memory": TransportStdio}
	for name, w := range want.MCPServers {
		s := got.Servers[name]
		if s.Type != w.Type || s.URL != w.URL || s.Command != w.Command || !slices.Equal(s.Args, w.Args) {
			t.Errorf("server %q = %+v, want %+v", name, s, w)
		}
		if tr := s.UpstreamTransport(); tr != wantTransport[name] {
			t.Errorf("server %q: transport %q, want %q", name, tr, wantTransport[name])
		}
	}
	if h := got.Servers["sentry"].Headers["Authorization"]; h != "Bearer sntrys_abc" {
		t.Errorf("expanded header = %q", h)
	}
	if v := got.Servers["memory"].Env["MEMORY_FILE_PATH"]; v != "/home/alice/.memory.json" {
		t.Errorf("expanded env = %q", v)
	}
}

// writeFile writes content to name in a fresh temp dir and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCoreToolsReplaceOrKeep(t *testing.T) {
	tests := []struct {
		name, file string
		want       []string
	}{
		{"omitted keeps defaults", "mode: auto\n", DefaultCoreTools()},
		{"null keeps defaults", "core_tools:\n", DefaultCoreTools()},
		{"empty list replaces", "core_tools: []\n", []string{}},
		{"list replaces", "core_tools: [bash]\n", []string{"bash"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Load(LoadOptions{Path: writeFile(t, "c.yaml", tt.file)})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !slices.Equal(got.CoreTools, tt.want) || (len(tt.want) == 0 && got.CoreTools == nil) {
				t.Errorf("core_tools = %#v, want %#v", got.CoreTools, tt.want)
			}
		})
	}
	// The same through JSON and TOML.
	for name, content := range map[string]string{"c.json": `{"core_tools": []}`, "c.toml": "core_tools = []\n"} {
		got, err := Load(LoadOptions{Path: writeFile(t, name, content)})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.CoreTools == nil || len(got.CoreTools) != 0 {
			t.Errorf("%s: core_tools = %#v, want empty", name, got.CoreTools)
		}
	}
}

func TestModeSpellings(t *testing.T) {
	tests := []struct {
		file, content string
		want          Mode
	}{
		{"m.yaml", "mode: true\n", ModeOn},
		{"m.yaml", "mode: false\n", ModeOff},
		{"m.yaml", "mode: yes\n", ModeOn},
		{"m.yaml", "mode: No\n", ModeOff},
		{"m.yaml", "mode: 1\n", ModeOn},
		{"m.yaml", "mode: 0\n", ModeOff},
		{"m.yaml", "mode: ON\n", ModeOn},
		{"m.yaml", "mode: off\n", ModeOff},
		{"m.yaml", "mode: Auto\n", ModeAuto},
		{"m.yaml", "mode: \"TRUE\"\n", ModeOn},
		{"m.json", `{"mode": true}`, ModeOn},
		{"m.json", `{"mode": "off"}`, ModeOff},
		{"m.toml", "mode = false\n", ModeOff},
	}
	for _, tt := range tests {
		t.Run(tt.content, func(t *testing.T) {
			got, err := Load(LoadOptions{Path: writeFile(t, tt.file, tt.content)})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got.Mode != tt.want {
				t.Errorf("mode = %q, want %q", got.Mode, tt.want)
			}
		})
	}
}

func TestDurations(t *testing.T) {
	tests := []struct {
		content string
		want    time.Duration
		wantErr string
	}{
		{`timeouts: {call: 30s}`, 30 * time.Second, ""},
		{`timeouts: {call: 1m30s}`, 90 * time.Second, ""},
		{`timeouts: {call: 250ms}`, 250 * time.Millisecond, ""},
		{`timeouts: {call: 30}`, 0, `timeouts.call: expected a duration with a unit such as "30s" or "1m30s", got 30 (a bare number has no unit)`},
		{`timeouts: {call: "30"}`, 0, `timeouts.call: expected a duration with a unit such as "30s" or "1m30s", got "30" (a bare number has no unit)`},
		{`timeouts: {call: soon}`, 0, `timeouts.call: expected a duration such as "30s", "1m30s" or "500ms", got "soon"`},
		{`timeouts: {call: [1s]}`, 0, `timeouts.call: expected a duration such as "30s" or "1m30s", got a list`},
		{`timeouts: {call: -1s}`, 0, `timeouts.call: must be a positive duration such as "30s", got -1s`},
		{`timeouts: {call: 0}`, 0, `timeouts.call: must be a positive duration such as "30s", got 0s`},
	}
	for _, tt := range tests {
		t.Run(tt.content, func(t *testing.T) {
			path := writeFile(t, "d.yaml", tt.content+"\n")
			got, err := Load(LoadOptions{Path: path})
			if tt.wantErr != "" {
				wantLine := path + ": " + tt.wantErr
				if err == nil || !slices.Contains(strings.Split(err.Error(), "\n"), wantLine) {
					t.Fatalf("error = %v\nwant line %q", err, wantLine)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got.Timeouts.Call != tt.want {
				t.Errorf("timeouts.call = %v, want %v", got.Timeouts.Call, tt.want)
			}
		})
	}
}

func TestScalarCoercion(t *testing.T) {
	// Env values and args written as YAML numbers or booleans mean their text;
	// numeric strings are numbers.
	path := writeFile(t, "c.yaml", `
threshold_pct: "7.5"
context_window: "64000"
serve: {allow_remote: "yes", listen: "[::1]:8080"}
mcpServers:
  s:
    command: node
    args: [--port, 8080, --ratio, 0.5]
    env: {DEBUG: true, PORT: 3000}
`)
	got, err := Load(LoadOptions{Path: path})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	s := got.Servers["s"]
	if !slices.Equal(s.Args, []string{"--port", "8080", "--ratio", "0.5"}) {
		t.Errorf("args = %q", s.Args)
	}
	if s.Env["DEBUG"] != "true" || s.Env["PORT"] != "3000" {
		t.Errorf("env = %v", s.Env)
	}
	if got.ThresholdPct != 7.5 || got.ContextWindow != 64000 || !got.Serve.AllowRemote {
		t.Errorf("threshold %v window %v allow_remote %v", got.ThresholdPct, got.ContextWindow, got.Serve.AllowRemote)
	}
}

func TestHookAndServerDefaults(t *testing.T) {
	path := writeFile(t, "c.yaml", `
hooks:
  - command: ./check.sh
mcpServers:
  s:
    command: node
    transport: STDIO
`)
	got, err := Load(LoadOptions{Path: path})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	h := got.Hooks[0]
	if h.Match != "*" || !slices.Equal(h.Events, []string{HookBefore}) || h.Timeout != DefaultHookTimeout {
		t.Errorf("hook defaults = %+v", h)
	}
	if s := got.Servers["s"]; s.Defer != DeferAuto || s.Transport != TransportStdio {
		t.Errorf("server = %+v, want defer auto and transport stdio", s)
	}
}

func TestDisabledServerMayReferenceUnsetVariables(t *testing.T) {
	path := writeFile(t, "c.yaml", `
mcpServers:
  later:
    disabled: true
    command: npx
    env: {TOKEN: "${NOT_YET_SET}"}
`)
	got, err := Load(LoadOptions{Path: path})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if v := got.Servers["later"].Env["TOKEN"]; v != "${NOT_YET_SET}" {
		t.Errorf("env TOKEN = %q, want the reference kept", v)
	}
}

// errLines splits a joined error into its lines.
func errLines(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

func TestBrokenFiles(t *testing.T) {
	tests := []struct {
		file    string
		environ []string
		want    []string // every line of the error, without the "file" prefix
	}{
		{"syntax.yaml", nil, []string{":1: invalid YAML: did not find expected key"}},
		{"syntax.json", nil, []string{":5:7: invalid JSON: invalid character '\"' after object key:value pair"}},
		{"syntax.toml", nil, []string{":6:1: invalid TOML: expected character ] but the document ended here"}},
		{"types.yaml", nil, []string{
			`: context_window: expected a whole number, got 1.5`,
			`: core_tools: expected a list, got "bash"`,
			`: mcpServers.github.args: expected a list, got "--github"`,
			`: mcpServers.github.env: expected an object, got a list`,
			`: serve.allow_remote: expected true or false, got "maybe"`,
			`: serve.max_in_flight: expected a whole number, got a list`,
			`: threshold_pct: expected a number, got "ten"`,
			`: timeouts.call: expected a duration with a unit such as "30s" or "1m30s", got 30 (a bare number has no unit)`,
		}},
		{"unknown.yaml", nil, []string{
			`: mcpServers.github.comand: unknown key (did you mean command?)`,
			`: mcpservers: unknown key (did you mean mcpServers?)`,
			`: serve.listn: unknown key (did you mean listen?)`,
			`: thresold_pct: unknown key (did you mean threshold_pct?)`,
		}},
		{"missing_env.yaml", []string{"HOME=/root"}, []string{
			`: mcpServers.github.env.GITHUB_TOKEN: environment variable GITHUB_TOKEN is not set`,
			`: mcpServers.remote.url: environment variable MCP_HOST is not set`,
		}},
		{"command_url.json", nil, []string{
			`: mcpServers.both: both command and url given: a server is either started (command) or remote (url), not both`,
			`: mcpServers.empty: missing command or url: give "command" to start a stdio server or "url" for a remote one`,
			`: mcpServers.nothing: missing command or url: give "command" to start a stdio server or "url" for a remote one`,
		}},
		{"enums.yaml", nil, []string{
			`: mode: invalid value "maybe": want on, auto or off`,
			`: tokenizer: invalid value "cl100k_base": want o200k_base or estimate (did you mean o200k_base?)`,
			`: tools[0].class: invalid value "hidden": want core, deferrable, unknown or disabled`,
			`: trust.mode: invalid value "strict": want pin, warn or off`,
			`: trust.new_servers: invalid value "hold": want trust or quarantine`,
			`: policy.destructive: invalid value "ask": want allow, confirm or deny`,
			`: disclosure: invalid value "reveal": want bridge or activate`,
			`: serve.transport: invalid value "grpc": want stdio or http`,
			`: telemetry.exporter: invalid value "jaeger": want none, otlp or stdout`,
			`: hooks[0].events[0]: invalid value "during": want before or after`,
			`: mcpServers.a.defer: invalid value "sometimes": want auto, always, never or unmarked`,
			`: mcpServers.b.transport: invalid value "websocket": want stdio, streamable-http, sse or http`,
		}},
		{"globs.yaml", nil, []string{
			`: tools[0].match: invalid glob "github::[a-": syntax error in pattern (use * and ? wildcards and [...] classes; escape with \)`,
			`: hooks[0].match: invalid glob "[": syntax error in pattern (use * and ? wildcards and [...] classes; escape with \)`,
			`: mcpServers.gh.allow_tools[0]: must not be empty: want a glob on the tool name such as "delete_*"`,
			`: mcpServers.gh.allow_tools[1]: invalid glob "github::x": give the tool name without the server (the list belongs to one server)`,
			`: mcpServers.gh.deny_tools[0]: invalid glob "[z-": syntax error in pattern (use * and ? wildcards and [...] classes; escape with \)`,
		}},
		{"names.json", nil, []string{
			`: mcpServers.a123456789012345678901234567890123456789012345678901234567890abcd: invalid server name: use 1 to 64 letters, digits, "_" or "-" (it becomes part of tool names)`,
			`: mcpServers["has space"]: invalid server name: use 1 to 64 letters, digits, "_" or "-" (it becomes part of tool names)`,
			`: mcpServers["my.server"]: invalid server name: use 1 to 64 letters, digits, "_" or "-" (it becomes part of tool names)`,
			`: mcpServers.two__parts: invalid server name: "__" separates server and tool in tool names; use a single "_" or "-"`,
		}},
		{"listen.yaml", nil, []string{`: serve.listen: invalid address "8080": want host:port, such as "127.0.0.1:8080"`}},
		{"remote.yaml", nil, []string{`: serve.listen: "0.0.0.0" is not a loopback address: set serve.allow_remote: true (or --allow-remote) to accept connections from the network, or listen on 127.0.0.1`}},
		{"ranges.yaml", nil, []string{
			`: threshold_pct: must be between 0 and 100, got 150`,
			`: context_window: must be greater than 0, got 0`,
			`: min_tokens: must not be negative, got -1`,
			`: timeouts.call: must be a positive duration such as "30s", got -5s`,
			`: max_tools_per_server: must be greater than 0, got -3`,
			`: mcpServers.slow.max_tools: must not be negative, got -1`,
			`: mcpServers.slow.connect_timeout: must not be negative, got -1s`,
		}},
		{"empty.yaml", nil, []string{`: file is empty: want a YAML object with at least "mcpServers"`}},
		{"config.ini", nil, []string{`: unknown config format (".ini"): name the file .yaml, .yml, .json or .toml`}},
		{"does-not-exist.yaml", nil, []string{`: file not found`}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", "bad", tt.file)
			cfg, err := Load(LoadOptions{Path: path, Environ: tt.environ})
			if err == nil {
				t.Fatalf("Load(%s) = %+v, want an error", path, cfg)
			}
			if cfg != nil {
				t.Errorf("Load returned a Config with its error")
			}
			var want []string
			for _, w := range tt.want {
				want = append(want, path+w)
			}
			if got := errLines(err); !slices.Equal(got, want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func TestMoreBrokenInput(t *testing.T) {
	tests := []struct {
		name, file, content string
		want                []string // lines without the file prefix
	}{
		{"json top level array", "c.json", `[1, 2]`, []string{`:1:1: invalid JSON: the top level must be a JSON object, got an array`}},
		{"json null", "c.json", `null`, []string{`: the top level must be a JSON object, got null`}},
		{"json truncated", "c.json", `{"mode": "on"`, []string{`:1:13: invalid JSON: unexpected end of JSON input`}},
		{"yaml top level list", "c.yaml", "- a\n- b\n", []string{`:1: invalid YAML: the top level must be a mapping of key: value pairs`}},
		{"yaml duplicate key", "c.yaml", "mode: on\nmode: off\n", []string{`:2: invalid YAML: mapping key "mode" already defined at line 1`}},
		{"yaml tab indent", "c.yaml", "serve:\n\tlisten: x\n", []string{`:2: invalid YAML: found character that cannot start any token (YAML does not allow tabs for indentation; use spaces)`}},
		{"toml duplicate", "c.toml", "mode = \"on\"\nmode = \"off\"\n", []string{`: invalid TOML: key mode is already defined`}},
		{"whitespace only", "c.json", "  \n\t\n", []string{`: file is empty: want a JSON object with at least "mcpServers"`}},
		{"no extension", "config", "mode: on", []string{`: unknown config format (no extension): name the file .yaml, .yml, .json or .toml`}},
		{"follow-on errors dropped", "c.yaml", "mcpServers:\n  s:\n    command: ${NOPE}\n", []string{`: mcpServers.s.command: environment variable NOPE is not set`}},
		{"bad reference", "c.yaml", "audit: {file: \"${1X}\"}\n", []string{`: audit.file: invalid variable reference "${1X}": want ${NAME} or ${NAME:-default} (write $$ for a literal $)`}},
		{"url and stdio type", "c.json", `{"mcpServers": {"s": {"type": "stdio", "url": "https://x.example/mcp"}}}`, []string{`: mcpServers.s.type: stdio needs a command; a server with a url speaks streamable-http or sse`}},
		{"command and sse", "c.json", `{"mcpServers": {"s": {"command": "x", "transport": "sse"}}}`, []string{`: mcpServers.s.transport: sse needs a url; a server with a command speaks stdio`}},
		{"type contradicts transport", "c.json", `{"mcpServers": {"s": {"url": "https://x.example/mcp", "type": "sse", "transport": "streamable-http"}}}`, []string{`: mcpServers.s.type: type "sse" contradicts transport "streamable-http": give one of them`}},
		{"bad url", "c.json", `{"mcpServers": {"s": {"url": "ftp://user:pw@x.example/"}}}`, []string{`: mcpServers.s.url: invalid URL "ftp://****@x.example/": want http:// or https:// with a host`}},
		{"remote with env", "c.json", `{"mcpServers": {"s": {"url": "https://x.example/mcp", "env": {"A": "b"}}}}`, []string{`: mcpServers.s: args, env and cwd apply only to servers started with a command; a remote server takes headers`}},
		{"command with headers", "c.json", `{"mcpServers": {"s": {"command": "x", "headers": {"A": "b"}}}}`, []string{`: mcpServers.s.headers: only remote servers (url) send headers; pass settings to a command through env`}},
		{"bad header name", "c.json", `{"mcpServers": {"s": {"url": "https://x.example/", "headers": {"Bad Header": "b"}}}}`, []string{`: mcpServers.s.headers["Bad Header"]: invalid HTTP header name`}},
		{"server not an object", "c.json", `{"mcpServers": {"s": "npx foo"}}`, []string{`: mcpServers.s: expected an object, got "npx foo"`}},
		{"null in list", "c.json", `{"core_tools": ["bash", null]}`, []string{`: core_tools[1]: expected a string, got null`}},
		{"tool rule without match", "c.yaml", "tools: [{class: core}]\n", []string{`: tools[0].match: missing: want a glob on "server::tool" such as "github::*"`}},
		{"long value cut", "c.yaml", "tokenizer: " + strings.Repeat("x", 100) + "\n", []string{`: tokenizer: invalid value "` + strings.Repeat("x", 60) + `"...: want o200k_base or estimate`}},
		{"tool rule without class", "c.yaml", "tools: [{match: \"a::*\"}]\n", []string{`: tools[0].class: missing: want core, deferrable, unknown or disabled, or an override (name, description, description_append, keywords, args, annotations)`}},
		{"hook without command", "c.yaml", "hooks: [{match: \"*\"}]\n", []string{`: hooks[0].command: missing: a hook needs a command to run`}},
		{"empty prefix", "c.yaml", "deferrable_prefixes: [\"\"]\n", []string{`: deferrable_prefixes[0]: must not be empty`}},
		{"limits", "c.yaml", "search: {default_limit: 50, max_limit: 10}\n", []string{`: search.default_limit: must not exceed search.max_limit (10), got 50`}},
		{"embeddings scheme", "c.yaml", "search: {embeddings: {url: \"ftp://x.example/v1\", model: m}}\n", []string{`: search.embeddings.url: invalid URL "ftp://x.example/v1": want the API's base URL with http:// or https:// and a host, such as "http://127.0.0.1:11434/v1"`}},
		{"embeddings no host", "c.yaml", "search: {embeddings: {url: \"http:///v1\", model: m}}\n", []string{`: search.embeddings.url: invalid URL "http:///v1": want the API's base URL with http:// or https:// and a host, such as "http://127.0.0.1:11434/v1"`}},
		{"embeddings not a url", "c.yaml", "search: {embeddings: {url: \"127.0.0.1:11434\", model: m}}\n", []string{`: search.embeddings.url: invalid URL "****": want the API's base URL with http:// or https:// and a host, such as "http://127.0.0.1:11434/v1"`}},
		{"embeddings credentials", "c.yaml", "search: {embeddings: {url: \"https://u:sk-secret@x.example/v1\", model: m}}\n", []string{`: search.embeddings.url: invalid URL "https://****@x.example:443/v1": credentials in the URL would show wherever the URL does; put the key in an environment variable and name it in search.embeddings.api_key_env`}},
		{"embeddings query", "c.yaml", "search: {embeddings: {url: \"https://x.example/v1?api_key=sk-secret\", model: m}}\n", []string{`: search.embeddings.url: invalid URL "https://x.example:443/v1?api_key=****": want the API's base URL without a query or fragment (requests go to URL + "/embeddings")`}},
		{"embeddings no model", "c.yaml", "search: {embeddings: {url: \"http://127.0.0.1:11434/v1\"}}\n", []string{`: search.embeddings.model: missing: search.embeddings.url needs the embedding model's name, such as "nomic-embed-text"`}},
		{"embeddings negative timeout", "c.yaml", "search: {embeddings: {timeout: -1s}}\n", []string{`: search.embeddings.timeout: must not be negative, got -1s`}},
		{"embeddings weight zero", "c.yaml", "search: {embeddings: {weight: 0}}\n", []string{`: search.embeddings.weight: must be above 0 and at most 1, got 0 (to turn the rerank off, leave search.embeddings.url empty)`}},
		{"embeddings weight high", "c.yaml", "search: {embeddings: {weight: 1.5}}\n", []string{`: search.embeddings.weight: must be above 0 and at most 1, got 1.5 (to turn the rerank off, leave search.embeddings.url empty)`}},
		{"embeddings weight nan", "c.yaml", "search: {embeddings: {weight: .nan}}\n", []string{`: search.embeddings.weight: expected a finite number, got NaN`}},
		{"embeddings key in key env", "c.yaml", "search: {embeddings: {api_key_env: \"sk-live secret\"}}\n", []string{`: search.embeddings.api_key_env: not an environment variable name (value not shown): want the name of the variable holding the key, such as "OPENAI_API_KEY", not the key itself`}},
		{"embeddings key env unset", "c.yaml", "search: {embeddings: {url: \"http://127.0.0.1:11434/v1\", model: m, api_key_env: TB_TEST_UNSET_KEY}}\n", []string{`: search.embeddings.api_key_env: environment variable TB_TEST_UNSET_KEY is not set (it should hold the embeddings endpoint's key)`}},
		{"embeddings unknown key", "c.yaml", "search: {embeddings: {urll: \"http://x\"}}\n", []string{`: search.embeddings.urll: unknown key (did you mean url?)`}},
		{"restart order", "c.yaml", "restart: {initial: 1m, max: 1s}\n", []string{`: restart.max: must be at least restart.initial (1m0s), got 1s`}},
		{"origin", "c.yaml", "serve: {allowed_origins: [\"app.example.com\"]}\n", []string{`: serve.allowed_origins[0]: invalid origin "app.example.com": want scheme://host[:port], such as "https://app.example.com"`}},
		{"host", "c.yaml", "serve: {allowed_hosts: [\"https://gw.example.com:8080\"]}\n", []string{`: serve.allowed_hosts[0]: invalid host name "https://gw.example.com:8080": want a name without scheme or port, such as "toolbridge.example.com", or "*" for any`}},
		{"body timeout", "c.yaml", "serve: {body_timeout: 0s}\n", []string{`: serve.body_timeout: must be a positive duration such as "30s", got 0s`}},
		{"negative drain delay", "c.yaml", "serve: {drain_delay: -1s}\n", []string{`: serve.drain_delay: must not be negative, got -1s`}},
		{"port", "c.yaml", "serve: {listen: \"127.0.0.1:http\"}\n", []string{`: serve.listen: invalid port "http" in "127.0.0.1:http": want a number from 0 to 65535`}},
		{"empty host", "c.yaml", "serve: {listen: \":8080\"}\n", []string{`: serve.listen: an empty host (every interface) is not a loopback address: set serve.allow_remote: true (or --allow-remote) to accept connections from the network, or listen on 127.0.0.1`}},
		{"nan", "c.yaml", "threshold_pct: .nan\n", []string{`: threshold_pct: expected a finite number, got NaN`}},
		{"huge int", "c.json", `{"context_window": 1e30}`, []string{`: context_window: 1e+30 is out of range`}},
		{"huge float", "c.json", "{\n  \"threshold_pct\": 1e400}", []string{`:2:25: invalid JSON: number 1e400 is out of range`}},
		{"yaml timestamp", "c.yaml", "audit: {file: 2001-12-14}\n", []string{`: audit.file: expected a string, got the date/time 2001-12-14 00:00:00 +0000 UTC (quote it to make it text)`}},
		{"toml time", "c.toml", "[audit]\nfile = 07:32:00\n", []string{`: audit.file: expected a string, got the date/time 07:32:00 (quote it to make it text)`}},
		{"anchor key not at top", "c.yaml", "serve: {x-base: 1}\n", []string{`: serve.x-base: unknown key`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, tt.file, tt.content)
			_, err := Load(LoadOptions{Path: path})
			var want []string
			for _, w := range tt.want {
				want = append(want, path+w)
			}
			if got := errLines(err); !slices.Equal(got, want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func TestLoadValidSpecialCases(t *testing.T) {
	tests := []struct{ name, file, content string }{
		{"yaml comments only", "c.yaml", "# nothing yet\n"},
		{"json with BOM", "c.json", "\xef\xbb\xbf{\"mode\": \"on\"}"},
		{"ipv6 loopback", "c.yaml", "serve: {listen: \"[::1]:0\"}\n"},
		{"localhost", "c.yaml", "serve: {listen: \"localhost:8080\"}\n"},
		{"remote allowed", "c.yaml", "serve: {listen: \"0.0.0.0:8080\", allow_remote: true}\n"},
		{"yml extension", "c.yml", "mode: off\n"},
		{"upper-case extension", "c.YAML", "mode: off\n"},
		{"schema key", "c.json", `{"$schema": "https://example.com/s.json", "mcpServers": {}}`},
		{"cline keys", "c.json", `{"mcpServers": {"s": {"command": "x", "autoApprove": ["a"], "alwaysAllow": []}}}`},
		{"escaped dollar", "c.yaml", "mcpServers: {s: {command: x, args: [\"$$HOME\", \"5$\", \"$PATH\"]}}\n"},
		{"null server", "c.yaml", "mcpServers:\n"},
		{"yaml anchors under x-", "c.yaml", "x-node: &node {command: npx}\nmcpServers:\n  a: {<<: *node, args: [-y, a]}\n  b: *node\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Load(LoadOptions{Path: writeFile(t, tt.file, tt.content)}); err != nil {
				t.Errorf("Load: %v", err)
			}
		})
	}
}

func TestErrorType(t *testing.T) {
	_, err := Load(LoadOptions{Path: "testdata/does-not-exist.json"})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("errors.Is(%v, fs.ErrNotExist) = false", err)
	}
	_, err = Load(LoadOptions{Path: "testdata/bad/syntax.json"})
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("errors.As(%v, *Error) = false", err)
	}
	if e.Source != "testdata/bad/syntax.json" || e.Line != 5 || e.Column != 7 {
		t.Errorf("Error = %+v, want source testdata/bad/syntax.json at 5:7", e)
	}
	_, err = Load(LoadOptions{Path: "testdata/bad/missing_env.yaml"})
	if !errors.As(err, &e) || e.Key != "mcpServers.github.env.GITHUB_TOKEN" || !errors.Is(e, errUnset) {
		t.Errorf("first error = %+v, want key mcpServers.github.env.GITHUB_TOKEN wrapping errUnset", e)
	}
}

func BenchmarkLoad(b *testing.B) {
	for _, file := range []string{"testdata/full.yaml", "testdata/full.json", "testdata/full.toml", "testdata/claude_desktop_config.json"} {
		b.Run(filepath.Base(file), func(b *testing.B) {
			for b.Loop() {
				if _, err := Load(LoadOptions{Path: file, Environ: fullEnviron}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestEffectiveTimeouts(t *testing.T) {
	c := Default()
	if got := c.EffectiveConnectTimeout(Server{}); got != c.Timeouts.Connect {
		t.Errorf("connect timeout without override = %v", got)
	}
	if got := c.EffectiveCallTimeout(Server{CallTimeout: time.Second}); got != time.Second {
		t.Errorf("call timeout with override = %v", got)
	}
}
