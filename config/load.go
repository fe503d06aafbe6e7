package config

import (
	"errors"
	"flag"
	"fmt"
	"reflect"
	"strings"
)

// LoadOptions say where Load reads the configuration from.
type LoadOptions struct {
	// Path is the config file; "" means the file named by the
	// TOOLBRIDGE_CONFIG environment variable, or none if that is unset too.
	// The format is chosen by extension: .yaml/.yml, .json or .toml.
	Path string
	// Environ is the environment as os.Environ returns it. It supplies the
	// TOOLBRIDGE_* overrides and the values of ${VAR} references; Load reads
	// no other environment.
	Environ []string
	// Flags, if not nil, override the file and environment with the flags
	// the user actually set (see BindFlags); flags left at their defaults
	// change nothing.
	Flags *flag.FlagSet
	// Defaults, if not nil, replaces Default() as the bottom layer: a
	// command whose defaults differ (the demo bridges unless told
	// otherwise) still lets the file, environment and flags override them.
	// The result may share its maps and slices: pass a fresh value.
	Defaults *Config
}

// File returns the config file Load reads: Path, else the one
// TOOLBRIDGE_CONFIG names, else "" (no file).
func (o LoadOptions) File() string {
	if o.Path != "" {
		return o.Path
	}
	path, _ := environLookup(o.Environ)(EnvConfigPath)
	return path
}

// EnvConfigPath is the environment variable naming the config file when
// LoadOptions.Path is empty. It is the one TOOLBRIDGE_* variable that is not
// a config key.
const EnvConfigPath = "TOOLBRIDGE_CONFIG"

// Load builds the configuration from the built-in defaults, the config file,
// the TOOLBRIDGE_* environment variables and the flags, in that order, and
// validates it.
//
// Each layer overrides only the keys it gives. Objects merge key by key
// (mcpServers, env and headers included); lists replace the list below them
// whole, so "core_tools: []" empties the default set while leaving
// core_tools out keeps it; a null value (YAML "key:" with nothing after it)
// changes nothing.
//
// In the file, keys are case-sensitive and matched exactly; server names
// and env names keep their case and may contain dots. Unknown keys are
// errors, except the ones Claude Desktop and other MCP clients write into
// their own files (see ignoredKeys) and top-level keys starting with "x-",
// which may hold YAML anchors. String values may reference the environment
// as ${VAR} or ${VAR:-default}; "$$" is a literal "$" (see expand.go). A
// disabled server may reference variables that are not set. Durations are
// Go duration strings such as "30s" or "1m30s". Modes and booleans accept
// true/false, yes/no, on/off and 1/0 in any case.
//
// Environment variables are described in env.go, flags at BindFlags.
//
// On error the Config is nil and the error joins every problem found (each
// an *Error naming its source and key path), so a user can fix them all at
// once.
func Load(opts LoadOptions) (*Config, error) {
	lookup := environLookup(opts.Environ)
	path := opts.File()

	cfg := Default()
	if opts.Defaults != nil {
		cfg = *opts.Defaults
	}
	root := reflect.ValueOf(&cfg).Elem()
	prov := provenance{}
	var errs []error
	var exp expansions
	fileOK := true
	if path != "" {
		raw, order, err := readFile(path)
		if err != nil {
			errs = append(errs, err)
			fileOK = false
		} else {
			cfg.serverOrder = order
			d := &decoder{source: path, lookup: lookup, prov: prov, exp: &exp}
			d.value(nil, raw, root)
			errs = append(errs, d.errs...)
		}
	}
	errs = append(errs, loadEnv(opts.Environ, root, prov)...)
	if opts.Flags != nil {
		errs = append(errs, loadFlags(opts.Flags, root, prov)...)
	}

	normalize(&cfg)
	cfg.StateDir = resolveStateDir(cfg.StateDir, lookup)
	// Without the file the merged config is not what the user wrote; its
	// validation errors would only mislead.
	if fileOK {
		errs = append(errs, dropFollowOns(validate(&cfg, prov), errs)...)
		errs = append(errs, checkKeyEnv(&cfg, lookup, prov)...)
	}
	if len(errs) > 0 {
		exp.hideValues(errs)
		return nil, errors.Join(errs...)
	}
	exp.attach(&cfg)
	for name, s := range cfg.Servers {
		s.fullURLs = cfg.ShowFullURLs
		cfg.Servers[name] = s
	}
	return &cfg, nil
}

// dropFollowOns removes validation errors about keys that already have a
// decoding error, or whose parent or child does: a server whose command
// names an unset variable is not also "missing a command".
func dropFollowOns(verrs, decodeErrs []error) []error {
	var bad []string
	for _, err := range decodeErrs {
		var e *Error
		if errors.As(err, &e) && e.Key != "" {
			bad = append(bad, e.Key)
		}
	}
	if len(bad) == 0 {
		return verrs
	}
	out := verrs[:0]
	for _, err := range verrs {
		var e *Error
		if errors.As(err, &e) && e.Key != "" && relatedAny(e.Key, bad) {
			continue
		}
		out = append(out, err)
	}
	return out
}

// relatedAny reports whether key is one of keys, or an ancestor or
// descendant of one.
func relatedAny(key string, keys []string) bool {
	for _, k := range keys {
		if k == key || isUnder(k, key) || isUnder(key, k) {
			return true
		}
	}
	return false
}

// isUnder reports whether path child lies below path parent.
func isUnder(child, parent string) bool {
	return strings.HasPrefix(child, parent) && len(child) > len(parent) &&
		(child[len(parent)] == '.' || child[len(parent)] == '[')
}

// checkKeyEnv reports a search.embeddings.api_key_env that names a
// variable the environment does not set: the endpoint would refuse every
// request, and the rerank would silently never run.
func checkKeyEnv(c *Config, lookup func(string) (string, bool), prov provenance) []error {
	e := c.Search.Embeddings
	if !e.Enabled() || e.APIKeyEnv == "" || !envName.MatchString(e.APIKeyEnv) {
		return nil
	}
	if v, ok := lookup(e.APIKeyEnv); ok && v != "" {
		return nil
	}
	p := keyPath{}.key("search").key("embeddings").key("api_key_env")
	return []error{&Error{Source: prov.sourceOf(p), Key: p.String(), Msg: fmt.Sprintf("environment variable %s is not set (it should hold the embeddings endpoint's key)", e.APIKeyEnv)}}
}
