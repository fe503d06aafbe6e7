package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolbridge/toolbridge/bridge"
	"github.com/toolbridge/toolbridge/bridge/trust"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/toolid"
)

// trustCmd groups the commands that review and change the pinned tool
// definitions.
func (a *app) trustCmd() *cobra.Command {
	return group("trust", "Review, approve and forget pinned tool definitions",
		a.trustListCmd(), a.trustDiffCmd(), a.trustApproveCmd(), a.trustForgetCmd())
}

// trustView is what the servers offer now, next to the pins.
type trustView struct {
	policy     config.Trust
	pins       *trust.Store
	offered    map[string][]trust.Definition // connected servers only
	configured map[string]bool
	failed     int // configured servers that did not connect
}

// unreadable says why server's current definitions cannot be read: it is
// not in the config, or it did not connect.
func (v *trustView) unreadable(server string) error {
	if !v.configured[server] {
		return fmt.Errorf("no server %q in the config", server)
	}
	return fmt.Errorf("server %q is not connected: its current definitions cannot be read", server)
}

// openTrust connects to the configured servers and reads what they offer.
// The gateway runs with trust off, so looking pins nothing: only approve
// and forget change the pins.
func (a *app) openTrust(ctx context.Context, f *configFlags) (*trustView, error) {
	cfg, specs, err := f.loadWithServers(a.environ)
	if err != nil {
		return nil, err
	}
	pins, err := pinStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	policy := cfg.Trust
	cfg.Trust.Mode = config.TrustOff
	g, err := bridge.New(cfg, bridge.Options{Environ: a.environ, Progress: a.io.err})
	if err != nil {
		return nil, err
	}
	defer g.Close()
	if err := g.Connect(ctx, specs); err != nil {
		fmt.Fprintln(a.io.err, "toolbridge: continuing without the servers that failed")
	}
	v := &trustView{policy: policy, pins: pins, offered: g.Catalog().Definitions(), configured: map[string]bool{}}
	for name := range cfg.Servers {
		v.configured[name] = true
		if _, ok := v.offered[name]; !ok {
			v.failed++
		}
	}
	return v, nil
}

// review compares one server's offered tools with its pins under the
// configured policy, without writing anything.
func (v *trustView) review(server string) (trust.Review, error) {
	pins, err := v.pins.Load(server)
	if err != nil {
		return trust.Review{}, err
	}
	policy := v.policy
	if policy.Mode == config.TrustOff {
		policy.Mode = config.TrustPin // list what pinning would say
	}
	return trust.Evaluate(policy, server, pins, v.offered[server], time.Now(), bridge.ApproveCommand(server)), nil
}

// servers are the connected servers and those with pins, sorted.
func (v *trustView) servers() ([]string, error) {
	pinned, err := v.pins.Servers()
	if err != nil {
		return nil, err
	}
	all := slices.Collect(maps.Keys(v.offered))
	for _, s := range pinned {
		if _, ok := v.offered[s]; !ok {
			all = append(all, s)
		}
	}
	slices.Sort(all)
	return all, nil
}

// trustRow is one line of "trust list".
type trustRow struct {
	Server string       `json:"server"`
	Tool   string       `json:"tool"`
	State  string       `json:"state"`
	Status string       `json:"status,omitempty"`
	Detail string       `json:"detail,omitempty"`
	Flags  []trust.Flag `json:"flags,omitempty"`
	Hash   string       `json:"hash,omitempty"`
}

// States only "trust list" shows: a pinned tool its server no longer
// offers, and the pins of a server that did not connect.
const (
	stateGone        = "gone"
	stateUnreachable = "unreachable"
)

