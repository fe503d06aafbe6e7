package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolbridge/toolbridge/bridge"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/toolid"
)

// bridgedSession opens a session with bridge mode forced on, so the
// one-shot commands search, describe and call work through the meta-tools
// exactly as a client's tool_search, tool_describe and tool_call do, with
// the same name resolution and argument validation.
//
// With everyTool set, every tool no tool rule of the config classifies is
// made deferrable, so that describe and call reach core tools too (their
// meta-tools resolve any tool, but exist only while something is
// deferred); search leaves it unset and ranks what a client's tool_search
// would.
func (a *app) bridgedSession(ctx context.Context, f *configFlags, everyTool bool, h bridge.ClientHandlers) (*session, error) {
	cfg, specs, err := f.loadWithServers(a.environ)
	if err != nil {
		return nil, err
	}
	cfg.Mode = config.ModeOn
	if everyTool {
		cfg.Tools = append(cfg.Tools, config.ToolRule{Match: "*", Class: config.ClassDeferrable})
	}
	s, err := openSession(ctx, cfg, specs, a.io.err, a.environ, h)
	if err != nil {
		return nil, err
	}
	cat := s.g.Catalog()
	if len(cat.Tools) == 0 {
		s.Close()
		// Held tools are not in the catalog: without this the answer
		// said "no server offers a tool" while a server offered 14, all
		// quarantined (#24 item 14: quarantine must not be silent).
		if h := cat.Held(); h != nil {
			return nil, fmt.Errorf("no tool can be used: %d held (quarantined) on %s; review them with: %s", h.Tools, strings.Join(h.Servers, ", "), h.Review)
		}
		return nil, errors.New("no configured server offers a tool (see the lines above)")
	}
	if d := cat.Decision; !d.Bridge {
		s.Close()
		if everyTool {
			return nil, fmt.Errorf("no tool is reachable (%s); 'toolbridge tools' shows each server and tool", d.Reason)
		}
		return nil, fmt.Errorf("no tool can be deferred, so there is nothing to search (%s); 'toolbridge tools' shows each tool's class", d.Reason)
	}
	return s, nil
}

// metaCall calls a meta-tool for the command name and prints its text,
// with the advice it gives a model turned into commands a person types; an
// isError result is printed too and turns into the command's error.
func metaCall(ctx context.Context, s *session, io stdio, name, tool string, args map[string]any) error {
	raw, err := json.Marshal(args)
	if err != nil {
		return err
	}
	res, err := s.call(ctx, tool, raw)
	if err != nil {
		return fmt.Errorf("calling %s: %w", tool, err)
	}
	fmt.Fprintln(io.out, forTerminal.Replace(resultText(res)))
	if res.IsError {
		return fmt.Errorf("%s failed (see above)", name)
	}
	return nil
}

// forTerminal rewrites the meta-tools' advice to a model (call tool_search
// with this JSON) into the command a person at a terminal types.
// TestOneShotAdviceIsForTerminals fails if the gateway's wording moves
// from under it.
var forTerminal = strings.NewReplacer(
	`Find tools with tool_search {"query": "<what you want to do>"}.`, `Find tools with: toolbridge search "<what you want to do>"`,
	`Or search with tool_search.`, `Or find tools with: toolbridge search "<what you want to do>"`,
	`Run with tool_call {"tool_name":"<id>","tool_args":{…}};`, `Run one with: toolbridge call <id> '{...}';`,
)

// semanticWait bounds how long search waits for the semantic rerank to
// embed the catalog: a CPU-only model embeds about 100 tool texts a
// second, so a catalog of a few thousand tools fits.
const semanticWait = time.Minute

// searchCmd ranks the deferred tools for a query, as tool_search does.
func (a *app) searchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "search QUERY...",
		Short: "Rank the deferred tools for a query, as tool_search does",
		Long: `Rank the deferred tools for a query, as a client's tool_search does (bridge
mode forced on). The words of QUERY may be given as one argument or
several. 'toolbridge tools' lists every tool instead.`,
		Args: cobra.ArbitraryArgs,
	}
	f := a.configFlags(cmd, noKeyFlags)
	limit := cmd.Flags().Int("limit", 0, "how many tools to show (default search.default_limit)")
	readOnly := cmd.Flags().Bool("read-only", false, "only tools marked read-only (readOnlyHint), as tool_search's read_only")
	noDestructive := cmd.Flags().Bool("exclude-destructive", false, "leave out tools that may be destructive, as tool_search's exclude_destructive")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if *limit < 0 {
			return usageErrorf(cmd, "--limit must not be negative, got %d", *limit)
		}
		if strings.TrimSpace(strings.Join(args, "")) == "" {
			return usageErrorf(cmd, `search needs a QUERY, the words to rank tools for (toolbridge search "create an issue" -c FILE); 'toolbridge tools' lists every tool`)
		}
		s, err := a.bridgedSession(cmd.Context(), f, false, bridge.ClientHandlers{})
		if err != nil {
			return err
		}
		defer s.Close()
		// With search.embeddings, rank as a running gateway does: after
		// the catalog is embedded (or the endpoint failed).
		s.g.WaitSemantic(cmd.Context(), semanticWait)
		if state := s.g.SemanticState(); state != "" {
			fmt.Fprintln(a.io.err, "toolbridge: "+state)
		}
		params := map[string]any{"query": strings.Join(args, " ")}
		if *limit > 0 {
			params["limit"] = *limit
		}
		if *readOnly {
			params["read_only"] = true
		}
		if *noDestructive {
			params["exclude_destructive"] = true
		}
		return metaCall(cmd.Context(), s, a.io, "search", toolid.MetaSearch, params)
	}
	return cmd
}

