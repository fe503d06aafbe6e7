package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/toolbridge/toolbridge/bridge"
)

// runTools connects to every server and prints a table of every tool.
func runTools(ctx context.Context, args []string, io stdio, environ []string) error {
	f := newFlags("tools", io)
	asJSON := f.fs.Bool("json", false, "print JSON instead of a table")
	cfg, err := f.parse(args, environ)
	if err != nil {
		return err
	}
	g := bridge.New(cfg, bridge.Options{Environ: environ, Progress: io.err})
	defer g.Close()
	if err := g.Connect(ctx, bridge.SpecsFromConfig(cfg)); err != nil {
		fmt.Fprintln(io.err, "toolbridge: listing without the servers that failed")
	}
	cat := g.Catalog()
	if *asJSON {
		type row struct {
			ID      string `json:"id"`
			Server  string `json:"server"`
			Name    string `json:"name"`
			Exposed string `json:"exposed"`
		}
		rows := make([]row, 0, len(cat.Tools))
		for _, t := range cat.Tools {
			rows = append(rows, row{t.ID, t.Server, t.Name, t.Exposed})
		}
		enc := json.NewEncoder(io.out)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"tools": rows})
	}
	tw := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tNAME\tEXPOSED AS")
	for _, t := range cat.Tools {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Server, t.Name, t.Exposed)
	}
	fmt.Fprintf(tw, "\n%d tools on %d servers\n", len(cat.Tools), len(cat.Servers))
	return tw.Flush()
}

func runSearch(ctx context.Context, args []string, io stdio, environ []string) error {
	return fmt.Errorf("%w: search needs bridge mode, which is not built yet", errUsage)
}

func runDescribe(ctx context.Context, args []string, io stdio, environ []string) error {
	return fmt.Errorf("%w: describe needs bridge mode, which is not built yet", errUsage)
}