func (a *app) trustListCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Every tool against its pinned definition: pinned, changed or new",
		Long: `Connect to every server and compare each tool with its pinned definition:
pinned (unchanged), changed, or new (not pinned yet), with the status the
configured trust policy gives it (quarantined or warning) and the
suspicious-description flags. trust list and trust diff pin nothing; the
commands that use the tools (serve, tools, search, describe, call) pin
what they see first, as a gateway does.`,
		Args: noArgs,
	}
	f := a.configFlags(cmd, noKeyFlags)
	asJSON := cmd.Flags().Bool("json", false, "print JSON instead of a table")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		v, err := a.openTrust(cmd.Context(), f)
		if err != nil {
			return err
		}
		servers, err := v.servers()
		if err != nil {
			return err
		}
		var rows []trustRow
		var errs []error
		for _, server := range servers {
			if _, ok := v.offered[server]; !ok {
				rows = append(rows, trustRow{Server: server, Tool: "*", State: stateUnreachable, Detail: "not connected: its pins are kept"})
				continue
			}
			r, err := v.review(server)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			for _, vd := range r.Verdicts {
				row := trustRow{Server: server, Tool: vd.Name, State: string(vd.State), Flags: vd.Flags, Hash: vd.Hash, Detail: vd.Reason}
				if vd.FirstUse {
					// Evaluate would pin it; nothing is written here.
					row.State, row.Detail = string(trust.StateNew), "not pinned yet: the next run pins it on first use"
				}
				switch {
				case vd.Reason == "":
				case v.policy.Mode == config.TrustOff:
					row.Status = "ignored (trust: off)"
				case vd.Held:
					row.Status = "quarantined"
				default:
					row.Status = "warning"
				}
				if row.Detail == "" && vd.Pin != nil && !vd.FirstUse {
					row.Detail = "pinned " + vd.Pin.PinnedAt.Format(time.DateOnly)
					if vd.Pin.Approved {
						row.Detail += ", approved"
					}
				}
				rows = append(rows, row)
			}
			for _, name := range r.Gone {
				rows = append(rows, trustRow{Server: server, Tool: name, State: stateGone, Detail: "pinned, no longer offered"})
			}
		}
		if *asJSON {
			enc := json.NewEncoder(a.io.out)
			enc.SetIndent("", "  ")
			if rows == nil {
				rows = []trustRow{}
			}
			if err := enc.Encode(rows); err != nil {
				return err
			}
			return errors.Join(errs...)
		}
		tw := tabwriter.NewWriter(a.io.out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "SERVER\tTOOL\tSTATE\tSTATUS\tDETAIL")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Server, r.Tool, r.State, cmp.Or(r.Status, "-"), oneLine(r.Detail))
			for _, fl := range r.Flags {
				fmt.Fprintf(tw, "\t\t\tsuspicious\t%s\n", oneLine(fl.String()))
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(a.io.out, "\npins: %s\n", cmp.Or(v.pins.Dir(), "(memory)"))
		return errors.Join(errs...)
	}
	return cmd
}

// oneLine keeps a table row on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// splitID parses a SERVER::TOOL argument.
func splitID(cmd *cobra.Command, arg string) (string, string, error) {
	server, tool, ok := toolid.Split(toolid.Clean(arg))
	if !ok || server == "" || tool == "" {
		return "", "", usageErrorf(cmd, "%q is not a tool id: want SERVER::TOOL, e.g. github::create_issue", arg)
	}
	return server, tool, nil
}

func (a *app) trustDiffCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "diff [SERVER::TOOL...]",
		Short: "Show how changed tools differ from their pinned definitions",
		Long: `Show, field by field, how each changed tool differs from its pinned
definition (- pinned, + now). With no tool given, every changed tool.`,
		Args: cobra.ArbitraryArgs,
	}
	f := a.configFlags(cmd, noKeyFlags)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		want, err := pickTools(cmd, args)
		if err != nil {
			return err
		}
		v, err := a.openTrust(cmd.Context(), f)
		if err != nil {
			return err
		}
		servers := slices.Sorted(maps.Keys(want))
		if len(args) == 0 {
			servers = slices.Sorted(maps.Keys(v.offered))
		}
		shown := 0
		var errs []error
		for _, server := range servers {
			if _, ok := v.offered[server]; !ok {
				errs = append(errs, v.unreadable(server))
				continue
			}
			r, err := v.review(server)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			byName := map[string]trust.Verdict{}
			for _, vd := range r.Verdicts {
				byName[vd.Name] = vd
			}
			names := want[server]
			if len(args) == 0 {
				for _, vd := range r.Verdicts {
					if vd.State == trust.StateChanged {
						names = append(names, vd.Name)
					}
				}
			}
			for _, name := range names {
				id := toolid.Join(server, name)
				vd, ok := byName[name]
				switch {
				case !ok:
					errs = append(errs, fmt.Errorf("%s is not offered by its server", id))
				case vd.State == trust.StateNew || vd.FirstUse:
					fmt.Fprintf(a.io.out, "%s is new: nothing is pinned to compare with\n", id)
				case vd.State != trust.StateChanged:
					fmt.Fprintf(a.io.out, "%s is unchanged since it was pinned on %s\n", id, vd.Pin.PinnedAt.Format(time.DateOnly))
				default:
					if shown > 0 {
						fmt.Fprintln(a.io.out)
					}
					shown++
					fmt.Fprintf(a.io.out, "%s: %s changed since it was pinned on %s\n  pinned %s\n  now    %s\n",
						id, strings.Join(vd.Changed, ", "), vd.Pin.PinnedAt.Format(time.DateOnly), vd.Pin.Hash, vd.Hash)
					fmt.Fprint(a.io.out, trust.Diff(vd.Pin.Definition, vd.Definition))
					for _, fl := range vd.Flags {
						fmt.Fprintf(a.io.out, "  suspicious: %s\n", oneLine(fl.String()))
					}
				}
			}
		}
		if len(args) == 0 && shown == 0 && len(errs) == 0 {
			if v.failed > 0 {
				fmt.Fprintln(a.io.out, "no pinned tool of the connected servers has changed")
			} else {
				fmt.Fprintln(a.io.out, "no pinned tool has changed")
			}
		}
		if len(args) == 0 && v.failed > 0 {
			// Silence about a server that did not connect is not "unchanged".
			errs = append(errs, fmt.Errorf("%d configured server(s) did not connect, so their tools were not compared", v.failed))
		}
		return errors.Join(errs...)
	}
	return cmd
}

