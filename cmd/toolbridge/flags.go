package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
)

// Which config-key flags (config.BindFlags) a command honours. Each
// command's help lists only the flags that change what it does.
var (
	// allKeyFlags: serve, demo and config check take every one.
	allKeyFlags []string
	// decisionKeyFlags change the classification and the activation
	// decision that tools reports.
	decisionKeyFlags = []string{"mode", "threshold-pct", "context-window", "min-tokens", "tokenizer"}
	// noKeyFlags: search, describe and call force bridge mode on and use
	// none of the others.
	noKeyFlags = []string{}
)

// configFlags are the flags of a command that loads the config: --config
// (-c) and the config-key flags it honours.
type configFlags struct {
	cmd  *cobra.Command // the command the flags belong to, for usage errors
	path string
	// keys holds the config-key flags in the form config.Load reads:
	// a standard flag.FlagSet whose set flags override the file.
	keys *flag.FlagSet
	// defaults, if not nil, replaces config.Default() under the file.
	defaults *config.Config
	// loaded, if not nil, is told every config load gives (the stderr
	// writer learns show_full_urls from it).
	loaded func(*config.Config)
}

// configFlags adds --config and the config-key flags named in keys (nil:
// all of them) to cmd.
func (a *app) configFlags(cmd *cobra.Command, keys []string) *configFlags {
	f := &configFlags{cmd: cmd, keys: flag.NewFlagSet(cmd.Name(), flag.ContinueOnError), loaded: a.configLoaded}
	cmd.Flags().StringVarP(&f.path, "config", "c", "", "config `FILE` (YAML, JSON or TOML; a Claude Desktop config works as is); default $"+config.EnvConfigPath)
	config.BindFlags(f.keys)
	f.keys.VisitAll(func(gf *flag.Flag) {
		if keys == nil || contains(keys, gf.Name) {
			cmd.Flags().AddFlag(keyFlag(f.keys, gf))
		}
	})
	return f
}

// keyFlag shows a standard flag to cobra. Setting it sets it on fs, so
// fs remembers it was given: config.Load overrides only the flags the
// user set.
func keyFlag(fs *flag.FlagSet, gf *flag.Flag) *pflag.Flag {
	v := keyValue{fs: fs, name: gf.Name, typ: "string"}
	pf := &pflag.Flag{Name: gf.Name, Usage: gf.Usage, Value: v}
	if b, ok := gf.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		v.typ = "bool"
		pf.Value = v
		pf.NoOptDefVal = "true"
	}
	return pf
}

// keyValue is a pflag.Value backed by a flag in a standard FlagSet.
type keyValue struct {
	fs   *flag.FlagSet
	name string
	typ  string
}

func (v keyValue) String() string     { return v.fs.Lookup(v.name).Value.String() }
func (v keyValue) Set(s string) error { return v.fs.Set(v.name, s) }
func (v keyValue) Type() string       { return v.typ }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// options are the LoadOptions the flags stand for, for config.Load and
// for reloading.
func (f *configFlags) options(environ []string) config.LoadOptions {
	return config.LoadOptions{Path: f.path, Environ: environ, Flags: f.keys, Defaults: f.defaults}
}

// load loads the config the flags point at. A flag whose value is wrong
// whatever the file says (--mode maybe, --transport htp) is a usage error,
// exit code 2, as a malformed flag is; a file or environment that is
// wrong is a failed command.
func (f *configFlags) load(environ []string) (*config.Config, error) {
	cfg, err := config.Load(f.options(environ))
	if err != nil {
		if ferr := f.flagErrors(); ferr != nil {
			return nil, usageError{cmd: f.cmd, err: fmt.Errorf("invalid flag value:\n%w", indentErrors(ferr))}
		}
		return nil, fmt.Errorf("loading config:\n%w", indentErrors(err))
	}
	if f.loaded != nil {
		f.loaded(cfg)
	}
	return cfg, nil
}

// flagErrors validates the flags the user set over the built-in defaults
// alone (no file, no environment) and returns the errors config.Load
// attributes to a flag ("flag --mode: ..."): those are wrong in the
// command line itself, whatever the file says.
func (f *configFlags) flagErrors() error {
	set := false
	f.keys.Visit(func(*flag.Flag) { set = true })
	if !set {
		return nil
	}
	_, err := config.Load(config.LoadOptions{Flags: f.keys})
	if err == nil {
		return nil
	}
	var lines []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if strings.HasPrefix(l, "flag --") {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return errors.New(strings.Join(lines, "\n"))
}

// errNoServers is what the commands that inspect or call the configured
// servers say when there are none.
var errNoServers = errors.New("no servers configured: give the config file with -c FILE (or $" + config.EnvConfigPath +
	"); a Claude Desktop config works as is. 'toolbridge demo' serves example servers without one")

// loadWithServers loads the config and its servers, and refuses an empty
// server list: a command that lists or calls tools has nothing to do then.
func (f *configFlags) loadWithServers(environ []string) (*config.Config, []upstream.Spec, error) {
	cfg, err := f.load(environ)
	if err != nil {
		return nil, nil, err
	}
	specs := upstream.SpecsFromConfig(cfg)
	if len(specs) == 0 {
		return nil, nil, errNoServers
	}
	return cfg, specs, nil
}

// verboseFlag adds -v to cmd and returns the logger it selects.
func verboseFlag(cmd *cobra.Command) func(w io.Writer) *slog.Logger {
	verbose := cmd.Flags().BoolP("verbose", "v", false, "log debug messages to stderr")
	return func(w io.Writer) *slog.Logger {
		level := slog.LevelInfo
		if *verbose {
			level = slog.LevelDebug
		}
		return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
	}
}

// indentErrors prints a joined error one problem per indented line.
func indentErrors(err error) error {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return errors.New(strings.Join(lines, "\n"))
}
