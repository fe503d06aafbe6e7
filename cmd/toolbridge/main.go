// Command toolbridge is an MCP gateway for agents that carry many tools.
//
// Usage:
//
//	toolbridge [serve] [-c FILE] [flags]   serve the upstreams as one MCP server (default)
//	toolbridge demo [--script]             built-in example servers, no config needed
//	toolbridge tools [-c FILE] [--json]    every tool: server, name, class, tokens
//	toolbridge search QUERY [-c FILE]      rank the deferred tools as tool_search does
//	toolbridge describe TOOL... [-c FILE]  tools' full schemas, as tool_describe gives them
//	toolbridge call TOOL [JSON] [-c FILE]  call one tool and print its result
//	toolbridge config check [FILE]         the resolved config, secrets masked, or the errors
//	toolbridge auth login|status|logout    OAuth logins of remote servers
//	toolbridge version
//
// Progress and logs go to stderr; in stdio mode stdout carries only
// JSON-RPC.
//
// # The command line
//
// The commands are built with github.com/spf13/cobra (and its pflag). It
// was chosen over the standard flag package because users expect what it
// does and flag does not: flags after positional arguments
// ("toolbridge search 'list tags' -c servers.json"), -h on every command
// listing only that command's flags, nested commands ("config check", and
// later "auth login" or "trust approve") with did-you-mean for a mistyped
// one, and shell completion. It is the library kubectl, gh and docker
// use, maintained, with one small dependency (pflag); hand-written flag
// handling would have to grow all of that again.
//
// The config package stays on the standard flag.FlagSet (config.BindFlags,
// LoadOptions.Flags), so it does not depend on the CLI library; flags.go
// bridges the two.
//
// # Adding a command
//
// A command is a method of app that returns a *cobra.Command, in a file
// of its own, added to the list in (*app).root. A command that loads the
// config calls a.configFlags(cmd, ...) for --config and the config-key
// flags it honours, and returns usageErrorf for a wrong command line (exit
// code 2). A command with subcommands (config, later auth and trust) is
// made with group, which refuses a missing or unknown subcommand.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/toolbridge/toolbridge/bridge"
	"github.com/toolbridge/toolbridge/config"
)

func main() {
	stderr := &redactingWriter{w: os.Stderr}
	// Libraries that log on their own use slog's default logger (mcp-go's
	// transports log a failed request with its URL): it writes to stderr
	// through the same masking as everything else.
	slog.SetDefault(slog.New(slog.NewTextHandler(stderr, nil)))
	ctx, stop := signalContext(context.Background())
	code := run(ctx, os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, err: stderr}, os.Environ())
	stop()
	os.Exit(code)
}

// signalContext ends at the first SIGINT or SIGTERM. SIGTERM is how a
// supervisor stops a replica (Kubernetes, systemd, a rolling deploy): its
// cause is bridge.ErrTerminated, which lets an HTTP gateway drain from its
// load balancer first (serve.drain_delay). SIGINT is a person at a
// terminal pressing Ctrl-C, who should not wait for a balancer.
func signalContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	// Later signals stay caught (and ignored), as with signal.NotifyContext:
	// a second Ctrl-C does not kill the process before its children stop.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			if sig == syscall.SIGTERM {
				cancel(fmt.Errorf("received SIGTERM: %w", bridge.ErrTerminated))
				return
			}
			cancel(fmt.Errorf("received %v: %w", sig, context.Canceled))
		case <-done:
		}
	}()
	return ctx, func() {
		close(done)
		signal.Stop(sigs)
		cancel(nil)
	}
}

// stdio is the process's standard streams, passed in so tests can run
// commands in process.
type stdio struct {
	in  io.Reader
	out io.Writer
	err io.Writer
}

// app is what every command shares: the process's streams and its
// environment (commands read no other).
type app struct {
	io      stdio
	environ []string
}

// redactingWriter shows every URL written through it as config.ShowURL
// does: by default scheme://host:port with the path and query values
// masked, so that whatever reaches stderr, from toolbridge or from a
// library, never shows an upstream's api_key, user:password or a secret in
// its path; with show_full_urls, with only the credentials masked. Writers
// to it write whole lines, so a URL is never split across two writes.
type redactingWriter struct {
	w io.Writer
	// full is the loaded config's show_full_urls.
	full atomic.Bool
}

func (r *redactingWriter) Write(p []byte) (int, error) {
	masked := config.ShowURLs(string(p), r.full.Load())
	if _, err := io.WriteString(r.w, masked); err != nil {
		return 0, err
	}
	return len(p), nil
}

// configLoaded adapts the process's output to a config just loaded.
func (a *app) configLoaded(cfg *config.Config) {
	if r, ok := a.io.err.(*redactingWriter); ok {
		r.full.Store(cfg.ShowFullURLs)
	}
}

