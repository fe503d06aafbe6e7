package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/toolbridge/toolbridge/config"
)

// ServerStatus is what the pool knows of one configured server.
type ServerStatus struct {
	Name      string        `json:"name"`
	Transport string        `json:"transport"`
	Connected bool          `json:"connected"`
	Tools     int           `json:"tools"`
	Took      time.Duration `json:"took_ns"`
	Error     string        `json:"error,omitempty"`
}

// Pool holds the connections to every upstream server.
type Pool struct {
	cfg      *config.Config
	environ  []string
	progress io.Writer
	relay    *relay

	life   context.Context
	cancel context.CancelFunc

	mu       sync.RWMutex
	ups      map[string]*upstream
	statuses map[string]ServerStatus
}

// PoolOptions configure a Pool.
type PoolOptions struct {
	// Environ is the environment stdio servers inherit (os.Environ() in the
	// CLI), before each server's own env entries.
	Environ []string
	// Progress receives one line per server as it comes up or fails; nil
	// discards them. In stdio mode this must be stderr, never stdout.
	Progress io.Writer
}

func newPool(cfg *config.Config, opts PoolOptions, r *relay) *Pool {
	life, cancel := context.WithCancel(context.Background())
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	return &Pool{
		cfg: cfg, environ: opts.Environ, progress: opts.Progress, relay: r,
		life: life, cancel: cancel,
		ups: map[string]*upstream{}, statuses: map[string]ServerStatus{},
	}
}

// Connect connects to every spec in parallel, each bounded by its connect
// timeout, and prints one line per server as it comes up or fails. A server
// that fails does not stop the others: Connect returns once every server has
// connected or failed, and the error lists the ones that failed.
func (p *Pool) Connect(ctx context.Context, specs []Spec) error {
	type outcome struct {
		spec Spec
		u    *upstream
		took time.Duration
		err  error
	}
	results := make(chan outcome, len(specs))
	for _, spec := range specs {
		go func() {
			start := time.Now()
			u := newUpstream(spec, p.environ, p.relay)
			u.maxLine = p.cfg.MaxResultBytes
			timeout := p.cfg.EffectiveConnectTimeout(spec.Config)
			cctx, cancel := context.WithTimeout(ctx, timeout)
			err := u.connect(cctx, p.life)
			cancel()
			// The time to the failure, not to the cleanup after it.
			took := time.Since(start)
			if err != nil {
				if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
					err = fmt.Errorf("%w (connect timeout %s)", err, timeout)
				}
				err = u.abort(err)
			}
			results <- outcome{spec, u, took, err}
		}()
	}
	var errs []error
	for range specs {
		o := <-results
		status := ServerStatus{Name: o.spec.Name, Transport: o.spec.Transport(), Took: o.took}
		if o.err != nil {
			status.Error = o.err.Error()
			errs = append(errs, fmt.Errorf("connecting to %s: %w", o.spec.Name, o.err))
			fmt.Fprintf(p.progress, "toolbridge: ✗ %-20s %-15s failed after %d ms: %v\n",
				o.spec.Name, status.Transport, o.took.Milliseconds(), o.err)
		} else {
			tools, _, _, _ := o.u.snapshot()
			status.Connected, status.Tools = true, len(tools)
			fmt.Fprintf(p.progress, "toolbridge: ✓ %-20s %-15s %4d tools %6d ms\n",
				o.spec.Name, status.Transport, len(tools), o.took.Milliseconds())
		}
		p.mu.Lock()
		p.statuses[o.spec.Name] = status
		if o.err == nil {
			if old := p.ups[o.spec.Name]; old != nil {
				_ = old.close()
			}
			p.ups[o.spec.Name] = o.u
		}
		p.mu.Unlock()
	}
	return errors.Join(errs...)
}

// Statuses returns every configured server's status, sorted by name. A
// stdio server whose process has ended since it connected shows as not
// connected, with how it ended.
func (p *Pool) Statuses() []ServerStatus {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]ServerStatus, 0, len(p.statuses))
	for _, s := range p.statuses {
		if u := p.ups[s.Name]; s.Connected && u != nil {
			if why := u.lost(); why != "" {
				s.Connected, s.Error = false, "lost: "+why
			}
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// connected returns the connected upstreams sorted by name.
func (p *Pool) connected() []*upstream {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]*upstream, 0, len(p.ups))
	for _, u := range p.ups {
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].spec.Name < out[j].spec.Name })
	return out
}

func (p *Pool) get(name string) (*upstream, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	u, ok := p.ups[name]
	return u, ok
}

// Close disconnects every upstream and stops every child process.
func (p *Pool) Close() error {
	p.cancel()
	p.mu.Lock()
	ups := p.ups
	p.ups = map[string]*upstream{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	errs := make(chan error, len(ups))
	for name, u := range ups {
		wg.Go(func() {
			if err := u.close(); err != nil {
				errs <- fmt.Errorf("closing %s: %w", name, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// SpecsFromConfig returns a Spec for every enabled server, sorted by name.
func SpecsFromConfig(cfg *config.Config) []Spec {
	specs := make([]Spec, 0, len(cfg.Servers))
	for name, s := range cfg.Servers {
		if s.Disabled {
			continue
		}
		specs = append(specs, Spec{Name: name, Config: s})
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].Name < specs[j].Name })
	return specs
}