// describeCmd prints tools' full schemas, as tool_describe does.
func (a *app) describeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "describe TOOL...",
		Short: "Print tools' full schemas, as tool_describe gives them",
		Long: `Print the full schemas of one or more tools, exactly as the servers sent
them (or as OpenAI function definitions with --format openai). A TOOL is
any name tool_call accepts: server::tool, a unique bare name,
server__tool, any case.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf(cmd, "describe takes one or more tool names")
			}
			return nil
		},
	}
	f := a.configFlags(cmd, noKeyFlags)
	format := cmd.Flags().String("format", "mcp", "schema format: mcp or openai")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if *format != "mcp" && *format != "openai" {
			return usageErrorf(cmd, "--format must be mcp or openai, got %q", *format)
		}
		s, err := a.bridgedSession(cmd.Context(), f, true, bridge.ClientHandlers{})
		if err != nil {
			return err
		}
		defer s.Close()
		return metaCall(cmd.Context(), s, a.io, "describe", toolid.MetaDescribe, map[string]any{"tool_names": args, "format": *format})
	}
	return cmd
}

// callCmd calls one tool, by id or any name tool_call accepts, and prints
// its result; an error result makes the exit code 1.
func (a *app) callCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "call TOOL [JSON-ARGS]",
		Short: "Call one tool and print its result",
		Long: `Call one tool with JSON arguments (default {}) and print its result. TOOL
is any name tool_call accepts; the arguments are validated against the
tool's input schema first. An error result makes the exit code 1.

A server may ask for input during the call (elicitation). Nobody is there
to answer it, so call declines unless --elicit defaults tells it to accept
the values the request's schema gives as defaults.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usageErrorf(cmd, "call takes TOOL and optional JSON arguments, got %d arguments", len(args))
			}
			if len(args) == 2 && !json.Valid([]byte(args[1])) {
				return usageErrorf(cmd, "arguments are not valid JSON: %s", args[1])
			}
			return nil
		},
	}
	f := a.configFlags(cmd, noKeyFlags)
	elicit := cmd.Flags().String("elicit", elicitDecline, "how to answer a server that asks for input during the call: decline, or defaults (accept the requested schema's default values)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		e, err := newElicitor(*elicit, a.io.err)
		if err != nil {
			return usageError{cmd: cmd, err: err}
		}
		s, err := a.bridgedSession(cmd.Context(), f, true, bridge.ClientHandlers{Elicitation: e})
		if err != nil {
			return err
		}
		defer s.Close()
		toolArgs := json.RawMessage(`{}`)
		if len(args) == 2 {
			toolArgs = json.RawMessage(args[1])
		}
		return metaCall(cmd.Context(), s, a.io, "call", toolid.MetaCall, map[string]any{"tool_name": args[0], "tool_args": toolArgs})
	}
	return cmd
}

// configCmd groups the config subcommands.
func (a *app) configCmd() *cobra.Command {
	return group("config", "Check the configuration", a.configCheckCmd())
}

// configCheckCmd prints the resolved config with secrets masked, or every
// error found.
func (a *app) configCheckCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check [FILE]",
		Short: "Print the resolved config (secrets masked), or every error with its file and key (and the line of a syntax error)",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErrorf(cmd, "config check takes one FILE, got %q", args)
			}
			return nil
		},
	}
	f := a.configFlags(cmd, allKeyFlags)
	format := cmd.Flags().String("format", "yaml", "output format: yaml or json")
	connect := cmd.Flags().Bool("connect", false, "also start or connect to the servers and check the tools: rules against their tools (a rule that matches no tool, a rename that collides)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 1 {
			if f.path != "" && f.path != args[0] {
				return usageErrorf(cmd, "two config files: -c %s and %s", f.path, args[0])
			}
			f.path = args[0]
		}
		opts := f.options(a.environ)
		cfg, err := config.Load(opts)
		if err != nil {
			if ferr := f.flagErrors(); ferr != nil {
				return usageError{cmd: cmd, err: fmt.Errorf("invalid flag value:\n%w", indentErrors(ferr))}
			}
			return fmt.Errorf("config is not valid:\n%w", indentErrors(err))
		}
		if opts.File() == "" {
			// The output below is then only the defaults, with the
			// environment and flags applied: say so, or it reads as
			// "your config is fine".
			fmt.Fprintf(a.io.err, "toolbridge: no config file loaded (give FILE, -c FILE or $%s); these are the defaults with the environment and flags applied\n", config.EnvConfigPath)
		}
		out, err := cfg.Render(*format)
		if err != nil {
			return err
		}
		if _, err = a.io.out.Write(out); err != nil || !*connect {
			return err
		}
		return a.checkToolRules(cmd.Context(), f)
	}
	return cmd
}

// checkToolRules connects to the servers and reports the tools: rules
// that only the servers' tool lists can judge (see docs/configuration.md,
// "Tool rules and overrides"): the same lines serve logs at start-up.
func (a *app) checkToolRules(ctx context.Context, f *configFlags) error {
	cfg, specs, err := f.loadWithServers(a.environ)
	if err != nil {
		return err
	}
	g, err := bridge.New(cfg, bridge.Options{Environ: a.environ, Progress: a.io.err})
	if err != nil {
		return err
	}
	defer g.Close()
	if err := g.Connect(ctx, specs); err != nil {
		fmt.Fprintln(a.io.err, "toolbridge: checking the tools: rules without the servers that failed (rules on them are not judged)")
	}
	problems := g.Catalog().OverrideProblems
	for _, p := range problems {
		fmt.Fprintln(a.io.err, "toolbridge: config error: "+p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d tools: rules do not fit the servers' tools", len(problems))
	}
	return nil
}
