package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolbridge/toolbridge/bridge"
	"github.com/toolbridge/toolbridge/bridge/state"
	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
)

// serveCmd is the default command: serve the configured upstreams as one
// MCP server.
func (a *app) serveCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the configured servers as one MCP server (the default command)",
		Long: `Serve the configured servers as one MCP server, on stdio (default) or
streamable HTTP (--transport http). SIGHUP reloads the config; --watch
reloads it whenever its file changes.`,
		Args: noArgs,
	}
	f := a.configFlags(cmd, allKeyFlags)
	watch := cmd.Flags().Bool("watch", false, "reload the config whenever its file changes (SIGHUP always reloads it)")
	logger := verboseFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := f.load(a.environ)
		if err != nil {
			return err
		}
		r, stop, err := newReloader(f.options(a.environ), *watch, a.io.err)
		if err != nil {
			return usageError{cmd: cmd, err: err}
		}
		defer stop()
		specs := upstream.SpecsFromConfig(cfg)
		return serve(cmd.Context(), cfg, specs, logger(a.io.err), a.io, a.environ, r)
	}
	return cmd
}

// redisPingEvery is how often serve checks that Redis answers while it
// does (every second while it does not; see state.Store.Watch).
const redisPingEvery = 10 * time.Second

// serve serves clients until ctx ends or, on stdio, the client closes
// stdin, and connects to specs meanwhile: a client is answered at once,
// whatever the upstreams do (see bridge.Gateway.Connect). Upstreams that
// fail to start are reported and left out; the gateway serves the rest.
// r, if not nil, reloads the config once the first connect is done.
func serve(ctx context.Context, cfg *config.Config, specs []upstream.Spec, logger *slog.Logger, io stdio, environ []string, r *reloader) error {
	// Bind first: a port that is taken should fail before children start.
	var ln net.Listener
	if cfg.Serve.Transport == config.ServeHTTP {
		var err error
		if ln, err = net.Listen("tcp", cfg.Serve.Listen); err != nil {
			return fmt.Errorf("listening on %s: %w", cfg.Serve.Listen, err)
		}
	}
	var uiLn net.Listener
	if cfg.UI.Listen != "" {
		var err error
		if uiLn, err = net.Listen("tcp", cfg.UI.Listen); err != nil {
			if ln != nil {
				_ = ln.Close()
			}
			return fmt.Errorf("listening for the status page on %s (ui.listen): %w", cfg.UI.Listen, err)
		}
	}
	var metricsLn net.Listener
	if cfg.Telemetry.Prometheus && cfg.Telemetry.MetricsListen != "" {
		var err error
		if metricsLn, err = net.Listen("tcp", cfg.Telemetry.MetricsListen); err != nil {
			for _, l := range []net.Listener{ln, uiLn} {
				if l != nil {
					_ = l.Close()
				}
			}
			return fmt.Errorf("listening for metrics on %s (telemetry.metrics_listen): %w", cfg.Telemetry.MetricsListen, err)
		}
	}
	var shared *state.Store
	if cfg.Redis.Enabled() {
		// A Redis that does not answer yet is no reason not to start: what
		// needs no shared state is served, and the store recovers by itself.
		var err error
		if shared, err = state.Open(ctx, cfg.Redis, cfg.ShowFullURLs, logger); err != nil {
			for _, l := range []net.Listener{ln, uiLn, metricsLn} {
				if l != nil {
					_ = l.Close()
				}
			}
			return err
		}
		defer shared.Close()
		watchCtx, stopWatching := context.WithCancel(ctx)
		defer stopWatching()
		go shared.Watch(watchCtx, redisPingEvery)
	}
	opts := bridge.Options{Environ: environ, Progress: io.err, StartSummary: true, Logger: logger}
	if shared != nil {
		opts.State, opts.RedisHealth = shared, shared.Ping
	}
	g, err := bridge.New(cfg, opts)
	if err != nil {
		for _, l := range []net.Listener{uiLn, metricsLn} {
			if l != nil {
				_ = l.Close()
			}
		}
		return err
	}
	defer func() {
		if err := g.Close(); err != nil {
			logger.Warn("stopping upstreams", "error", err)
		}
	}()
	if uiLn != nil {
		// The page stops before the gateway closes (defers run last first).
		uiCtx, stopUI := context.WithCancel(ctx)
		uiDone := make(chan struct{})
		go func() {
			defer close(uiDone)
			if err := g.ServeUI(uiCtx, uiLn); err != nil {
				logger.Warn("status page stopped", "error", err)
			}
		}()
		defer func() {
			stopUI()
			<-uiDone
		}()
		fmt.Fprintf(io.err, "toolbridge: status page at http://%s/ui/\n", uiLn.Addr())
	}
	if metricsLn != nil {
		// Like the page: it stops before the gateway closes.
		metricsCtx, stopMetrics := context.WithCancel(ctx)
		metricsDone := make(chan struct{})
		go func() {
			defer close(metricsDone)
			if err := g.ServeMetrics(metricsCtx, metricsLn); err != nil {
				logger.Warn("metrics listener stopped", "error", err)
			}
		}()
		defer func() {
			stopMetrics()
			<-metricsDone
		}()
		fmt.Fprintf(io.err, "toolbridge: metrics at http://%s/metrics\n", metricsLn.Addr())
	}
	// The line comes before connecting starts: Connect writes its own
	// progress to the same stream from another goroutine.
	switch len(specs) {
	case 0:
		// Serving nothing is still useful with --watch or SIGHUP, which
		// may add servers; the line says why the list is empty.
		fmt.Fprintf(io.err, "toolbridge: %s with no servers: none configured (give the config file with -c FILE or $%s; a Claude Desktop config works as is), or try 'toolbridge demo'\n", where(cfg, ln), config.EnvConfigPath)
	case 1:
		fmt.Fprintf(io.err, "toolbridge: %s; connecting 1 server\n", where(cfg, ln))
	default:
		fmt.Fprintf(io.err, "toolbridge: %s; connecting %d servers\n", where(cfg, ln), len(specs))
	}
	// Connecting runs beside serving. It ends before the gateway closes
	// (defers run last first), so no server joins a closed pool.
	connectCtx, stopConnecting := context.WithCancel(ctx)
	connected := make(chan struct{})
	go func() {
		defer close(connected)
		err := g.Connect(connectCtx, specs)
		switch {
		case connectCtx.Err() != nil && len(specs) > 0:
			fmt.Fprintln(io.err, "toolbridge: stopped while connecting")
		case err != nil:
			fmt.Fprintln(io.err, "toolbridge: serving without the servers that failed (see above)")
		}
	}()
	defer func() {
		stopConnecting()
		<-connected
	}()
	if r != nil {
		// Reloads stop before the gateway closes, and wait for the first
		// connect.
		var reloading sync.WaitGroup
		rctx, stopReloading := context.WithCancel(ctx)
		reloading.Go(func() { r.run(rctx, g, connected) })
		defer func() {
			stopReloading()
			reloading.Wait()
		}()
	}
	if ln != nil {
		return g.ServeHTTP(ctx, ln)
	}
	in, restore := pollableStdin(io.in)
	defer restore()
	out, restoreOut := pollableStdout(io.out)
	defer restoreOut()
	return g.ServeStdio(ctx, in, out, io.err)
}

func where(cfg *config.Config, ln net.Listener) string {
	if ln != nil {
		return "serving streamable HTTP at http://" + ln.Addr().String() + "/mcp"
	}
	return "serving on stdio"
}

func version() string { return bridge.Version }
