package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/knadh/koanf/providers/env/v2"
)

// Environment variables.
//
// Every config key outside mcpServers, tools and hooks can be set as
// TOOLBRIDGE_ followed by the key in upper case, with "__" between nesting
// levels:
//
//	TOOLBRIDGE_MODE=on                   mode
//	TOOLBRIDGE_THRESHOLD_PCT=5           threshold_pct
//	TOOLBRIDGE_SERVE__LISTEN=:9000       serve.listen
//	TOOLBRIDGE_TELEMETRY__EXPORTER=otlp  telemetry.exporter
//	TOOLBRIDGE_CORE_TOOLS=bash,read_file core_tools (lists are comma-separated;
//	                                     an empty value is an empty list)
//
// TOOLBRIDGE_AUTH_TOKEN is a short alias of TOOLBRIDGE_SERVE__AUTH_TOKEN; if
// both are set the long form wins. The variables in envAllowed are not
// settings and are left alone. Any other variable starting with TOOLBRIDGE_
// is an error, so a typo cannot silently do nothing.

const envPrefix = "TOOLBRIDGE_"

// envAllowed are the TOOLBRIDGE_* variables that are not config keys.
var envAllowed = []string{
	EnvConfigPath,               // the config file, see LoadOptions.Path
	DefaultTokenKeyEnv,          // the key of the tokens in Redis, see Redis.TokenKeyEnv
	"TOOLBRIDGE_HOOK_EVENT",     // set for hook commands, which may run toolbridge
	"TOOLBRIDGE_SERVER",         // set for hook commands
	"TOOLBRIDGE_TOOL",           // set for hook commands
	"TOOLBRIDGE_TEST_CACHE",     // the test suite's cache directory
	"TOOLBRIDGE_TEST_ARTIFACTS", // where the test suite saves screenshots
}

// envAuthTokenAlias is the short form of TOOLBRIDGE_SERVE__AUTH_TOKEN.
const envAuthTokenAlias = "TOOLBRIDGE_AUTH_TOKEN"

// setting is one config key that can be set from outside the file.
type setting struct {
	name string   // environment variable or flag name
	path []string // key path
	list bool     // a list, given comma-separated
}

// envSettings lists every variable that sets a config key, derived from the
// Config type so a new field is settable without editing a table. Aliases
// come first so that the canonical names win when both are set.
func envSettings() []setting {
	out := []setting{{name: envAuthTokenAlias, path: []string{"serve", "auth_token"}}}
	var walk func(t reflect.Type, path []string)
	walk = func(t reflect.Type, path []string) {
		for i := range t.NumField() {
			f := t.Field(i)
			p := append(path[:len(path):len(path)], f.Tag.Get("koanf"))
			switch {
			case f.Type.Kind() == reflect.Struct && f.Type != durationType:
				walk(f.Type, p)
			case f.Type.Kind() == reflect.Map:
				// mcpServers: names keep their case, which env names cannot.
			case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() != reflect.String:
				// tools and hooks: lists of objects belong in the file.
			default:
				out = append(out, setting{
					name: envPrefix + strings.ToUpper(strings.Join(p, "__")),
					path: p,
					list: f.Type.Kind() == reflect.Slice,
				})
			}
		}
	}
	walk(configType, nil)
	return out
}

// loadEnv applies the TOOLBRIDGE_* variables in environ onto root.
func loadEnv(environ []string, root reflect.Value, prov provenance) []error {
	// With no delimiter the provider returns the variables flat, by name.
	vars, err := env.Provider("", env.Opt{
		Prefix:      envPrefix,
		EnvironFunc: func() []string { return environ },
	}).Read()
	if err != nil {
		return []error{fmt.Errorf("reading the environment: %w", err)}
	}
	settings := envSettings()
	// Suggestions compare what follows the shared prefix, or every name
	// would look close to every other.
	suffixes := make([]string, 0, len(settings)+1)
	for _, s := range settings {
		suffixes = append(suffixes, strings.TrimPrefix(s.name, envPrefix))
	}
	for _, name := range envAllowed {
		suffixes = append(suffixes, strings.TrimPrefix(name, envPrefix))
	}

	var errs []error
	for _, s := range settings {
		v, ok := vars[s.name]
		if !ok {
			continue
		}
		delete(vars, s.name)
		errs = append(errs, setLeaf(s, v.(string), root, prov)...)
	}
	for _, name := range envAllowed {
		delete(vars, name)
	}
	for _, name := range sortedKeys(vars) {
		suffix := strings.TrimPrefix(name, envPrefix)
		hint := ""
		if s := suggestEnv(suffix, suffixes); s != "" {
			hint = " (did you mean " + envPrefix + s + "?)"
		}
		for _, fileOnly := range []string{"MCPSERVERS", "TOOLS", "HOOKS"} {
			if strings.HasPrefix(strings.ToUpper(suffix), fileOnly) {
				hint = " (mcpServers, tools and hooks are set in the config file)"
			}
		}
		errs = append(errs, &Error{Source: name, Msg: "not a toolbridge setting" + hint})
	}
	return errs
}

// suggestEnv guesses the variable meant by suffix (the name without
// TOOLBRIDGE_). A name that ends one of the candidates wins first, since the
// usual slip is leaving out the section: TOKEN for AUTH_TOKEN, LISTEN for
// SERVE__LISTEN.
func suggestEnv(suffix string, candidates []string) string {
	best := ""
	up := strings.ToUpper(suffix)
	if slices.Contains(candidates, up) {
		return up // only the case was wrong
	}
	for _, c := range candidates {
		if up != "" && strings.HasSuffix(c, "_"+up) && (best == "" || len(c) < len(best)) {
			best = c
		}
	}
	if best != "" {
		return best
	}
	return suggest(suffix, candidates)
}

// setLeaf decodes one environment or flag value onto its key, with the
// variable or flag as the error source.
func setLeaf(s setting, value string, root reflect.Value, prov provenance) []error {
	var raw any = value
	if s.list {
		items := []any{}
		for item := range strings.SplitSeq(value, ",") {
			if item = strings.TrimSpace(item); item != "" {
				items = append(items, item)
			}
		}
		raw = items
	}
	for _, k := range slices.Backward(s.path) {
		raw = map[string]any{k: raw}
	}
	d := &decoder{source: s.name, prov: prov}
	d.value(nil, raw, root)
	return d.errs
}
