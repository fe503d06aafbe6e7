package config

import (
	"flag"
	"reflect"
)

// flagSetting is a command-line flag that overrides a config key.
type flagSetting struct {
	setting
	isBool bool
	usage  string
}

// flagSettings lists the flags BindFlags registers, named after their keys.
func flagSettings() []flagSetting {
	return []flagSetting{
		{setting: setting{name: "mode", path: []string{"mode"}}, usage: "when to bridge: on, auto or off (overrides mode)"},
		{setting: setting{name: "threshold-pct", path: []string{"threshold_pct"}}, usage: "in auto mode, bridge when deferrable schemas reach this `percent` of the context window (overrides threshold_pct)"},
		{setting: setting{name: "context-window", path: []string{"context_window"}}, usage: "the model's context window in `tokens` (overrides context_window)"},
		{setting: setting{name: "min-tokens", path: []string{"min_tokens"}}, usage: "also bridge once deferrable schemas reach this many `tokens` (overrides min_tokens)"},
		{setting: setting{name: "tokenizer", path: []string{"tokenizer"}}, usage: "token counting: o200k_base or estimate (overrides tokenizer)"},
		{setting: setting{name: "disclosure", path: []string{"disclosure"}}, usage: "tools found by tool_search: bridge or activate (overrides disclosure)"},
		{setting: setting{name: "transport", path: []string{"serve", "transport"}}, usage: "downstream transport: stdio or http (overrides serve.transport)"},
		{setting: setting{name: "listen", path: []string{"serve", "listen"}}, usage: "HTTP listen `host:port` (overrides serve.listen)"},
		{setting: setting{name: "allow-remote", path: []string{"serve", "allow_remote"}}, isBool: true, usage: "allow listening on a non-loopback address (overrides serve.allow_remote)"},
		{setting: setting{name: "telemetry", path: []string{"telemetry", "exporter"}}, usage: "telemetry exporter: none, otlp or stdout (overrides telemetry.exporter)"},
		{setting: setting{name: "startup-wait", path: []string{"startup_wait"}}, usage: "how long the first tools/list waits for servers still connecting, such as `30s` for npx servers on a busy machine (overrides startup_wait)"},
	}
}

// BindFlags registers on fs the flags that override config keys: --mode,
// --threshold-pct, --context-window, --min-tokens, --tokenizer,
// --disclosure, --transport (serve.transport), --listen (serve.listen),
// --allow-remote (serve.allow_remote), --telemetry (telemetry.exporter)
// and --startup-wait (startup_wait).
// Pass the parsed fs as LoadOptions.Flags: only the flags the user set
// override anything, and their values are checked by Load with the same
// messages as the file's.
func BindFlags(fs *flag.FlagSet) {
	for _, f := range flagSettings() {
		fs.Var(&flagValue{isBool: f.isBool}, f.name, f.usage)
	}
}

// loadFlags applies the flags the user set onto root. It reads flags by
// name, so it works whether or not they were registered by BindFlags.
func loadFlags(fs *flag.FlagSet, root reflect.Value, prov provenance) []error {
	byName := map[string]flagSetting{}
	for _, f := range flagSettings() {
		byName[f.name] = f
	}
	var errs []error
	fs.Visit(func(f *flag.Flag) {
		s, ok := byName[f.Name]
		if !ok {
			return
		}
		s.setting.name = "flag --" + f.Name
		errs = append(errs, setLeaf(s.setting, f.Value.String(), root, prov)...)
	})
	return errs
}

// flagValue holds a flag's text; Load parses it, so a bad value gets the
// same message as in the file. Defaults stay empty so that -help does not
// show a value the config file may override.
type flagValue struct {
	value  string
	isBool bool
}

func (v *flagValue) String() string     { return v.value }
func (v *flagValue) Set(s string) error { v.value = s; return nil }
func (v *flagValue) IsBoolFlag() bool   { return v.isBool }
