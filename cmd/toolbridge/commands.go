package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolbridge/toolbridge/bridge"
	"github.com/toolbridge/toolbridge/config"
	"github.com/toolbridge/toolbridge/config/toolid"
)

// bridgedSession opens a session with bridge mode forced on, so the
// one-shot commands search, describe and call work through the meta-tools
// exactly as a client's tool_search, tool_describe and tool_call do, with
// the same name resolution and argument validation.
//
// check validates the positional arguments before anything is started.
func bridgedSession(ctx context.Context, name string, args []string, io stdio, environ []string, extra func(*commonFlags), check func(rest []string) error) (*session, []string, error) {
	f := newFlags(name, io)
	if extra != nil {
		extra(f)
	}
	cfg, err := f.parse(args, environ)
	if err != nil {
		return nil, nil, err
	}
	if err := check(f.fs.Args()); err != nil {
		return nil, nil, err
	}
	cfg.Mode = config.ModeOn
	s, err := openSession(ctx, cfg, bridge.SpecsFromConfig(cfg), io.err, environ)
	if err != nil {
		return nil, nil, err
	}
	if d := s.g.Catalog().Decision; !d.Bridge {
		s.Close()
		return nil, nil, fmt.Errorf("no tool can be deferred, so there is nothing to search (%s); 'toolbridge tools' shows each tool's class", d.Reason)
	}
	return s, f.fs.Args(), nil
}

// metaCall calls a meta-tool and prints its text; an isError result is
// printed too and turns into the command's error.
func metaCall(ctx context.Context, s *session, io stdio, tool string, args map[string]any) error {
	raw, err := json.Marshal(args)
	if err != nil {
		return err
	}
	res, err := s.call(ctx, tool, raw)
	if err != nil {
		return fmt.Errorf("calling %s: %w", tool, err)
	}
	fmt.Fprintln(io.out, resultText(res))
	if res.IsError {
		return fmt.Errorf("%s failed", tool)
	}
	return nil
}

// runSearch ranks the catalog's tools for a query, as tool_search does.
func runSearch(ctx context.Context, args []string, io stdio, environ []string) error {
	var limit int
	s, rest, err := bridgedSession(ctx, "search", args, io, environ, func(f *commonFlags) {
		f.fs.IntVar(&limit, "limit", 0, "how many tools to show (default search.default_limit)")
	}, func([]string) error { return nil })
	if err != nil {
		return err
	}
	defer s.Close()
	query := ""
	for i, a := range rest {
		if i > 0 {
			query += " "
		}
		query += a
	}
	params := map[string]any{"query": query}
	if limit > 0 {
		params["limit"] = limit
	}
	return metaCall(ctx, s, io, toolid.MetaSearch, params)
}

// runDescribe prints tools' full schemas, as tool_describe does.
func runDescribe(ctx context.Context, args []string, io stdio, environ []string) error {
	var format string
	s, rest, err := bridgedSession(ctx, "describe", args, io, environ, func(f *commonFlags) {
		f.fs.StringVar(&format, "format", "mcp", "mcp or openai")
	}, func(rest []string) error {
		if len(rest) == 0 {
			return fmt.Errorf("%w: describe takes one or more tool names", errUsage)
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer s.Close()
	return metaCall(ctx, s, io, toolid.MetaDescribe, map[string]any{"tool_names": rest, "format": format})
}

// runCall calls one tool, by id or any name tool_call accepts, and prints
// its result; an error result makes the exit code 1.
func runCall(ctx context.Context, args []string, io stdio, environ []string) error {
	s, rest, err := bridgedSession(ctx, "call", args, io, environ, nil, func(rest []string) error {
		if len(rest) < 1 || len(rest) > 2 {
			return fmt.Errorf("%w: call takes TOOL and optional JSON arguments", errUsage)
		}
		if len(rest) == 2 && !json.Valid([]byte(rest[1])) {
			return fmt.Errorf("%w: arguments are not valid JSON: %s", errUsage, rest[1])
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer s.Close()
	toolArgs := json.RawMessage(`{}`)
	if len(rest) == 2 {
		toolArgs = json.RawMessage(rest[1])
	}
	return metaCall(ctx, s, io, toolid.MetaCall, map[string]any{"tool_name": rest[0], "tool_args": toolArgs})
}

// runConfig handles "config check [FILE]": it prints the resolved config
// with secrets masked, or every error found.
func runConfig(args []string, io stdio, environ []string) error {
	if len(args) == 0 || args[0] != "check" {
		return fmt.Errorf("%w: the config command takes 'check [FILE]'", errUsage)
	}
	f := newFlags("config check", io)
	format := f.fs.String("format", "yaml", "output format: yaml or json")
	if err := f.fs.Parse(args[1:]); err != nil {
		return flagError(err)
	}
	path := f.config
	if rest := f.fs.Args(); len(rest) == 1 {
		path = rest[0]
	} else if len(rest) > 1 {
		return fmt.Errorf("%w: config check takes one FILE", errUsage)
	}
	cfg, err := config.Load(config.LoadOptions{Path: path, Environ: environ, Flags: f.fs})
	if err != nil {
		return fmt.Errorf("config is not valid:\n%w", indentErrors(err))
	}
	out, err := cfg.Render(*format)
	if err != nil {
		return err
	}
	_, err = io.out.Write(out)
	return err
}
