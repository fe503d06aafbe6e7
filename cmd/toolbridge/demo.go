package main

import (
	"context"
	"flag"
	"strings"

	"github.com/toolbridge/toolbridge/bridge"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/examples/demo"
)

// runDemo serves the built-in example servers; with --script it runs a
// scripted client session against them instead and prints each step.
func runDemo(ctx context.Context, args []string, io stdio, environ []string) error {
	f := newFlags("demo", io)
	script := f.fs.Bool("script", false, "run a scripted client session against the demo and print each step")
	cfg, err := f.parse(args, environ)
	if err != nil {
		return err
	}
	// The demo is there to show bridge mode; its 58 tools alone stay under
	// the auto threshold, so it bridges unless the user chose a mode.
	if !modeChosen(f, environ) {
		cfg.Mode = config.ModeOn
	}
	specs := demoSpecs(cfg)
	if *script {
		return runScript(ctx, cfg, specs, io, environ)
	}
	return serve(ctx, cfg, specs, f.logger(io.err), io, environ, nil)
}

// modeChosen reports whether the user set the mode by flag or environment
// (a config file given to the demo may set it too).
func modeChosen(f *commonFlags, environ []string) bool {
	chosen := f.config != ""
	f.fs.Visit(func(fl *flag.Flag) { chosen = chosen || fl.Name == "mode" })
	for _, kv := range environ {
		chosen = chosen || strings.HasPrefix(kv, "TOOLBRIDGE_MODE=") || strings.HasPrefix(kv, "TOOLBRIDGE_CONFIG=")
	}
	return chosen
}

// demoSpecs are the in-process example servers, plus any servers the
// config names.
func demoSpecs(cfg *config.Config) []bridge.Spec {
	var specs []bridge.Spec
	for _, s := range demo.Servers() {
		specs = append(specs, bridge.Spec{Name: s.Name, Config: config.Server{Description: s.Description}, InProcess: s.MCP})
	}
	return append(specs, bridge.SpecsFromConfig(cfg)...)
}
