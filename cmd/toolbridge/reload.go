package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/toolbridge/toolbridge/bridge"
	"github.com/toolbridge/toolbridge/bridge/upstream"
	"github.com/toolbridge/toolbridge/config"
)

// reloader applies the config again while the gateway serves: on SIGHUP,
// and with --watch whenever the config file's content changes.
type reloader struct {
	// load reads the config as at start: the same file, environment and
	// flags.
	load func() (*config.Config, error)
	// file is the config file; "" when there is none to watch.
	file string
	// interval is how often file is polled; 0 means only SIGHUP reloads.
	interval time.Duration
	// hup delivers SIGHUP; it is subscribed before the upstreams start,
	// so that a SIGHUP while connecting does not kill the process.
	hup <-chan os.Signal
	out io.Writer
}

// newReloader returns a reloader for the config that opts loads, watching
// its file if watch is set. stop unsubscribes from SIGHUP.
func newReloader(opts config.LoadOptions, watch bool, out io.Writer) (r *reloader, stop func(), err error) {
	r = &reloader{
		load: func() (*config.Config, error) { return config.Load(opts) },
		file: opts.File(),
		out:  out,
	}
	if watch {
		if r.file == "" {
			return nil, nil, fmt.Errorf("--watch needs a config file (-c FILE or $%s)", config.EnvConfigPath)
		}
		r.interval = watchInterval
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	r.hup = hup
	return r, func() { signal.Stop(hup) }, nil
}

// watchInterval is how often --watch looks at the config file. Polling
// rather than inotify: it survives editors that replace the file (rename
// over it), and mounted or symlinked files (Kubernetes ConfigMaps), and
// needs no dependency. Reading one small file a second costs nothing.
const watchInterval = time.Second

// run reloads g on every trigger until ctx ends. It watches from the
// start, but a reload waits until ready is closed (the first connect is
// done: until then the pool does not know every server).
func (r *reloader) run(ctx context.Context, g *bridge.Gateway, ready <-chan struct{}) {
	var tick <-chan time.Time
	var seen []byte
	if r.interval > 0 && r.file != "" {
		t := time.NewTicker(r.interval)
		defer t.Stop()
		tick = t.C
		seen, _ = os.ReadFile(r.file)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.hup:
			fmt.Fprintln(r.out, "toolbridge: SIGHUP: reloading the config")
			if tick != nil {
				// What this reload reads is not a change for --watch to
				// reload again.
				if now, err := os.ReadFile(r.file); err == nil {
					seen = now
				}
			}
		case <-tick:
			now, err := os.ReadFile(r.file)
			// A file that is missing for a moment is an editor replacing
			// it: wait for the new one rather than reload an absent file.
			if err != nil || bytes.Equal(now, seen) {
				continue
			}
			seen = now
			fmt.Fprintf(r.out, "toolbridge: %s changed: reloading the config\n", r.file)
		}
		select {
		case <-ready:
		case <-ctx.Done():
			return
		}
		r.reload(ctx, g)
	}
}

// reload loads the config and applies it, or reports why it was rejected;
// a rejected config leaves the old one serving.
func (r *reloader) reload(ctx context.Context, g *bridge.Gateway) {
	cfg, err := r.load()
	if err != nil {
		r.rejected(fmt.Errorf("loading config:\n%w", indentErrors(err)))
		return
	}
	sum, err := g.Reload(ctx, cfg, upstream.SpecsFromConfig(cfg))
	if err != nil {
		r.rejected(err)
		return
	}
	r.report(sum)
}

func (r *reloader) rejected(err error) {
	fmt.Fprintf(r.out, "toolbridge: reload rejected; still serving the previous config: %v\n", err)
}

// report says what a reload changed, which servers failed and which
// changes wait for a restart.
func (r *reloader) report(sum bridge.ReloadSummary) {
	var parts []string
	for _, c := range []struct {
		what  string
		names []string
	}{{"added", sum.Added}, {"removed", sum.Removed}, {"changed", sum.Changed}} {
		if len(c.names) > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", c.what, strings.Join(c.names, ", ")))
		}
	}
	parts = append(parts, fmt.Sprintf("%d unchanged", len(sum.Kept)))
	fmt.Fprintf(r.out, "toolbridge: config reloaded: %s\n", strings.Join(parts, "; "))
	if sum.Failed != nil {
		fmt.Fprintln(r.out, "toolbridge: serving without the servers that failed (see above); retrying them in the background")
	}
	if len(sum.NeedRestart) > 0 {
		fmt.Fprintf(r.out, "toolbridge: warning: the changes to %s take effect only after a restart\n", strings.Join(sum.NeedRestart, " and "))
	}
}