// selection is what approve and forget act on: tools, one server, or all.
type selection struct {
	server string
	all    bool
}

func selectionFlags(cmd *cobra.Command) *selection {
	s := &selection{}
	cmd.Flags().StringVar(&s.server, "server", "", "every tool of server `NAME`")
	cmd.Flags().BoolVar(&s.all, "all", false, "every tool of every server")
	return s
}

// pickTools groups SERVER::TOOL arguments by server.
func pickTools(cmd *cobra.Command, args []string) (map[string][]string, error) {
	picked := map[string][]string{}
	for _, arg := range args {
		server, tool, err := splitID(cmd, arg)
		if err != nil {
			return nil, err
		}
		picked[server] = append(picked[server], tool)
	}
	return picked, nil
}

// pick requires exactly one of tools, --server and --all, and returns
// the tools given, by server.
func (s *selection) pick(cmd *cobra.Command, args []string) (map[string][]string, error) {
	n := 0
	for _, given := range []bool{len(args) > 0, s.server != "", s.all} {
		if given {
			n++
		}
	}
	if n != 1 {
		return nil, usageErrorf(cmd, "give tools (SERVER::TOOL...), --server NAME or --all")
	}
	return pickTools(cmd, args)
}

func (a *app) trustApproveCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "approve SERVER::TOOL... | --server NAME | --all",
		Short: "Pin what the servers offer now, releasing quarantined tools",
		Long: `Pin the definitions the servers offer now, as approved by you: a
quarantined tool is released (a running gateway picks the approval up on the
next call to the tool, or on a reload), and a suspicious one is let through
under trust.block_suspicious. Review first with 'toolbridge trust diff'.`,
		Args: cobra.ArbitraryArgs,
	}
	f := a.configFlags(cmd, noKeyFlags)
	sel := selectionFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		picked, err := sel.pick(cmd, args)
		if err != nil {
			return err
		}
		v, err := a.openTrust(cmd.Context(), f)
		if err != nil {
			return err
		}
		switch {
		case sel.all:
			for server := range v.offered {
				picked[server] = nil
			}
		case sel.server != "":
			picked[sel.server] = nil
		}
		now := time.Now()
		var errs []error
		for _, server := range slices.Sorted(maps.Keys(picked)) {
			offered, ok := v.offered[server]
			if !ok {
				errs = append(errs, fmt.Errorf("%w, so nothing of it is approved", v.unreadable(server)))
				continue
			}
			var defs []trust.Definition
			for _, name := range picked[server] {
				i := slices.IndexFunc(offered, func(d trust.Definition) bool { return d.Name == name })
				if i < 0 {
					errs = append(errs, fmt.Errorf("%s is not offered by its server", toolid.Join(server, name)))
					continue
				}
				defs = append(defs, offered[i])
			}
			if picked[server] == nil {
				defs = offered
			}
			if err := v.pins.Approve(server, defs, now); err != nil {
				errs = append(errs, err)
				continue
			}
			for _, d := range defs {
				fmt.Fprintf(a.io.out, "approved %s (%s)\n", toolid.Join(server, d.Name), d.Hash())
				for _, fl := range trust.Check(d) {
					fmt.Fprintf(a.io.out, "  note: suspicious: %s\n", oneLine(fl.String()))
				}
			}
		}
		return errors.Join(errs...)
	}
	return cmd
}

func (a *app) trustForgetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "forget SERVER::TOOL... | --server NAME | --all",
		Short: "Remove pins; the next run pins those tools on first use again",
		Args:  cobra.ArbitraryArgs,
	}
	f := a.configFlags(cmd, noKeyFlags)
	sel := selectionFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		picked, err := sel.pick(cmd, args)
		if err != nil {
			return err
		}
		cfg, err := f.load(a.environ)
		if err != nil {
			return err
		}
		pins, err := pinStore(cmd.Context(), cfg)
		if err != nil {
			return err
		}
		switch {
		case sel.all:
			servers, err := pins.Servers()
			if err != nil {
				return err
			}
			for _, s := range servers {
				picked[s] = nil
			}
		case sel.server != "":
			picked[sel.server] = nil
		}
		var errs []error
		for _, server := range slices.Sorted(maps.Keys(picked)) {
			removed, err := pins.Forget(server, picked[server]...)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			for _, name := range removed {
				fmt.Fprintf(a.io.out, "forgot %s\n", toolid.Join(server, name))
			}
			for _, name := range picked[server] {
				if !slices.Contains(removed, name) {
					fmt.Fprintf(a.io.out, "%s was not pinned\n", toolid.Join(server, name))
				}
			}
		}
		return errors.Join(errs...)
	}
	return cmd
}
