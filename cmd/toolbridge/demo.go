package main

import (
	"fmt"
	"github.com/spf13/cobra"
	"os"

	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/examples/demo"
)

// demoCmd serves the built-in example servers; with --script it runs a
// scripted client session against them instead and prints each step.
func (a *app) demoCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Serve the built-in example servers (no config needed), or play a scripted session with --script",
		Long: `Serve the built-in example servers to a client, or with --script play a
scripted bridge-mode session against them and check every answer.

The demo bridges unless --mode, TOOLBRIDGE_MODE or the config file's
mode says otherwise; a config file given with -c adds its servers.`,
		Args: noArgs,
	}
	f := a.configFlags(cmd, allKeyFlags)
	// The demo is there to show bridge mode; its 58 tools alone stay under
	// the auto threshold, so bridging is its default, below the file.
	d := config.Default()
	d.Mode = config.ModeOn
	f.defaults = &d
	script := cmd.Flags().Bool("script", false, "run a scripted client session against the demo and print each step")
	logger := verboseFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := f.load(a.environ)
		if err != nil {
			return err
		}
		// The demo pins its own example servers' tools. Kept in the
		// user's state_dir, those pins would hold the tools of a real
		// server that shares a name with one of them (time, notes, ...),
		// as #24 found for two configs that share a server name. So unless
		// state_dir is set to somewhere else, the demo keeps its state in
		// a temporary directory that goes when it ends.
		if cfg.StateDir == config.DefaultStateDir(func(k string) (string, bool) { return config.LookupEnv(a.environ, k) }) {
			dir, err := os.MkdirTemp("", "toolbridge-demo-")
			if err != nil {
				return fmt.Errorf("creating the demo's state directory: %w", err)
			}
			defer os.RemoveAll(dir)
			cfg.StateDir = dir
		}
		specs := demoSpecs(cfg)
		if *script {
			return runScript(cmd.Context(), cfg, specs, a.io, a.environ)
		}
		return serve(cmd.Context(), cfg, specs, logger(a.io.err), a.io, a.environ, nil)
	}
	return cmd
}

// demoSpecs are the in-process example servers, plus any servers the
// config names.
func demoSpecs(cfg *config.Config) []upstream.Spec {
	var specs []upstream.Spec
	for _, s := range demo.Servers() {
		specs = append(specs, upstream.Spec{Name: s.Name, Config: config.Server{Description: s.Description}, InProcess: s.MCP})
	}
	return append(specs, upstream.SpecsFromConfig(cfg)...)
}
