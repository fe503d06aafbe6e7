package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolbridge/toolbridge/bridge"
	"github.com/toolbridge/toolbridge/config"
)

// runCall calls one tool and prints its result; the exit code is 1 when
// the result is an error.
func runCall(ctx context.Context, args []string, io stdio, environ []string) error {
	f := newFlags("call", io)
	cfg, err := f.parse(args, environ)
	if err != nil {
		return err
	}
	rest := f.fs.Args()
	if len(rest) < 1 || len(rest) > 2 {
		return fmt.Errorf("%w: call takes TOOL and optional JSON arguments", errUsage)
	}
	var raw json.RawMessage
	if len(rest) == 2 {
		raw = json.RawMessage(rest[1])
		if !json.Valid(raw) {
			return fmt.Errorf("arguments are not valid JSON: %s", rest[1])
		}
	}
	s, err := openSession(ctx, cfg, bridge.SpecsFromConfig(cfg), io.err, environ)
	if err != nil {
		return err
	}
	defer s.Close()
	res, err := s.call(ctx, rest[0], raw)
	if err != nil {
		return fmt.Errorf("calling %s: %w", rest[0], err)
	}
	fmt.Fprintln(io.out, resultText(res))
	if res.IsError {
		return fmt.Errorf("%s returned an error", rest[0])
	}
	return nil
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
		return err
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
