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
	// Restarts counts reconnections after the first connect.
	Restarts int `json:"restarts,omitempty"`
	// NextAttempt is when the supervisor tries again, while disconnected.
	NextAttempt time.Time `json:"next_attempt,omitzero"`
}

// Pool holds the connections to every upstream server.
type Pool struct {
	cfg      *config.Config
	environ  []string
	progress io.Writer
	relay    *relay

	life   context.Context
	cancel context.CancelFunc
	// supervisors are the per-server goroutines that reconnect; Close
	// waits for them, so no restart can start a process after it.
	supervisors sync.WaitGroup
	// onChange is called after a server reconnected, so the gateway
	// republishes the catalog.
	onChange func()

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
			u, took, err := p.dial(ctx, spec)
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
		var connected *upstream
		if o.err == nil {
			if old := p.ups[o.spec.Name]; old != nil {
				_ = old.close()
			}
			p.ups[o.spec.Name] = o.u
			connected = o.u
		}
		p.mu.Unlock()
		p.supervise(o.spec, connected)
	}
	return errors.Join(errs...)
}

// dial makes one connection attempt, bounded by the connect timeout. On
// failure the server is stopped and the error says what it left behind.
func (p *Pool) dial(ctx context.Context, spec Spec) (*upstream, time.Duration, error) {
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
		return nil, took, scrubError(u.abort(err), spec.Config)
	}
	u.watch()
	return u, took, nil
}

// supervise keeps one server connected for the pool's lifetime: when its
// connection is lost (or it never came up), it reconnects with exponential
// backoff (restart.initial, doubling up to restart.max). Meanwhile the
// server's tools stay in the catalog and calls to them get an error naming
// the server and the next attempt (see Pool.down). In-process servers cannot
// be lost and are not supervised.
func (p *Pool) supervise(spec Spec, u *upstream) {
	if spec.InProcess != nil {
		return
	}
	initial, maxDelay := max(p.cfg.Restart.Initial, minRestartDelay), max(p.cfg.Restart.Max, minRestartDelay)
	p.supervisors.Go(func() {
		delay := initial
		for {
			if u != nil {
				select {
				case <-u.lostCh:
				case <-p.life.Done():
					return
				}
				u.mu.RLock()
				why := u.lostWhy
				u.mu.RUnlock()
				fmt.Fprintf(p.progress, "toolbridge: ✗ %-20s lost: %s; reconnecting\n", spec.Name, why)
				p.setDown(spec.Name, "lost: "+why, time.Now().Add(delay))
				delay = initial
			}
			// Back off before each attempt: a server that dies at once must
			// not be restarted in a tight loop.
			p.setNext(spec.Name, time.Now().Add(delay))
			select {
			case <-time.After(delay):
			case <-p.life.Done():
				return
			}
			next, took, err := p.dial(p.life, spec)
			if p.life.Err() != nil {
				if next != nil {
					_ = next.close()
				}
				return
			}
			if err != nil {
				delay = min(delay*2, maxDelay)
				p.setDown(spec.Name, err.Error(), time.Now().Add(delay))
				continue
			}
			tools, _, _, _ := next.snapshot()
			p.mu.Lock()
			old := p.ups[spec.Name]
			p.ups[spec.Name] = next
			st := p.statuses[spec.Name]
			st.Connected, st.Tools, st.Took, st.Error, st.NextAttempt = true, len(tools), took, "", time.Time{}
			st.Restarts++
			p.statuses[spec.Name] = st
			p.mu.Unlock()
			if old != nil {
				_ = old.close()
			}
			fmt.Fprintf(p.progress, "toolbridge: ✓ %-20s %-15s %4d tools %6d ms (reconnected)\n",
				spec.Name, spec.Transport(), len(tools), took.Milliseconds())
			if p.onChange != nil {
				p.onChange()
			}
			u = next
		}
	})
}

func (p *Pool) setDown(name, why string, next time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.statuses[name]
	st.Connected, st.Error, st.NextAttempt = false, why, next
	p.statuses[name] = st
}

func (p *Pool) setNext(name string, next time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.statuses[name]
	if !st.Connected {
		st.NextAttempt = next
		p.statuses[name] = st
	}
}

// scrubbedError is an error whose message had the server's secrets masked
// (see config.Server.Scrub); it still unwraps to the original.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// scrubError masks s's secrets (URL tokens, header and env values) in
// err's message: transport errors quote URLs and may echo headers, and
// these messages reach logs, spans and the model.
func scrubError(err error, s config.Server) error {
	if err == nil {
		return nil
	}
	msg := s.Scrub(err.Error())
	if msg == err.Error() {
		return err
	}
	return &scrubbedError{msg: msg, err: err}
}

// minRestartDelay keeps a zero restart setting from becoming a tight loop.
const minRestartDelay = 50 * time.Millisecond

// down reports why a configured server cannot take calls now and when the
// supervisor tries again; why is "" for a server that is up.
func (p *Pool) down(name string) (why string, next time.Time) {
	p.mu.RLock()
	u := p.ups[name]
	st, known := p.statuses[name]
	p.mu.RUnlock()
	if u != nil {
		select {
		case <-u.lostCh:
		default:
			if !known || st.Connected {
				return "", time.Time{}
			}
		}
	}
	if st.Error != "" {
		return st.Error, st.NextAttempt
	}
	return "not connected", st.NextAttempt
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
	p.supervisors.Wait()
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
