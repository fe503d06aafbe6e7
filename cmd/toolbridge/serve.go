package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"

	"github.com/toolbridge/toolbridge/bridge"
	"github.com/toolbridge/toolbridge/config"
)

// commonFlags are the flags every gateway-starting command takes.
type commonFlags struct {
	fs      *flag.FlagSet
	config  string
	verbose bool
}

func newFlags(name string, io stdio) *commonFlags {
	c := &commonFlags{fs: flag.NewFlagSet(name, flag.ContinueOnError)}
	c.fs.SetOutput(io.err)
	c.fs.StringVar(&c.config, "config", "", "config file (YAML, JSON or TOML; a Claude Desktop config works as is); default $TOOLBRIDGE_CONFIG")
	c.fs.StringVar(&c.config, "c", "", "shorthand for --config")
	c.fs.BoolVar(&c.verbose, "v", false, "log debug messages to stderr")
	config.BindFlags(c.fs)
	return c
}

// parse parses args and loads the config they point at.
func (c *commonFlags) parse(args []string, environ []string) (*config.Config, error) {
	if err := c.fs.Parse(args); err != nil {
		return nil, flagError(err)
	}
	cfg, err := config.Load(config.LoadOptions{Path: c.config, Environ: environ, Flags: c.fs})
	if err != nil {
		return nil, fmt.Errorf("loading config:\n%w", indentErrors(err))
	}
	return cfg, nil
}

func (c *commonFlags) logger(w io.Writer) *slog.Logger {
	level := slog.LevelInfo
	if c.verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// errFlagsReported marks a command line the flag package rejected: it has
// already printed the problem and the command's flags, so run only sets
// the exit code.
var errFlagsReported = errors.New("bad flags")

func flagError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return fmt.Errorf("%w: %w", errFlagsReported, err)
}

// indentErrors prints a joined error one problem per indented line.
func indentErrors(err error) error {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return errors.New(strings.Join(lines, "\n"))
}

func runServe(ctx context.Context, args []string, io stdio, environ []string) error {
	f := newFlags("serve", io)
	watch := f.fs.Bool("watch", false, "reload the config whenever its file changes (SIGHUP always reloads it)")
	cfg, err := f.parse(args, environ)
	if err != nil {
		return err
	}
	r, stop, err := newReloader(config.LoadOptions{Path: f.config, Environ: environ, Flags: f.fs}, *watch, io.err)
	if err != nil {
		return err
	}
	defer stop()
	specs := bridge.SpecsFromConfig(cfg)
	if len(specs) == 0 {
		fmt.Fprintln(io.err, "toolbridge: warning: no servers configured (give --config FILE, or try 'toolbridge demo')")
	}
	return serve(ctx, cfg, specs, f.logger(io.err), io, environ, r)
}

// serve connects to specs and serves clients until ctx ends or, on stdio,
// the client closes stdin. Upstreams that fail to start are reported and
// left out; the gateway serves the rest. r, if not nil, reloads the config
// meanwhile.
func serve(ctx context.Context, cfg *config.Config, specs []bridge.Spec, logger *slog.Logger, io stdio, environ []string, r *reloader) error {
	// Bind first: a port that is taken should fail before children start.
	var ln net.Listener
	if cfg.Serve.Transport == config.ServeHTTP {
		var err error
		if ln, err = net.Listen("tcp", cfg.Serve.Listen); err != nil {
			return fmt.Errorf("listening on %s: %w", cfg.Serve.Listen, err)
		}
	}
	g, err := bridge.New(cfg, bridge.Options{Environ: environ, Progress: io.err, Logger: logger})
	if err != nil {
		return err
	}
	defer func() {
		if err := g.Close(); err != nil {
			logger.Warn("stopping upstreams", "error", err)
		}
	}()
	err = g.Connect(ctx, specs)
	if ctx.Err() != nil {
		// SIGINT or SIGTERM while connecting: there is nobody to serve.
		if ln != nil {
			_ = ln.Close()
		}
		fmt.Fprintln(io.err, "toolbridge: stopped while connecting")
		return nil
	}
	if err != nil {
		fmt.Fprintf(io.err, "toolbridge: serving without the servers that failed (see above)\n")
	}
	cat := g.Catalog()
	fmt.Fprintf(io.err, "toolbridge: %d servers, %d tools; %s\n", len(cat.Servers), len(cat.Tools), where(cfg, ln))
	if r != nil {
		// Reloads stop before the gateway closes (defers run last first).
		var reloading sync.WaitGroup
		rctx, stopReloading := context.WithCancel(ctx)
		reloading.Go(func() { r.run(rctx, g) })
		defer func() {
			stopReloading()
			reloading.Wait()
		}()
	}
	if ln != nil {
		return g.ServeHTTP(ctx, ln)
	}
	return g.ServeStdio(ctx, io.in, io.out, io.err)
}

func where(cfg *config.Config, ln net.Listener) string {
	if ln != nil {
		return "serving streamable HTTP at http://" + ln.Addr().String() + "/mcp"
	}
	return "serving on stdio"
}

func version() string { return bridge.Version }
