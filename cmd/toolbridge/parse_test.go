package main

import (
	"github.com/spf13/cobra"
)

// parseOnly resolves and parses a command line the way Execute does,
// without running the command: the command, its positional arguments, or
// the error run would report.
func parseOnly(root *cobra.Command, args []string) (*cobra.Command, []string, error) {
	cmd, rest, err := root.Find(args)
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return nil, nil, err
	}
	pos := cmd.Flags().Args()
	if err := cmd.ValidateArgs(pos); err != nil {
		return nil, nil, err
	}
	return cmd, pos, nil
}
