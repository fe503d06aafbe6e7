package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/toolbridge/toolbridge/bridge"
)

// toolsCmd connects to every server and prints every tool with its class,
// reason and tokens, the totals, and the activation decision.
func (a *app) toolsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "Every tool with its server, class, tokens, and the activation decision",
		Args:  noArgs,
	}
	f := a.configFlags(cmd, decisionKeyFlags)
	asJSON := cmd.Flags().Bool("json", false, "print JSON instead of a table")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, specs, err := f.loadWithServers(a.environ)
		if err != nil {
			return err
		}
		g, err := bridge.New(cfg, bridge.Options{Environ: a.environ, Progress: a.io.err})
		if err != nil {
			return err
		}
		defer g.Close()
		if err := g.Connect(cmd.Context(), specs); err != nil {
			fmt.Fprintln(a.io.err, "toolbridge: listing without the servers that failed")
		}
		report := g.Report()
		if *asJSON {
			return report.WriteJSON(a.io.out)
		}
		return report.WriteTable(a.io.out)
	}
	return cmd
}
