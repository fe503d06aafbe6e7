// Command toolbridge is an MCP gateway for agents that carry many tools.
//
// Usage:
//
//	toolbridge [serve] [--config FILE] [flags]   serve the upstreams as one MCP server (default)
//	toolbridge demo [--script]                   built-in example servers, no config needed
//	toolbridge tools [--config FILE] [--json]    every tool: server, name, class, tokens
//	toolbridge search QUERY                      rank tools as tool_search does
//	toolbridge describe TOOL                     a tool's full schema
//	toolbridge call TOOL [JSON-ARGS]             call one tool and print the result
//	toolbridge config check [FILE]               the resolved config, secrets masked, or the errors
//	toolbridge version
//
// Progress and logs go to stderr; in stdio mode stdout carries only
// JSON-RPC.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr}, os.Environ())
	stop()
	os.Exit(code)
}

// stdio is the process's standard streams, passed in so tests can run
// commands in process.
type stdio struct {
	in  io.Reader
	out io.Writer
	err io.Writer
}

// errUsage marks errors that should be followed by the usage text.
var errUsage = errors.New("usage")

const usage = `toolbridge: an MCP gateway for agents that carry many tools

Usage:
  toolbridge [serve] [--config FILE] [flags]   serve the upstreams as one MCP server (default)
  toolbridge demo [--script] [flags]           built-in example servers, no config needed
  toolbridge tools [--config FILE] [--json]    every tool: server, name, class, tokens
  toolbridge search [--config FILE] QUERY      rank tools as tool_search does
  toolbridge describe [--config FILE] TOOL     a tool's full schema
  toolbridge call [--config FILE] TOOL [JSON]  call one tool and print its result
  toolbridge config check [FILE]               the resolved config (secrets masked), or its errors
  toolbridge version

Run 'toolbridge COMMAND -h' for a command's flags.
`

// run executes one command line and returns the exit code.
func run(ctx context.Context, args []string, io stdio, environ []string) int {
	cmd := "serve"
	if len(args) > 0 && !isFlag(args[0]) {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "serve":
		err = runServe(ctx, args, io, environ)
	case "demo":
		err = runDemo(ctx, args, io, environ)
	case "tools":
		err = runTools(ctx, args, io, environ)
	case "search":
		err = runSearch(ctx, args, io, environ)
	case "describe":
		err = runDescribe(ctx, args, io, environ)
	case "call":
		err = runCall(ctx, args, io, environ)
	case "config":
		err = runConfig(args, io, environ)
	case "version":
		fmt.Fprintln(io.out, "toolbridge", version())
	case "help", "-h", "--help":
		fmt.Fprint(io.out, usage)
	default:
		err = fmt.Errorf("%w: unknown command %q", errUsage, cmd)
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errFlagsReported):
		return 2
	case errors.Is(err, errUsage):
		fmt.Fprintf(io.err, "toolbridge: %v\n\n%s", err, usage)
		return 2
	default:
		fmt.Fprintf(io.err, "toolbridge: %v\n", err)
		return 1
	}
}

func isFlag(s string) bool { return len(s) > 1 && s[0] == '-' }
