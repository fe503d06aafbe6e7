package main

import (
	"context"
	"fmt"

	"github.com/toolbridge/toolbridge/bridge"
)

// runTools connects to every server and prints every tool with its class,
// reason and tokens, the totals, and the activation decision.
func runTools(ctx context.Context, args []string, io stdio, environ []string) error {
	f := newFlags("tools", io)
	asJSON := f.fs.Bool("json", false, "print JSON instead of a table")
	cfg, err := f.parse(args, environ)
	if err != nil {
		return err
	}
	g, err := bridge.New(cfg, bridge.Options{Environ: environ, Progress: io.err})
	if err != nil {
		return err
	}
	defer g.Close()
	if err := g.Connect(ctx, bridge.SpecsFromConfig(cfg)); err != nil {
		fmt.Fprintln(io.err, "toolbridge: listing without the servers that failed")
	}
	report := g.Report()
	if *asJSON {
		return report.WriteJSON(io.out)
	}
	return report.WriteTable(io.out)
}