// unredactedErr is stderr without URL masking, for the one line that
// must show a URL whole: the login URL the user opens. It holds no
// secret (client_id, state and the PKCE challenge are public by design).
func (a *app) unredactedErr() io.Writer {
	if r, ok := a.io.err.(*redactingWriter); ok {
		return r.w
	}
	return a.io.err
}

// root builds the command tree. Every call builds a fresh one, so flags
// parsed by one run never leak into the next (tests run many in process).
func (a *app) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "toolbridge",
		Short: "An MCP gateway for agents that carry many tools",
		Long: `toolbridge connects to any number of MCP servers and serves them as one.
When their tool schemas would eat too much of the model's context, it
switches to bridge mode: the client sees the core tools plus tool_search,
tool_describe and tool_call, and loads the rest on demand.

With no command, toolbridge serves (toolbridge [serve] -c FILE).`,
		SilenceErrors: true,
		SilenceUsage:  true,
		// toolbridge --version, as people try first; the same line as
		// toolbridge version.
		Version: version(),
	}
	root.SetVersionTemplate("toolbridge {{.Version}}\n")
	root.SetIn(a.io.in)
	root.SetOut(a.io.out)
	root.SetErr(a.io.err)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageError{cmd: cmd, err: err}
	})
	root.AddCommand(
		a.serveCmd(),
		a.demoCmd(),
		a.toolsCmd(),
		a.searchCmd(),
		a.describeCmd(),
		a.callCmd(),
		a.trustCmd(),
		a.configCmd(),
		a.authCmd(),
		a.versionCmd(),
	)
	// Execute adds these itself, but run looks commands up before it.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	return root
}

// run executes one command line and returns the exit code: 0, 1 when the
// command failed, 2 when the command line is wrong.
func run(ctx context.Context, args []string, io stdio, environ []string) int {
	a := &app{io: io, environ: environ}
	root := a.root()
	args = defaultCommand(args)
	// Find fails only on an unknown command; it is a usage error, which
	// cobra's own message does not let us tell apart.
	cmd, _, err := root.Find(args)
	if err != nil {
		err = usageError{cmd: cmd, err: err}
	} else {
		root.SetArgs(args)
		err = root.ExecuteContext(ctx)
	}
	return exitCode(err, io.err)
}

// defaultCommand makes serve the command when none is given: no arguments,
// or flags first (toolbridge --config FILE). -h, --help and --version stay
// with the root, which lists the commands or prints the version.
func defaultCommand(args []string) []string {
	if len(args) == 0 {
		return []string{"serve"}
	}
	first := args[0]
	if len(first) > 1 && first[0] == '-' && first != "-h" && first != "--help" && first != "--version" {
		return append([]string{"serve"}, args...)
	}
	return args
}

// exitCode reports err on w and maps it to the process's exit code.
func exitCode(err error, w io.Writer) int {
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(w, "toolbridge: %v\n", ue.err)
		if ue.cmd != nil {
			fmt.Fprintf(w, "Run '%s --help' for usage.\n", ue.cmd.CommandPath())
		}
		return 2
	default:
		fmt.Fprintf(w, "toolbridge: %v\n", err)
		return 1
	}
}

// usageError is a wrong command line: it exits 2 and points at the
// command's help.
type usageError struct {
	cmd *cobra.Command
	err error
}

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// commandName is cmd as the user typed it after "toolbridge" ("auth
// login"): usage errors already start with "toolbridge: ".
func commandName(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// usageErrorf returns a usageError for cmd.
func usageErrorf(cmd *cobra.Command, format string, args ...any) error {
	return usageError{cmd: cmd, err: fmt.Errorf(format, args...)}
}

// group returns a command that only holds subcommands: without one, or
// with one it does not know, it is a usage error (with a did-you-mean)
// rather than cobra's help text and exit code 0.
func group(use, short string, subs ...*cobra.Command) *cobra.Command {
	g := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ArbitraryArgs,
		// cobra's own default for its suggestions.
		SuggestionsMinimumDistance: 2,
		RunE: func(cmd *cobra.Command, args []string) error {
			var names []string
			for _, c := range cmd.Commands() {
				if c.IsAvailableCommand() {
					names = append(names, c.Name())
				}
			}
			if len(args) == 0 {
				return usageErrorf(cmd, "%s needs a subcommand: %s", cmd.Name(), strings.Join(names, ", "))
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += fmt.Sprintf("; did you mean %q?", s[0])
			}
			return usageErrorf(cmd, "%s (it takes %s)", msg, strings.Join(names, ", "))
		},
	}
	g.AddCommand(subs...)
	return g
}

// versionCmd prints the version.
func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(a.io.out, "toolbridge", version())
			return err
		},
	}
}

// noArgs refuses positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf(cmd, "%s takes no arguments, got %q", commandName(cmd), args)
	}
	return nil
}
