package config

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// parsedFlags returns a flag set with BindFlags' flags, parsed from args.
func parsedFlags(t *testing.T, args ...string) *flag.FlagSet {
	t.Helper()
	fs := flag.NewFlagSet("toolbridge", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	return fs
}

func TestPrecedence(t *testing.T) {
	file := writeFile(t, "c.yaml", `
mode: off
threshold_pct: 20
serve: {listen: "127.0.0.1:7000"}
`)
	env := []string{"TOOLBRIDGE_THRESHOLD_PCT=30", "TOOLBRIDGE_SERVE__LISTEN=127.0.0.1:7001"}
	type result struct {
		mode      Mode
		threshold float64
		listen    string
	}
	d := Default()
	tests := []struct {
		name    string
		path    string
		environ []string
		args    []string
		want    result
	}{
		{"defaults", "", nil, nil, result{d.Mode, d.ThresholdPct, d.Serve.Listen}},
		{"file over defaults", file, nil, nil, result{ModeOff, 20, "127.0.0.1:7000"}},
		{"env over defaults", "", env, nil, result{d.Mode, 30, "127.0.0.1:7001"}},
		{"env over file", file, env, nil, result{ModeOff, 30, "127.0.0.1:7001"}},
		{"flags over env", file, env, []string{"--threshold-pct", "40"}, result{ModeOff, 40, "127.0.0.1:7001"}},
		{"flags over file", file, nil, []string{"--listen=127.0.0.1:7002"}, result{ModeOff, 20, "127.0.0.1:7002"}},
		{"unset flags change nothing", file, env, []string{}, result{ModeOff, 30, "127.0.0.1:7001"}},
		{"a flag set to the default still overrides", file, env, []string{"--mode", "auto"}, result{ModeAuto, 30, "127.0.0.1:7001"}},
		{"every layer", file, append(slices.Clone(env), "TOOLBRIDGE_MODE=on"), []string{"--threshold-pct=50", "--listen", "127.0.0.1:7003"}, result{ModeOn, 50, "127.0.0.1:7003"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := LoadOptions{Path: tt.path, Environ: tt.environ}
			if tt.args != nil {
				opts.Flags = parsedFlags(t, tt.args...)
			}
			c, err := Load(opts)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got := (result{c.Mode, c.ThresholdPct, c.Serve.Listen}); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestEnvironment(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		check   func(c *Config) bool
	}{
		{"mode", []string{"TOOLBRIDGE_MODE=yes"}, func(c *Config) bool { return c.Mode == ModeOn }},
		{"threshold", []string{"TOOLBRIDGE_THRESHOLD_PCT=2.5"}, func(c *Config) bool { return c.ThresholdPct == 2.5 }},
		{"nested listen", []string{"TOOLBRIDGE_SERVE__LISTEN=127.0.0.1:9999"}, func(c *Config) bool { return c.Serve.Listen == "127.0.0.1:9999" }},
		{"nested exporter", []string{"TOOLBRIDGE_TELEMETRY__EXPORTER=stdout"}, func(c *Config) bool { return c.Telemetry.Exporter == ExporterStdout }},
		{"bool", []string{"TOOLBRIDGE_SERVE__ALLOW_REMOTE=true", "TOOLBRIDGE_SERVE__LISTEN=0.0.0.0:80"}, func(c *Config) bool { return c.Serve.AllowRemote }},
		{"duration", []string{"TOOLBRIDGE_TIMEOUTS__CALL=2m"}, func(c *Config) bool { return c.Timeouts.Call == 2*time.Minute }},
		{"int64", []string{"TOOLBRIDGE_MAX_RESULT_BYTES=1024"}, func(c *Config) bool { return c.MaxResultBytes == 1024 }},
		{"audit file", []string{"TOOLBRIDGE_AUDIT__FILE=/tmp/a.jsonl"}, func(c *Config) bool { return c.Audit.File == "/tmp/a.jsonl" }},
		{"list", []string{"TOOLBRIDGE_CORE_TOOLS=bash, read_file,,"}, func(c *Config) bool { return slices.Equal(c.CoreTools, []string{"bash", "read_file"}) }},
		{"empty list", []string{"TOOLBRIDGE_CORE_TOOLS="}, func(c *Config) bool { return c.CoreTools != nil && len(c.CoreTools) == 0 }},
		{"auth token alias", []string{"TOOLBRIDGE_AUTH_TOKEN=short"}, func(c *Config) bool { return c.Serve.AuthToken == "short" }},
		{"long form beats alias", []string{"TOOLBRIDGE_SERVE__AUTH_TOKEN=long", "TOOLBRIDGE_AUTH_TOKEN=short"}, func(c *Config) bool { return c.Serve.AuthToken == "long" }},
		{"no expansion of env values", []string{"TOOLBRIDGE_AUDIT__FILE=${HOME}/a", "HOME=/h"}, func(c *Config) bool { return c.Audit.File == "${HOME}/a" }},
		{"other variables ignored", []string{"toolbridge_mode=on", "XTOOLBRIDGE_MODE=on", "PATH=/bin"}, func(c *Config) bool { return c.Mode == ModeAuto }},
		{"allowed non-settings", []string{"TOOLBRIDGE_HOOK_EVENT=before", "TOOLBRIDGE_SERVER=s", "TOOLBRIDGE_TOOL=t", "TOOLBRIDGE_TEST_CACHE=/tmp/c", "TOOLBRIDGE_TEST_ARTIFACTS=/tmp/a"}, func(c *Config) bool { return c.Mode == ModeAuto }},
		{"later entry wins", []string{"TOOLBRIDGE_MODE=on", "TOOLBRIDGE_MODE=off"}, func(c *Config) bool { return c.Mode == ModeOff }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(LoadOptions{Environ: tt.environ})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !tt.check(c) {
				t.Errorf("environment %q not applied: %+v", tt.environ, *c)
			}
		})
	}
}

func TestEnvironmentConfigPath(t *testing.T) {
	c, err := Load(LoadOptions{Environ: []string{EnvConfigPath + "=testdata/full.yaml", "GITHUB_TOKEN=x", "SEARCH_KEY=y"}})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.Mode != ModeOn || len(c.Servers) != 2 {
		t.Errorf("TOOLBRIDGE_CONFIG not read: mode %q, %d servers", c.Mode, len(c.Servers))
	}
	// An explicit path wins over the variable.
	c, err = Load(LoadOptions{Path: "testdata/claude_desktop_config.json", Environ: []string{EnvConfigPath + "=testdata/full.yaml"}})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if _, ok := c.Servers["filesystem"]; !ok {
		t.Errorf("LoadOptions.Path did not win over %s", EnvConfigPath)
	}
}

func TestEnvironmentErrors(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		want    []string
	}{
		{"unknown with suggestion", []string{"TOOLBRIDGE_THRESHOLD=5"}, []string{"TOOLBRIDGE_THRESHOLD: not a toolbridge setting (did you mean TOOLBRIDGE_THRESHOLD_PCT?)"}},
		{"single underscore nesting", []string{"TOOLBRIDGE_SERVE_LISTEN=:80"}, []string{"TOOLBRIDGE_SERVE_LISTEN: not a toolbridge setting (did you mean TOOLBRIDGE_SERVE__LISTEN?)"}},
		{"lower case", []string{"TOOLBRIDGE_mode=on"}, []string{"TOOLBRIDGE_mode: not a toolbridge setting (did you mean TOOLBRIDGE_MODE?)"}},
		{"servers are not settable", []string{"TOOLBRIDGE_MCPSERVERS=x"}, []string{"TOOLBRIDGE_MCPSERVERS: not a toolbridge setting (mcpServers, tools and hooks are set in the config file)"}},
		{"section left out", []string{"TOOLBRIDGE_TOKEN=x"}, []string{"TOOLBRIDGE_TOKEN: not a toolbridge setting (did you mean TOOLBRIDGE_AUTH_TOKEN?)"}},
		{"config typo", []string{"TOOLBRIDGE_CONFG=x.yaml"}, []string{"TOOLBRIDGE_CONFG: not a toolbridge setting (did you mean TOOLBRIDGE_CONFIG?)"}},
		{"nothing close", []string{"TOOLBRIDGE_QQQQQQQQ=1"}, []string{"TOOLBRIDGE_QQQQQQQQ: not a toolbridge setting"}},
		{"bad number", []string{"TOOLBRIDGE_THRESHOLD_PCT=ten"}, []string{`TOOLBRIDGE_THRESHOLD_PCT: threshold_pct: expected a number, got "ten"`}},
		{"bad enum", []string{"TOOLBRIDGE_MODE=maybe"}, []string{`TOOLBRIDGE_MODE: mode: invalid value "maybe": want on, auto or off`}},
		{"bad duration", []string{"TOOLBRIDGE_TIMEOUTS__CONNECT=30"}, []string{`TOOLBRIDGE_TIMEOUTS__CONNECT: timeouts.connect: expected a duration with a unit such as "30s" or "1m30s", got "30" (a bare number has no unit)`}},
		{"remote listen", []string{"TOOLBRIDGE_SERVE__LISTEN=10.0.0.1:80"}, []string{`TOOLBRIDGE_SERVE__LISTEN: serve.listen: "10.0.0.1" is not a loopback address: set serve.allow_remote: true (or --allow-remote) to accept connections from the network, or listen on 127.0.0.1`}},
		{"all reported", []string{"TOOLBRIDGE_MODEE=on", "TOOLBRIDGE_CONTEXT_WINDOW=big"}, []string{
			`TOOLBRIDGE_CONTEXT_WINDOW: context_window: expected a whole number, got "big"`,
			`TOOLBRIDGE_MODEE: not a toolbridge setting (did you mean TOOLBRIDGE_MODE?)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(LoadOptions{Environ: tt.environ})
			if got := errLines(err); !slices.Equal(got, tt.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestEnvSettingsCoverScalarKeys(t *testing.T) {
	names := map[string]bool{}
	for _, s := range envSettings() {
		if names[s.name] {
			t.Errorf("duplicate variable %s", s.name)
		}
		names[s.name] = true
	}
	for _, want := range []string{
		"TOOLBRIDGE_MODE", "TOOLBRIDGE_THRESHOLD_PCT", "TOOLBRIDGE_CONTEXT_WINDOW", "TOOLBRIDGE_MIN_TOKENS",
		"TOOLBRIDGE_TOKENIZER", "TOOLBRIDGE_CORE_TOOLS", "TOOLBRIDGE_NEVER_DEFER", "TOOLBRIDGE_DEFERRABLE_PREFIXES",
		"TOOLBRIDGE_DISCLOSURE", "TOOLBRIDGE_SEARCH__DEFAULT_LIMIT", "TOOLBRIDGE_SERVE__TRANSPORT",
		"TOOLBRIDGE_SERVE__LISTEN", "TOOLBRIDGE_SERVE__AUTH_TOKEN", "TOOLBRIDGE_AUTH_TOKEN",
		"TOOLBRIDGE_SERVE__SHUTDOWN_GRACE", "TOOLBRIDGE_TIMEOUTS__CONNECT", "TOOLBRIDGE_RESTART__MAX",
		"TOOLBRIDGE_MAX_RESULT_BYTES", "TOOLBRIDGE_TELEMETRY__EXPORTER", "TOOLBRIDGE_TELEMETRY__RECORD_CONTENT",
		"TOOLBRIDGE_AUDIT__FILE",
	} {
		if !names[want] {
			t.Errorf("%s is not settable", want)
		}
	}
	for _, not := range []string{"TOOLBRIDGE_MCPSERVERS", "TOOLBRIDGE_TOOLS", "TOOLBRIDGE_HOOKS", "TOOLBRIDGE_SERVE"} {
		if names[not] {
			t.Errorf("%s should not be settable", not)
		}
	}
}

func TestFlags(t *testing.T) {
	tests := []struct {
		args  []string
		check func(c *Config) bool
	}{
		{[]string{"--mode", "off"}, func(c *Config) bool { return c.Mode == ModeOff }},
		{[]string{"--mode=TRUE"}, func(c *Config) bool { return c.Mode == ModeOn }},
		{[]string{"--threshold-pct", "0"}, func(c *Config) bool { return c.ThresholdPct == 0 }},
		{[]string{"--context-window", "32000"}, func(c *Config) bool { return c.ContextWindow == 32000 }},
		{[]string{"--min-tokens", "900"}, func(c *Config) bool { return c.MinTokens == 900 }},
		{[]string{"--tokenizer", "estimate"}, func(c *Config) bool { return c.Tokenizer == TokenizerEstimate }},
		{[]string{"--disclosure", "activate"}, func(c *Config) bool { return c.Disclosure == DisclosureActivate }},
		{[]string{"--transport", "http"}, func(c *Config) bool { return c.Serve.Transport == ServeHTTP }},
		{[]string{"--listen", "127.0.0.1:1234"}, func(c *Config) bool { return c.Serve.Listen == "127.0.0.1:1234" }},
		{[]string{"--allow-remote", "--listen", "0.0.0.0:1"}, func(c *Config) bool { return c.Serve.AllowRemote && c.Serve.Listen == "0.0.0.0:1" }},
		{[]string{"--allow-remote=false"}, func(c *Config) bool { return !c.Serve.AllowRemote }},
		{[]string{"--telemetry", "otlp"}, func(c *Config) bool { return c.Telemetry.Exporter == ExporterOTLP }},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			c, err := Load(LoadOptions{Flags: parsedFlags(t, tt.args...)})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !tt.check(c) {
				t.Errorf("flags %q not applied: %+v", tt.args, *c)
			}
		})
	}
}

func TestFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--threshold-pct", "ten"}, []string{`flag --threshold-pct: threshold_pct: expected a number, got "ten"`}},
		{[]string{"--threshold-pct", "101"}, []string{`flag --threshold-pct: threshold_pct: must be between 0 and 100, got 101`}},
		{[]string{"--mode", "sometimes"}, []string{`flag --mode: mode: invalid value "sometimes": want on, auto or off`}},
		{[]string{"--transport", "htp"}, []string{`flag --transport: serve.transport: invalid value "htp": want stdio or http (did you mean http?)`}},
		{[]string{"--listen", "0.0.0.0:80"}, []string{`flag --listen: serve.listen: "0.0.0.0" is not a loopback address: set serve.allow_remote: true (or --allow-remote) to accept connections from the network, or listen on 127.0.0.1`}},
		{[]string{"--context-window", "-5"}, []string{`flag --context-window: context_window: must be greater than 0, got -5`}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, err := Load(LoadOptions{Flags: parsedFlags(t, tt.args...)})
			if got := errLines(err); !slices.Equal(got, tt.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestFlagsRegisteredElsewhere(t *testing.T) {
	// Load reads flags by name, whatever registered them; flags it does not
	// know are left alone.
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("mode", "auto", "")
	fs.Bool("verbose", false, "")
	fs.String("config", "", "")
	if err := fs.Parse([]string{"-mode", "off", "-verbose", "-config", "x.yaml"}); err != nil {
		t.Fatal(err)
	}
	c, err := Load(LoadOptions{Flags: fs})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.Mode != ModeOff {
		t.Errorf("mode = %q, want off", c.Mode)
	}
}

func TestBindFlagsHelpShowsNoDefaults(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	BindFlags(fs)
	var b strings.Builder
	fs.SetOutput(&b)
	fs.PrintDefaults()
	help := b.String()
	for _, f := range flagSettings() {
		if !strings.Contains(help, "-"+f.name) {
			t.Errorf("help lacks -%s", f.name)
		}
	}
	if strings.Contains(help, "(default") {
		t.Errorf("help shows defaults the config file may override:\n%s", help)
	}
}
